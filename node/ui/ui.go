// Package ui is the node's web dashboard, served by the API server under
// /ui/: server-rendered HTML (html/template), one stylesheet and a small
// script, all embedded in the binary, with charts drawn as inline SVG. It
// reads everything through api.Backend, so it opens no access path the
// API does not already have. A user signs in once with the API token and
// gets a session cookie; every state-changing form carries a CSRF token,
// and the API server's Host and Origin checks stand in front of it.
package ui

import (
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/idlegrid/idlegrid/node/api"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Options configure the dashboard.
type Options struct {
	// Token is the API token a user signs in with.
	Token string
	// SessionTTL is how long a session lasts; 0 means 12 hours.
	SessionTTL time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Logger; nil discards.
	Logger *slog.Logger
}

// UI is the dashboard's http.Handler, mounted at /ui/.
type UI struct {
	b        api.Backend
	opts     Options
	log      *slog.Logger
	pages    map[string]*template.Template
	sessions *sessions
	mux      *http.ServeMux
	roleOnce sync.Once
	nodeRole string
}

// Prefix is where the dashboard is mounted.
const Prefix = "/ui/"

// New builds the dashboard over a backend.
func New(b api.Backend, opts Options) (*UI, error) {
	if b == nil {
		return nil, errors.New("ui.New: nil backend")
	}
	if opts.Token == "" {
		return nil, errors.New("ui.New: empty token")
	}
	if opts.SessionTTL == 0 {
		opts.SessionTTL = 12 * time.Hour
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	u := &UI{b: b, opts: opts, log: opts.Logger, sessions: newSessions(opts.SessionTTL)}
	if u.log == nil {
		u.log = slog.New(slog.DiscardHandler)
	}
	var err error
	if u.pages, err = parsePages(); err != nil {
		return nil, fmt.Errorf("ui.New: %w", err)
	}
	u.mux = u.routes()
	return u, nil
}

func (u *UI) routes() *http.ServeMux {
	mux := http.NewServeMux()
	static, _ := fs.Sub(staticFS, "static")
	mux.Handle("GET /ui/static/", http.StripPrefix("/ui/static/", cacheStatic(http.FileServerFS(static))))
	mux.HandleFunc("GET /ui/login", u.getLogin)
	mux.HandleFunc("POST /ui/login", u.postLogin)
	mux.Handle("GET /ui", http.RedirectHandler(Prefix, http.StatusFound))
	authed := map[string]handler{
		"GET /ui/{$}":                      u.getOverview,
		"POST /ui/logout":                  u.postLogout,
		"GET /ui/market":                   u.getMarket,
		"GET /ui/jobs":                     u.renterOnly(u.getJobs),
		"POST /ui/jobs":                    u.renterOnly(u.postJob),
		"GET /ui/jobs/{id}":                u.renterOnly(u.getJob),
		"GET /ui/jobs/{id}/events":         u.getJobEvents,
		"GET /ui/jobs/{id}/log":            u.getJobLog,
		"GET /ui/jobs/{id}/result":         u.getJobResult,
		"POST /ui/jobs/{id}/cancel":        u.postJobCancel,
		"GET /ui/provider":                 u.getProvider,
		"GET /ui/trust":                    u.getTrust,
		"GET /ui/leases/{id}/attestations": u.getAttestations,
	}
	for pattern, h := range authed {
		mux.Handle(pattern, u.authed(h))
	}
	return mux
}

// ServeHTTP serves the dashboard.
func (u *UI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	// The pages load nothing from elsewhere and are never framed.
	h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'")
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	// Not no-referrer: with it Chromium sends "Origin: null" on the
	// dashboard's own form posts, which the Origin check refuses.
	h.Set("Referrer-Policy", "same-origin")
	u.mux.ServeHTTP(w, r)
}

// cacheStatic lets the browser keep the stylesheet and script for an
// hour; they change only with the binary.
func cacheStatic(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "private, max-age=3600")
		next.ServeHTTP(w, r)
	})
}

// handler is a page: it gets the session and returns an error, which
// render as an error page.
type handler func(w http.ResponseWriter, r *http.Request, s *session) error

func (u *UI) authed(h handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := u.session(r)
		if s == nil {
			if r.Method == http.MethodGet && r.Header.Get("Accept") != "text/event-stream" {
				http.Redirect(w, r, "/ui/login", http.StatusSeeOther)
				return
			}
			http.Error(w, "sign in first", http.StatusUnauthorized)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, maxForm)
		if r.Method != http.MethodGet && !s.csrfValid(r.PostFormValue(csrfField)) {
			http.Error(w, "missing or stale CSRF token: reload the page and try again", http.StatusForbidden)
			return
		}
		if err := h(w, r, s); err != nil {
			u.fail(w, r, s, err)
		}
	})
}

// fail renders an error page; an *api.Error keeps its status and text.
func (u *UI) fail(w http.ResponseWriter, r *http.Request, s *session, err error) {
	status := http.StatusInternalServerError
	var apiErr *api.Error
	if errors.As(err, &apiErr) {
		status = apiErr.Status
	} else {
		u.log.Error("ui request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	u.render(w, status, "error", s, map[string]any{"Title": errorTitle(status), "Err": errMessage(err)})
}

// errorTitle heads an error page in words, not an HTTP status name.
func errorTitle(status int) string {
	switch {
	case status == http.StatusNotFound:
		return "Not found"
	case status == http.StatusConflict:
		return "Not now"
	case status < 500:
		return "That did not work"
	}
	return "Something went wrong on this node"
}

// notHere renders a page that this node's role does not have, saying
// where that page lives (a renter's Provider page, a provider's Jobs).
func (u *UI) notHere(w http.ResponseWriter, s *session, title, msg string) {
	u.render(w, http.StatusNotFound, "notice", s, map[string]any{"Title": title, "Msg": msg})
}

// role is this node's role, which decides its pages; it never changes.
func (u *UI) role() string {
	u.roleOnce.Do(func() { u.nodeRole = u.b.Identity().Role })
	return u.nodeRole
}

// errMessage is what a user is shown of an error: an API error's message
// without its wrapping.
func errMessage(err error) string {
	var apiErr *api.Error
	if errors.As(err, &apiErr) {
		return apiErr.Message
	}
	return err.Error()
}
