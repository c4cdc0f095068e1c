package ui

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"net"
	"net/http"
	"sync"
	"time"
)

// Cookie and form field names.
const (
	sessionCookie = "idlegrid_session"
	// loginCookie holds the login form's own CSRF value (double submit):
	// no one else's page can sign a browser in to this node.
	loginCookie = "idlegrid_login"
	csrfField   = "csrf"
	tokenField  = "token"
	// maxForm bounds a form body: a pasted job spec is at most 64 KiB.
	maxForm = 80 << 10
	// maxSessions bounds the session table; the oldest goes first.
	maxSessions = 64
)

// session is one signed-in browser. The cookie holds a random ID, never
// the token; the table keys sessions by the ID's hash, so the table does
// not hold working cookies either.
type session struct {
	csrf    string
	expires time.Time
}

func (s *session) csrfValid(got string) bool {
	return got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(s.csrf)) == 1
}

// CSRF is the token a page puts in its forms.
func (s *session) CSRF() string { return s.csrf }

type sessions struct {
	ttl time.Duration
	mu  sync.Mutex
	m   map[[32]byte]*session
}

func newSessions(ttl time.Duration) *sessions {
	return &sessions{ttl: ttl, m: map[[32]byte]*session{}}
}

// create adds a session and returns its cookie value.
func (ss *sessions) create(now time.Time) string {
	id := randomString()
	ss.mu.Lock()
	defer ss.mu.Unlock()
	for k, s := range ss.m {
		if !now.Before(s.expires) {
			delete(ss.m, k)
		}
	}
	for len(ss.m) >= maxSessions {
		var oldest [32]byte
		var at time.Time
		for k, s := range ss.m {
			if at.IsZero() || s.expires.Before(at) {
				oldest, at = k, s.expires
			}
		}
		delete(ss.m, oldest)
	}
	ss.m[sha256.Sum256([]byte(id))] = &session{csrf: randomString(), expires: now.Add(ss.ttl)}
	return id
}

func (ss *sessions) get(id string, now time.Time) *session {
	if id == "" {
		return nil
	}
	k := sha256.Sum256([]byte(id))
	ss.mu.Lock()
	defer ss.mu.Unlock()
	s := ss.m[k]
	if s == nil {
		return nil
	}
	if !now.Before(s.expires) {
		delete(ss.m, k)
		return nil
	}
	return s
}

func (ss *sessions) delete(id string) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	delete(ss.m, sha256.Sum256([]byte(id)))
}

func randomString() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return base64.RawURLEncoding.EncodeToString(b)
}

// session returns the request's session, or nil when it has none.
func (u *UI) session(r *http.Request) *session {
	c, err := r.Cookie(cookieName(r, sessionCookie))
	if err != nil {
		return nil
	}
	return u.sessions.get(c.Value, u.opts.Now())
}

// cookieName suffixes a cookie's name with the port of the Host the
// request was sent to. Browsers scope cookies by host, not port, so
// without it signing in to a second node on the same machine (a devnet,
// or a provider and a renter side by side) would sign the first one out.
func cookieName(r *http.Request, name string) string {
	if _, port, err := net.SplitHostPort(r.Host); err == nil && port != "" {
		return name + "_" + port
	}
	return name
}

// cookie builds a dashboard cookie: HttpOnly, SameSite=Strict, Secure
// when the request came over TLS, scoped to /ui/.
func cookie(r *http.Request, name, value string, maxAge int) *http.Cookie {
	return &http.Cookie{
		Name: cookieName(r, name), Value: value, Path: Prefix, MaxAge: maxAge,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil,
	}
}

func (u *UI) getLogin(w http.ResponseWriter, r *http.Request) {
	if u.session(r) != nil {
		http.Redirect(w, r, Prefix, http.StatusSeeOther)
		return
	}
	u.showLogin(w, r, http.StatusOK, "")
}

func (u *UI) showLogin(w http.ResponseWriter, r *http.Request, status int, msg string) {
	nonce := randomString()
	http.SetCookie(w, cookie(r, loginCookie, nonce, 600))
	u.render(w, status, "login", nil, map[string]any{"Title": "Sign in", "Nonce": nonce, "Err": msg})
}

func (u *UI) postLogin(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxForm)
	c, err := r.Cookie(cookieName(r, loginCookie))
	if err != nil || c.Value == "" || subtle.ConstantTimeCompare([]byte(c.Value), []byte(r.PostFormValue(csrfField))) != 1 {
		u.showLogin(w, r, http.StatusForbidden, "The sign-in form expired; try again.")
		return
	}
	if subtle.ConstantTimeCompare([]byte(r.PostFormValue(tokenField)), []byte(u.opts.Token)) != 1 {
		u.log.Warn("ui sign-in refused: wrong token", "remote", r.RemoteAddr)
		u.showLogin(w, r, http.StatusUnauthorized, "Wrong token. It is in the node's home, in the file api.token.")
		return
	}
	id := u.sessions.create(u.opts.Now())
	http.SetCookie(w, cookie(r, loginCookie, "", -1))
	http.SetCookie(w, cookie(r, sessionCookie, id, int(u.opts.SessionTTL/time.Second)))
	http.Redirect(w, r, Prefix, http.StatusSeeOther)
}

func (u *UI) postLogout(w http.ResponseWriter, r *http.Request, _ *session) error {
	if c, err := r.Cookie(cookieName(r, sessionCookie)); err == nil {
		u.sessions.delete(c.Value)
	}
	http.SetCookie(w, cookie(r, sessionCookie, "", -1))
	http.Redirect(w, r, "/ui/login", http.StatusSeeOther)
	return nil
}
