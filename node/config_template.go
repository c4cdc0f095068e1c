package node

import (
	"bytes"
	_ "embed"
	"fmt"
	"strconv"
	"strings"
	"text/template"
	"time"
)

// Encode renders the config as a commented TOML file with every value
// written out.
func (c *Config) Encode() ([]byte, error) {
	var buf bytes.Buffer
	if err := configTemplate.Execute(&buf, c); err != nil {
		return nil, fmt.Errorf("render config: %w", err)
	}
	return buf.Bytes(), nil
}

// configTemplateText is config.toml as `idlegrid init` writes it: every
// key with its default and a comment saying what it does.
//
//go:embed config.toml.tmpl
var configTemplateText string

var configTemplate = template.Must(template.New("config").Funcs(template.FuncMap{
	"list": func(xs []string) string {
		q := make([]string, len(xs))
		for i, x := range xs {
			q[i] = strconv.Quote(x)
		}
		return "[" + strings.Join(q, ", ") + "]"
	},
	"q":   strconv.Quote,
	"dur": func(d time.Duration) string { return strconv.Quote(d.String()) },
	// Floats always carry a decimal point, so TOML reads them back as floats.
	"f": func(x float64) string {
		s := strconv.FormatFloat(x, 'f', -1, 64)
		if !strings.ContainsAny(s, ".eE") {
			s += ".0"
		}
		return s
	},
}).Parse(configTemplateText))
