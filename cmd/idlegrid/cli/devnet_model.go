package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/idlegrid/idlegrid/node"
	"github.com/idlegrid/idlegrid/node/api"
	"github.com/idlegrid/idlegrid/node/api/client"
	"github.com/idlegrid/idlegrid/node/devnet"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/node/modelstub"
)

// newDevnetModelCmd is the devnet's model server: the process inside the
// image `idlegrid devnet --model` builds around this binary
// (node/devnet, model.go). Hidden: nobody runs it by hand.
func newDevnetModelCmd() *cobra.Command {
	var (
		listen string
		delay  time.Duration
	)
	cmd := &cobra.Command{
		Use:    "devnet-model",
		Short:  "The devnet's model server: an OpenAI-compatible test server on --listen (runs inside its image)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			name, _ := os.Hostname()
			h := modelstub.Handler(modelstub.Config{Name: name, TokenDelay: delay})
			return serveHTTP(cmd.Context(), listen, h, cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&listen, "listen", ":8080", "address to serve HTTP on")
	cmd.Flags().DurationVar(&delay, "token-delay", 20*time.Millisecond, "time spent on each token")
	return cmd
}

// serveHTTP serves h on listen until ctx ends.
func serveHTTP(ctx context.Context, listen string, h http.Handler, log io.Writer) error {
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	fmt.Fprintf(log, "serving HTTP on %s\n", ln.Addr())
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// runDevnetModel runs the model server image as a service of replicas
// replicas from the renter, waits until every replica runs healthy, and
// serves the service on listen with the renter's endpoint. It returns
// the job and the endpoint's bound address.
func runDevnetModel(ctx context.Context, w io.Writer, renterHome, renterURL, image, listen string, replicas int) (job, addr string, err error) {
	token, err := node.LoadToken(renterHome)
	if err != nil {
		return "", "", err
	}
	c := client.New(renterURL, token)
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	if err := waitOffers(ctx, w, c, replicas, "model"); err != nil {
		return "", "", err
	}
	spec := devnet.ModelJob(image, replicas)
	fmt.Fprintf(w, "\nmodel: posting a service of %d replicas (the model server image %s):\n%s", replicas, devnet.ModelRepo, indent(string(spec), "    "))
	j, err := c.SubmitJob(ctx, spec)
	if err != nil {
		return "", "", fmt.Errorf("model: submit: %w", err)
	}
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	up := make(chan bool, 1)
	go func() { up <- waitReplicasUp(watchCtx, c, j.ID, replicas); stopWatch() }()
	err = c.WatchJob(watchCtx, j.ID, func(ev api.JobEvent) {
		if ev.Kind != "bid" {
			fmt.Fprintf(w, "  %s  %-16s %s\n", ev.At.Local().Format("15:04:05.000"), ev.Kind, ev.Message)
		}
	})
	if err != nil && !errors.Is(err, context.Canceled) {
		return "", "", fmt.Errorf("model: follow job: %w", err)
	}
	stopWatch()
	if !<-up {
		final, _ := c.Job(context.WithoutCancel(ctx), j.ID)
		return "", "", fmt.Errorf("model: the service's %d replicas did not all run healthy: job %s %s", replicas, final.State, final.Reason)
	}
	e, err := c.StartEndpoint(ctx, j.ID, api.EndpointRequest{Listen: listen, Port: devnet.ModelPort})
	if err != nil {
		return "", "", fmt.Errorf("model: endpoint: %w", err)
	}
	fmt.Fprintf(w, "model: job %s serves on http://%s over %d replicas on distinct providers\n", lease.Short(j.ID), e.Listen, len(e.Replicas))
	return j.ID, e.Listen, nil
}

// waitReplicasUp polls a service job until n of its leases run healthy
// (true), or ctx ends (false).
func waitReplicasUp(ctx context.Context, c *client.Client, id string, n int) bool {
	return pollJob(ctx, c, id, func(j api.Job) bool {
		up := 0
		for _, l := range j.Leases {
			if l.State == string(lease.Running) && l.Health == string(lease.HealthHealthy) {
				up++
			}
		}
		return up >= n
	})
}
