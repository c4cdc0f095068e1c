package cli

import (
	"regexp"
	"strings"

	"github.com/spf13/pflag"
)

// specProblem is one problem of the daemon's "invalid job spec: ..." list:
// an optional YAML line, the field (with an index), the message.
var specProblem = regexp.MustCompile(`^(?:line \d+: )?([a-z_]+)(\[\d+\])?: `)

var linePrefix = regexp.MustCompile(`^line \d+: `)

// lineOf returns p's "line N: " prefix, or "".
func lineOf(p string) string { return linePrefix.FindString(p) }

// inFlagTerms rewrites the daemon's job spec problems for a spec the CLI
// built from flags: the YAML it sent is not a file the user wrote, so its
// line numbers mean nothing to them, and a field set by a flag is named by
// that flag (--max-price, not max_price). Fields from the user's own file
// keep their names. Other messages pass unchanged.
func inFlagTerms(msg string, fs *pflag.FlagSet, file string) string {
	head, rest, ok := strings.Cut(msg, "invalid job spec: ")
	if !ok {
		return msg
	}
	parts := strings.Split(rest, "; ")
	for i, p := range parts {
		m := specProblem.FindStringSubmatchIndex(p)
		if m == nil {
			// Not about one field (an unknown field, say): the line is
			// still the CLI's YAML's, and the problem the file's.
			if rest, ok := strings.CutPrefix(p, lineOf(p)); ok && rest != p {
				parts[i] = rest
				if file != "" {
					parts[i] += " (in " + file + ")"
				}
			}
			continue
		}
		field, index, text := p[m[2]:m[3]], "", p[m[1]:]
		if m[4] >= 0 {
			index = p[m[4]:m[5]]
		}
		name := field + index
		switch flag := flagFor(field, fs, file); {
		case flag != "":
			name = flag + index
		case file != "":
			name = field + index + " (in " + file + ")"
		}
		parts[i] = name + ": " + text
	}
	return head + "invalid job spec: " + strings.Join(parts, "; ")
}

// flagFor names the flag that sets field: the one the user set, or with no
// file (every field came from flags or is missing) the one that would.
func flagFor(field string, fs *pflag.FlagSet, file string) string {
	switch field {
	case "command":
		if file == "" || fs.NArg() > 0 {
			return "the command after --"
		}
	case "env":
		if file == "" || fs.Changed("env") {
			return "--env"
		}
	}
	for _, sf := range specFlags {
		if sf.field == field && (file == "" || fs.Changed(sf.flag)) {
			return "--" + sf.flag
		}
	}
	return ""
}
