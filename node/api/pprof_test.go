package api_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestPprofNeedsToken: the profiler answers with the token and refuses
// without it, like every other route.
func TestPprofNeedsToken(t *testing.T) {
	s, _ := serve(t, false)
	tests := []struct {
		name       string
		method     string
		path       string
		auth       string
		wantStatus int
		wantBody   string
	}{
		{"index without token", "GET", "/debug/pprof/", "", 401, "missing bearer token"},
		{"heap with wrong token", "GET", "/debug/pprof/heap", "Bearer nope", 401, "invalid bearer token"},
		{"cpu profile without token", "GET", "/debug/pprof/profile?seconds=1", "", 401, "missing bearer token"},
		{"symbol post without token", "POST", "/debug/pprof/symbol", "", 401, "missing bearer token"},
		{"index with token", "GET", "/debug/pprof/", "Bearer " + token, 200, "goroutine"},
		{"goroutines with token", "GET", "/debug/pprof/goroutine?debug=1", "Bearer " + token, 200, "goroutine profile:"},
		{"cmdline with token", "GET", "/debug/pprof/cmdline", "Bearer " + token, 200, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(tc.method, s.URL()+tc.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			if tc.auth != "" {
				req.Header.Set("Authorization", tc.auth)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tc.wantStatus {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.wantStatus, body)
			}
			if !strings.Contains(string(body), tc.wantBody) {
				t.Fatalf("body lacks %q: %.300s", tc.wantBody, body)
			}
		})
	}
}
