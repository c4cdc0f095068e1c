package ui_test

import (
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idlegrid/idlegrid/node/api"
	"github.com/idlegrid/idlegrid/node/ui"
)

const token = "ui-test-token-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"

// clock is a settable clock for session expiry.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

type harness struct {
	url   string
	fake  *fakeBackend
	clock *clock
}

// newHarness serves the dashboard through the real API server, so its
// Host and Origin checks stand in front as they do in the node.
func newHarness(t *testing.T) *harness { return newHarnessAs(t, "renter") }

// newHarnessAs is newHarness for a node of role.
func newHarnessAs(t *testing.T, role string) *harness {
	t.Helper()
	h := &harness{fake: &fakeBackend{dir: t.TempDir(), role: role}, clock: &clock{now: t0}}
	dash, err := ui.New(h.fake, ui.Options{Token: token, Now: h.clock.Now, SessionTTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := api.Listen("127.0.0.1:0", h.fake, api.Options{Token: token, UI: dash})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	h.url = srv.URL()
	return h
}

// newClient keeps cookies and does not follow redirects, so tests see
// each response.
func newClient(t *testing.T) *http.Client {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// get fetches a path and returns the status and body.
func get(t *testing.T, c *http.Client, u string) (int, string) {
	t.Helper()
	res, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, string(b)
}

func post(t *testing.T, c *http.Client, u string, form url.Values) *http.Response {
	t.Helper()
	res, err := c.PostForm(u, form)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res
}

func csrfOf(t *testing.T, body string) string {
	t.Helper()
	m := csrfRE.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no CSRF field in %q", body)
	}
	return m[1]
}

// login signs a fresh client in and returns it with its CSRF token.
func (h *harness) login(t *testing.T) (*http.Client, string) {
	t.Helper()
	c := newClient(t)
	_, body := get(t, c, h.url+"/ui/login")
	res := post(t, c, h.url+"/ui/login", url.Values{"csrf": {csrfOf(t, body)}, "token": {token}})
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/ui/" {
		t.Fatalf("login: %d to %q", res.StatusCode, res.Header.Get("Location"))
	}
	status, body := get(t, c, h.url+"/ui/")
	if status != http.StatusOK {
		t.Fatalf("overview after login: %d %s", status, body)
	}
	return c, csrfOf(t, body)
}

func TestLoginSetsASessionCookieNotTheToken(t *testing.T) {
	h := newHarness(t)
	c := newClient(t)
	_, body := get(t, c, h.url+"/ui/login")
	res := post(t, c, h.url+"/ui/login", url.Values{"csrf": {csrfOf(t, body)}, "token": {token}})
	var sess *http.Cookie
	for _, ck := range res.Cookies() {
		if ck.Name == "idlegrid_session_"+h.url[strings.LastIndex(h.url, ":")+1:] {
			sess = ck
		}
	}
	if sess == nil {
		t.Fatalf("no session cookie named for the port in %v", res.Header["Set-Cookie"])
	}
	if !sess.HttpOnly || sess.SameSite != http.SameSiteStrictMode || sess.Secure || sess.Path != "/ui/" {
		t.Errorf("cookie flags: %+v; want HttpOnly, SameSite=Strict, not Secure over plain HTTP, Path=/ui/", sess)
	}
	if strings.Contains(sess.Value, token) || len(sess.Value) < 40 {
		t.Errorf("cookie value %q: want a random session ID, not the token", sess.Value)
	}
}

func TestCookieIsSecureOverTLS(t *testing.T) {
	fake := &fakeBackend{dir: t.TempDir()}
	dash, err := ui.New(fake, ui.Options{Token: token})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	dash.ServeHTTP(rec, httptest.NewRequest("GET", "/ui/login", nil))
	body := rec.Body.String()
	nonce := csrfOf(t, body)
	req := httptest.NewRequest("POST", "/ui/login", strings.NewReader(url.Values{"csrf": {nonce}, "token": {token}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.AddCookie(&http.Cookie{Name: "idlegrid_login", Value: nonce})
	req.TLS = &tls.ConnectionState{}
	rec = httptest.NewRecorder()
	dash.ServeHTTP(rec, req)
	res := rec.Result()
	found := false
	for _, ck := range res.Cookies() {
		if ck.Name == "idlegrid_session" && ck.Value != "" { // no port in the test request's Host
			found = true
			if !ck.Secure {
				t.Errorf("session cookie over TLS is not Secure: %+v", ck)
			}
		}
	}
	if !found {
		t.Fatalf("no session cookie: %d %v", res.StatusCode, res.Header["Set-Cookie"])
	}
}

func TestLoginRefusals(t *testing.T) {
	h := newHarness(t)
	for _, tc := range []struct {
		name       string
		withNonce  bool
		token      string
		wantStatus int
	}{
		{"wrong token", true, "nope", http.StatusUnauthorized},
		{"empty token", true, "", http.StatusUnauthorized},
		{"no login nonce (cross-site sign-in)", false, token, http.StatusForbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newClient(t)
			form := url.Values{"token": {tc.token}}
			if tc.withNonce {
				_, body := get(t, c, h.url+"/ui/login")
				form.Set("csrf", csrfOf(t, body))
			}
			res := post(t, c, h.url+"/ui/login", form)
			if res.StatusCode != tc.wantStatus {
				t.Errorf("status %d, want %d", res.StatusCode, tc.wantStatus)
			}
			if status, _ := get(t, c, h.url+"/ui/"); status != http.StatusSeeOther {
				t.Errorf("overview after a refused sign-in: %d, want a redirect to the login", status)
			}
		})
	}
}

func TestPagesNeedASession(t *testing.T) {
	h := newHarness(t)
	c := newClient(t)
	for _, p := range []string{"/ui/", "/ui/market", "/ui/jobs", "/ui/jobs/" + fakeJob, "/ui/provider", "/ui/trust", "/ui/jobs/" + fakeJob + "/log"} {
		res, err := c.Get(h.url + p)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/ui/login" {
			t.Errorf("%s without a session: %d to %q, want 303 to /ui/login", p, res.StatusCode, res.Header.Get("Location"))
		}
	}
	// A bearer token is no way in either: the UI only knows sessions.
	req, _ := http.NewRequest("GET", h.url+"/ui/", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther {
		t.Errorf("bearer token on /ui/: %d, want a redirect to the login", res.StatusCode)
	}
	// And the API still wants its token.
	if status, _ := get(t, c, h.url+"/v1/status"); status != http.StatusUnauthorized {
		t.Errorf("/v1/status without token: %d", status)
	}
}

func TestCSRFRefusal(t *testing.T) {
	h := newHarness(t)
	c, csrf := h.login(t)
	for _, tc := range []struct {
		name string
		csrf string
		want int
	}{
		{"missing", "", http.StatusForbidden},
		{"forged", "AAAA" + csrf[4:], http.StatusForbidden},
		{"right", csrf, http.StatusSeeOther},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(h.fake.cancelled)
			res := post(t, c, h.url+"/ui/jobs/"+fakeJob+"/cancel", url.Values{"csrf": {tc.csrf}})
			if res.StatusCode != tc.want {
				t.Errorf("status %d, want %d", res.StatusCode, tc.want)
			}
			cancelled := len(h.fake.cancelled) > before
			if cancelled != (tc.want == http.StatusSeeOther) {
				t.Errorf("cancelled = %v", cancelled)
			}
		})
	}
}

func TestAnotherSessionsCSRFIsRefused(t *testing.T) {
	h := newHarness(t)
	c, _ := h.login(t)
	_, otherCSRF := h.login(t)
	res := post(t, c, h.url+"/ui/jobs/"+fakeJob+"/cancel", url.Values{"csrf": {otherCSRF}})
	if res.StatusCode != http.StatusForbidden || len(h.fake.cancelled) != 0 {
		t.Fatalf("status %d, cancelled %v: want 403 and nothing cancelled", res.StatusCode, h.fake.cancelled)
	}
}

func TestForgedOriginAndHostRefused(t *testing.T) {
	h := newHarness(t)
	c, csrf := h.login(t)
	for _, tc := range []struct {
		name, host, origin string
	}{
		{"forged origin", "", "http://evil.example"},
		{"origin of another port", "", "http://127.0.0.1:1"},
		{"rebound host", "evil.example", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest("POST", h.url+"/ui/jobs/"+fakeJob+"/cancel", strings.NewReader(url.Values{"csrf": {csrf}}.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			if tc.origin != "" {
				req.Header.Set("Origin", tc.origin)
			}
			if tc.host != "" {
				req.Host = tc.host
			}
			res, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != http.StatusForbidden {
				t.Errorf("status %d, want 403", res.StatusCode)
			}
		})
	}
	if len(h.fake.cancelled) != 0 {
		t.Errorf("cancelled %v through a refused request", h.fake.cancelled)
	}
	// The same request from the dashboard's own origin goes through.
	req, _ := http.NewRequest("POST", h.url+"/ui/jobs/"+fakeJob+"/cancel", strings.NewReader(url.Values{"csrf": {csrf}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", h.url)
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther {
		t.Errorf("same-origin cancel: %d", res.StatusCode)
	}
}

func TestLogoutEndsTheSession(t *testing.T) {
	h := newHarness(t)
	c, csrf := h.login(t)
	res := post(t, c, h.url+"/ui/logout", url.Values{"csrf": {csrf}})
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/ui/login" {
		t.Fatalf("logout: %d to %q", res.StatusCode, res.Header.Get("Location"))
	}
	if status, _ := get(t, c, h.url+"/ui/"); status != http.StatusSeeOther {
		t.Errorf("overview after logout: %d, want a redirect", status)
	}
}

func TestSessionExpires(t *testing.T) {
	h := newHarness(t)
	c, _ := h.login(t)
	h.clock.Add(59 * time.Minute)
	if status, _ := get(t, c, h.url+"/ui/"); status != http.StatusOK {
		t.Fatalf("before expiry: %d", status)
	}
	h.clock.Add(time.Minute)
	if status, _ := get(t, c, h.url+"/ui/"); status != http.StatusSeeOther {
		t.Errorf("after the session's TTL: %d, want a redirect to the login", status)
	}
}
