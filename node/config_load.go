package node

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/idlegrid/idlegrid/node/words"
)

// Reading config.toml: parse errors located in the file.

// ConfigError is a configuration problem, located in the file when it
// came from one.
type ConfigError struct {
	File string
	Line int // 0 when unknown or not from the file
	Key  string
	Msg  string
}

func (e *ConfigError) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		if e.Line > 0 {
			fmt.Fprintf(&b, ":%d", e.Line)
		}
		b.WriteString(": ")
	}
	if e.Key != "" {
		fmt.Fprintf(&b, "%s: ", e.Key)
	}
	b.WriteString(e.Msg)
	return b.String()
}

// LoadConfig reads home/config.toml. Unknown keys, type errors and invalid
// values are errors that carry the line number.
func LoadConfig(home string) (Config, error) {
	path := ConfigPath(home)
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return Config{}, &noHomeError{home: home}
	}
	if err != nil {
		return Config{}, fmt.Errorf("read config: %w", err)
	}
	cfg, err := ParseConfig(path, data)
	if err != nil {
		return Config{}, err
	}
	cfg.Home = home
	return cfg, nil
}

// ParseConfig parses config file contents; name is used in errors.
func ParseConfig(name string, data []byte) (Config, error) {
	// Start from the defaults of the role the file names, so a file that
	// omits a key gets the role's default rather than a zero value.
	var probe struct {
		Role Role `toml:"role"`
	}
	if _, err := toml.Decode(string(data), &probe); err != nil {
		return Config{}, tomlError(name, err)
	}
	if probe.Role == "" {
		return Config{}, &ConfigError{File: name, Key: "role", Msg: fmt.Sprintf("missing; want %s", words.OneOf(Roles))}
	}
	cfg := DefaultConfig(probe.Role)
	md, err := toml.Decode(string(data), &cfg)
	if err != nil {
		return Config{}, tomlError(name, err)
	}
	if und := md.Undecoded(); len(und) > 0 {
		key := und[0].String()
		return Config{}, &ConfigError{File: name, Line: lineOfKey(data, key), Key: key, Msg: "unknown key" + suggestKey(key)}
	}
	if err := cfg.Validate(); err != nil {
		var ce *ConfigError
		if errors.As(err, &ce) {
			ce.File = name
			ce.Line = lineOfKey(data, ce.Key)
		}
		return Config{}, err
	}
	return cfg, nil
}

var tomlTypeErr = regexp.MustCompile(`^toml: line (\d+) \(last key "([^"]*)"\): (.*)$`)

func tomlError(name string, err error) error {
	var pe toml.ParseError
	if errors.As(err, &pe) {
		return &ConfigError{File: name, Line: pe.Position.Line, Key: pe.LastKey, Msg: pe.Message}
	}
	// Type mismatches come back as plain errors of the form
	// `toml: line N (last key "k"): msg`.
	if m := tomlTypeErr.FindStringSubmatch(err.Error()); m != nil {
		line, _ := strconv.Atoi(m[1])
		return &ConfigError{File: name, Line: line, Key: m[2], Msg: m[3]}
	}
	return &ConfigError{File: name, Msg: err.Error()}
}

// lineOfKey finds the line where a dotted key ("p2p.conn_low") is set.
func lineOfKey(data []byte, key string) int {
	section, name := "", key
	if i := strings.LastIndexByte(key, '.'); i >= 0 {
		section, name = key[:i], key[i+1:]
	}
	cur := ""
	for i, line := range strings.Split(string(data), "\n") {
		t := strings.TrimSpace(line)
		if strings.HasPrefix(t, "[") && strings.HasSuffix(t, "]") {
			cur = strings.Trim(t, "[] ")
			continue
		}
		k, _, ok := strings.Cut(t, "=")
		if ok && cur == section && strings.TrimSpace(k) == name {
			return i + 1
		}
	}
	return 0
}
