package api

import (
	"net/http"
	"net/http/pprof"
)

// pprofRoutes serves the Go profiler under /debug/pprof/ (go tool pprof
// takes the URL; pass the token with a header, see docs/operators.md).
// They sit behind the same Host, Origin and bearer-token checks as every
// route: a CPU profile or an execution trace shows what the node is doing
// and costs CPU while it runs, so it is no more public than the rest.
//
// The handlers are mounted on the API's own mux, inside guard. Importing net/http/pprof
// also registers them on http.DefaultServeMux, which nothing in idlegrid
// serves.
func pprofRoutes(mux *http.ServeMux) {
	// Index also serves the named profiles: /debug/pprof/heap, goroutine,
	// allocs, block, mutex, threadcreate.
	mux.Handle("GET /debug/pprof/", http.HandlerFunc(pprof.Index))
	mux.Handle("GET /debug/pprof/cmdline", http.HandlerFunc(pprof.Cmdline))
	mux.Handle("GET /debug/pprof/profile", http.HandlerFunc(pprof.Profile))
	mux.Handle("GET /debug/pprof/symbol", http.HandlerFunc(pprof.Symbol))
	// go tool pprof looks symbols up with POST.
	mux.Handle("POST /debug/pprof/symbol", http.HandlerFunc(pprof.Symbol))
	mux.Handle("GET /debug/pprof/trace", http.HandlerFunc(pprof.Trace))
}
