package ui

import (
	"bytes"
	"fmt"
	"html/template"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/node/words"
)

// pageNames are the templates that are whole pages; each is parsed with
// the layout and the shared partials.
var pageNames = []string{"login", "error", "notice", "overview", "market", "jobs", "job", "provider", "trust"}

var funcs = template.FuncMap{
	"usd":   func(v float64) string { return fmt.Sprintf("$%.2f", v) },
	"money": usdAmount,
	"pct":   func(v float64) string { return fmt.Sprintf("%.0f%%", v*100) },
	"num":   func(v float64) string { return fmt.Sprintf("%.2f", v) },
	"short": lease.Short, // the full ID is in the title attribute
	"join":  strings.Join,
	"when":  formatTime,
	"uptime": func(sec float64) string {
		return words.Duration((time.Duration(sec) * time.Second).Round(time.Second))
	},
	"reason": shortCIDs,
	"mib":    func(v uint64) string { return fmt.Sprintf("%d GiB", v/1024) },
	"f1":     func(v float64) string { return fmt.Sprintf("%.1f", v) },
	"add":    func(a, b float64) float64 { return a + b },
	"list":   func(s ...string) []string { return s },
	"has":    func(xs []string, x string) bool { return slices.Contains(xs, x) },
}

func parsePages() (map[string]*template.Template, error) {
	pages := map[string]*template.Template{}
	for _, name := range pageNames {
		t, err := template.New(name).Funcs(funcs).ParseFS(templateFS,
			"templates/layout.html", "templates/partials.html", "templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("parse %s: %w", name, err)
		}
		pages[name] = t
	}
	return pages, nil
}

// render writes a page. data gets the session's CSRF token and the page's
// name (for the navigation); it is rendered to a buffer first so a
// template error does not leave half a page.
func (u *UI) render(w http.ResponseWriter, status int, name string, s *session, data map[string]any) {
	data["Page"] = name
	if s != nil {
		data["CSRF"] = s.CSRF()
		data["SignedIn"] = true
		data["Nav"] = navFor(u.role())
	}
	var buf bytes.Buffer
	if err := u.pages[name].ExecuteTemplate(&buf, "layout", data); err != nil {
		u.log.Error("ui template failed", "page", name, "err", err)
		http.Error(w, "the page could not be rendered", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = buf.WriteTo(w)
}

// navItem is one link of the navigation.
type navItem struct {
	Href, Label string
	// Pages are the pages it is current on.
	Pages []string
}

// navFor is the pages a role has: a renter has Jobs and no Provider page,
// a provider the opposite, a bootstrap peer neither.
func navFor(role string) []navItem {
	items := []navItem{{"/ui/", "Overview", []string{"overview"}}, {"/ui/market", "Market", []string{"market"}}}
	switch role {
	case "renter":
		items = append(items, navItem{"/ui/jobs", "Jobs", []string{"jobs", "job"}})
	case "provider":
		items = append(items, navItem{"/ui/provider", "Provider", []string{"provider"}})
	}
	return append(items, navItem{"/ui/trust", "Trust", []string{"trust"}})
}

// cidPattern matches a CIDv1 in text (job reasons carry output CIDs).
var cidPattern = regexp.MustCompile(`\bbaf[a-z2-7]{40,}\b`)

// shortCIDs shortens the CIDs inside a message, so a job's reason fits a
// table cell on a phone.
func shortCIDs(s string) string { return cidPattern.ReplaceAllStringFunc(s, lease.Short) }

func formatTime(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}
