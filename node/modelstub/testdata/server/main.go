// Command server is modelstub's OpenAI-compatible test model server as a
// static program, which the tests pack into a FROM-scratch image. It
// listens on $ADDR (default :8080), names itself $NAME (default the
// host name) and spends $TOKEN_DELAY (a Go duration, default 20ms) on each
// token.
package main

import (
	"log"
	"net/http"
	"os"
	"time"

	"github.com/idlegrid/idlegrid/node/modelstub"
)

func main() {
	addr := envOr("ADDR", ":8080")
	name := os.Getenv("NAME")
	if name == "" {
		name, _ = os.Hostname()
	}
	delay, err := time.ParseDuration(envOr("TOKEN_DELAY", "20ms"))
	if err != nil {
		log.Fatalf("TOKEN_DELAY: %v", err)
	}
	srv := &http.Server{Addr: addr, Handler: modelstub.Handler(modelstub.Config{Name: name, TokenDelay: delay}),
		ReadHeaderTimeout: 10 * time.Second}
	log.Fatal(srv.ListenAndServe())
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}
