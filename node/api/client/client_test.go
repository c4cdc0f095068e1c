package client

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestOversizedResponseIsNamed: a response over the client's limit is
// reported as too large, not as a JSON document that ends too soon (the
// "decode response: unexpected EOF" a flooded market search gave).
func TestOversizedResponseIsNamed(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"query":"","offers":[` + strings.Repeat(`{"peer_id":"x"},`, maxResponse/16) + `{}]}`))
	}))
	defer srv.Close()
	c := New(srv.URL, "token")
	_, err := c.Search(context.Background(), "", SearchOptions{})
	if !errors.Is(err, ErrResponseTooLarge) {
		t.Fatalf("search with a %d MiB answer: %v, want ErrResponseTooLarge", maxResponse>>20, err)
	}
}
