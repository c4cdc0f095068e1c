package cli

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/spf13/cobra"
)

// newDevnetHelloCmd is the devnet's demo service: the process inside the
// image the devnet builds around this binary (node/devnet, hello.go). It
// is hidden: nobody runs it by hand.
func newDevnetHelloCmd() *cobra.Command {
	var listen string
	cmd := &cobra.Command{
		Use:    "devnet-hello",
		Short:  "The devnet's demo service: answers HTTP on --listen (runs inside its image)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return serveHello(cmd.Context(), listen, cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&listen, "listen", ":8080", "address to serve HTTP on")
	return cmd
}

// serveHello answers every path with a greeting and /healthz with "ok",
// logging one line a request (job logs shows them), until ctx ends.
func serveHello(ctx context.Context, listen string, log io.Writer) error {
	host, _ := os.Hostname()
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(log, "%s %s %s\n", time.Now().UTC().Format(time.RFC3339), r.Method, r.URL.Path)
		fmt.Fprintf(w, "hello from idlegrid: container %s on a devnet provider answered %s %s through job forward\n", host, r.Method, r.URL.Path)
	})
	return serveHTTP(ctx, listen, mux, log)
}
