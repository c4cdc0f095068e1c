package main

import (
	"fmt"
	"net/http"
	"os"
	"sync/atomic"
)

// serve is the service mode (jobprog serve PORT): an HTTP server whose
// /healthz answers 200 until /sick is requested, and whose other paths
// answer "hello PATH".
func serve(port int) {
	var sick atomic.Bool
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		if sick.Load() {
			http.Error(w, "sick", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/sick", func(w http.ResponseWriter, _ *http.Request) {
		sick.Store(true)
		fmt.Fprintln(w, "now sick")
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello %s", r.URL.Path)
	})
	fmt.Printf("serving on :%d\n", port)
	if err := http.ListenAndServe(fmt.Sprintf(":%d", port), mux); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
