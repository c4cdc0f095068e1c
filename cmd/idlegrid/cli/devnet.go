package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/idlegrid/idlegrid/node"
	"github.com/idlegrid/idlegrid/node/devnet"
	"github.com/idlegrid/idlegrid/node/lease"
)

func newDevnetCmd(g *globals) *cobra.Command {
	var (
		providers int
		dir       string
		asJSON    bool
		noDemo    bool
		runtimes  string
		model     bool
		modelAt   string
	)
	cmd := &cobra.Command{
		Use:   "devnet",
		Short: "Run a whole network in this process: bootstrap, N providers, one renter",
		Long: `Run a bootstrap peer, N providers and one renter on 127.0.0.1, each with its
own home under --dir (a temporary directory, removed on exit, when not given).
Prints peer IDs and API URLs, posts a demo job from the renter (an embedded
WASM module: the auction, the lease, the log and the verified output are
shown), then runs until interrupted.

The providers run WASM, and Docker containers when a Docker engine answers
(--runtimes auto, on Linux): the devnet then builds a demo service image,
idlegrid-devnet/hello, FROM scratch around this binary (no registry, no
network), and removes its providers' containers when it stops.

With --model it also builds a model server image, idlegrid-devnet/model (an
OpenAI-compatible test server of deterministic tokens that reports usage),
runs it as a service of 3 replicas on distinct providers, and serves it on
one endpoint of the renter at --model-listen (idlegrid job endpoint).

Talk to a member with any client command and its home, for example:
  idlegrid status --home DIR/provider-1
The hints it prints name this binary by its full path unless PATH finds it
as idlegrid (make install puts it there).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			logger, err := g.logger(node.LogConfig{Level: "warn", Format: "text"})
			if err != nil {
				return err
			}
			// Results go beside the homes when they are kept, and to the
			// system's temp directory when the homes are removed on exit
			// (never into the working directory: often a checkout).
			outDir := filepath.Join(dir, "out")
			if dir == "" {
				if dir, err = devnet.TempDir(); err != nil {
					return err
				}
				defer os.RemoveAll(dir)
				outDir = filepath.Join(os.TempDir(), "idlegrid-out")
			}
			ctx := cmd.Context()
			w := cmd.OutOrStdout()
			note := w
			if asJSON {
				note = cmd.ErrOrStderr() // stdout is the JSON alone
			}
			if model && asJSON {
				return fmt.Errorf("devnet: --model shows its service in the terminal; leave out --json")
			}
			if model && providers < devnetModelReplicas {
				return fmt.Errorf("devnet: --model runs %d replicas on distinct providers; give --providers %d or more", devnetModelReplicas, devnetModelReplicas)
			}
			rts, image, err := devnetRuntimes(ctx, note, runtimes)
			if err != nil {
				return err
			}
			var modelImage string
			if model {
				if image == "" {
					return fmt.Errorf("devnet: --model needs Docker providers: a Docker engine on Linux (and --runtimes auto or docker)")
				}
				if modelImage, err = devnetModelImage(ctx); err != nil {
					return err
				}
				fmt.Fprintf(note, "devnet: model server image %s\n", modelImage)
			}
			dn, err := devnet.Start(ctx, devnet.Options{Dir: dir, Providers: providers, Runtimes: rts, Logger: logger})
			if err != nil {
				return err
			}
			defer dn.Close()
			fmt.Fprintf(w, "devnet: %d nodes in %s, waiting for routing tables...\n", len(dn.Nodes), dir)
			wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
			defer cancel()
			if err := dn.WaitReady(wctx); err != nil {
				return err
			}
			if asJSON {
				type member struct {
					Name   string `json:"name"`
					Role   string `json:"role"`
					PeerID string `json:"peer_id"`
					API    string `json:"api"`
					Home   string `json:"home"`
				}
				var ms []member
				for _, m := range dn.Nodes {
					ms = append(ms, member{m.Name, string(m.Node.Role()), m.Node.ID().String(), m.Node.APIURL(), m.Home})
				}
				if err := printJSON(w, ms); err != nil {
					return err
				}
			} else {
				tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "NAME\tROLE\tPEER ID\tAPI\tHOME")
				for _, m := range dn.Nodes {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", m.Name, m.Node.Role(), m.Node.ID(), m.Node.APIURL(), m.Home)
				}
				if err := tw.Flush(); err != nil {
					return err
				}
				renterNode := dn.Nodes[len(dn.Nodes)-1]
				renter := renterNode.Home
				if !noDemo {
					if err := runDevnetDemo(ctx, w, renter, renterNode.Node.APIURL(), providers); err != nil {
						return err
					}
				}
				var modelJob, modelAddr string
				if model {
					modelJob, modelAddr, err = runDevnetModel(ctx, w, renter, renterNode.Node.APIURL(), modelImage, modelAt, devnetModelReplicas)
					if err != nil {
						return err
					}
				}
				bin, goRun := selfCommand()
				// Ctrl-C reaches this process through the terminal; a kill
				// must name this PID, not go run's, which ignores it.
				fmt.Fprintf(w, "\ndevnet ready; press Ctrl-C to stop (or kill -INT %d).\n", os.Getpid())
				if goRun {
					fmt.Fprintf(w, "This binary was built by go run; `make install` (or go install ./cmd/idlegrid) puts idlegrid on your PATH.\n")
				}
				fmt.Fprintf(w, "In another terminal, try:\n")
				fmt.Fprintf(w, "  %s market search --home %s 'vram>=40 price<=2'\n", bin, renter)
				fmt.Fprintf(w, "  %s job submit --home %s --module %s \\\n      --gpus 1 --gpu a100,h100 --tier bronze --max-price 2.5 --duration 30s -- 400\n", bin, renter, devnet.DemoModule)
				fmt.Fprintf(w, "  JOB=$(%s job ls -q --home %s | head -1)   # the newest job\n", bin, renter)
				fmt.Fprintf(w, "  %s job logs --home %s $JOB\n", bin, renter)
				fmt.Fprintf(w, "  %s job result --home %s $JOB -o %s\n", bin, renter, outDir)
				fmt.Fprintf(w, "  %s market prices --home %s\n", bin, renter)
				if image != "" {
					fmt.Fprintf(w, "A service on the Docker providers (the demo image answers HTTP on %d):\n", devnet.HelloPort)
					fmt.Fprintf(w, "  %s job submit --home %s --image %s \\\n      --kind service --ports %d --health http:%d/healthz --max-price 2 --duration 1h\n",
						bin, renter, image, devnet.HelloPort, devnet.HelloPort)
					fmt.Fprintf(w, "  JOB=$(%s job ls -q --home %s | head -1)\n", bin, renter)
					fmt.Fprintf(w, "  %s job forward --home %s $JOB 127.0.0.1:%d --detach\n", bin, renter, devnet.HelloPort)
					fmt.Fprintf(w, "  curl http://127.0.0.1:%d/\n", devnet.HelloPort)
				}
				if model {
					fmt.Fprintf(w, "The model service's one endpoint (%d replicas):\n", devnetModelReplicas)
					fmt.Fprintf(w, "  curl -s http://%s/v1/chat/completions -d '{\"messages\":[{\"role\":\"user\",\"content\":\"hello there\"}],\"max_tokens\":8}'\n", modelAddr)
					fmt.Fprintf(w, "  %s job endpoint --home %s %s   # per replica: requests, p95, time to first token, tokens, $/1M tokens\n", bin, renter, lease.Short(modelJob))
				}
			}
			<-ctx.Done()
			fmt.Fprintln(w, "devnet: shutting down")
			return dn.Close()
		},
	}
	f := cmd.Flags()
	f.IntVar(&providers, "providers", 3, "number of provider nodes")
	f.StringVar(&dir, "dir", "", "directory for the nodes' homes (kept and reused when given)")
	f.BoolVar(&asJSON, "json", false, "print the members as JSON once ready (no demo job)")
	f.BoolVar(&noDemo, "no-demo", false, "do not post the demo job")
	f.BoolVar(&model, "model", false, "also run a model server as a service of 3 replicas behind one endpoint (needs Docker)")
	f.StringVar(&modelAt, "model-listen", "127.0.0.1:8000", "the model service endpoint's local address, with --model")
	f.StringVar(&runtimes, "runtimes", "auto", "runtimes the providers offer: wasm, docker or both (docker,wasm); auto adds docker when an engine answers")
	return cmd
}

// devnetModelReplicas is how many replicas `devnet --model` runs.
const devnetModelReplicas = 3

// devnetModelImage builds the model server image from this binary.
func devnetModelImage(ctx context.Context) (string, error) {
	exe, err := os.Executable()
	if err == nil {
		exe, err = filepath.EvalSymlinks(exe)
	}
	if err != nil {
		return "", fmt.Errorf("devnet: which binary runs: %w", err)
	}
	return devnet.BuildModelImage(ctx, exe)
}

// devnetRuntimes resolves --runtimes. With docker it checks the engine and
// builds the demo service image, whose pinned reference it returns.
func devnetRuntimes(ctx context.Context, w io.Writer, flag string) ([]string, string, error) {
	auto := flag == "auto"
	rts := []string{"wasm"}
	if !auto {
		rts = nil
		for r := range strings.SplitSeq(flag, ",") {
			switch r = strings.TrimSpace(r); r {
			case "docker", "wasm":
				rts = append(rts, r)
			default:
				return nil, "", fmt.Errorf("--runtimes %q: want docker, wasm or docker,wasm (or auto)", flag)
			}
		}
	}
	if !auto && !slices.Contains(rts, "docker") {
		return rts, "", nil
	}
	if auto && runtime.GOOS != "linux" {
		return rts, "", nil // providers run Linux containers
	}
	exe, err := os.Executable()
	if err == nil {
		exe, err = filepath.EvalSymlinks(exe)
	}
	if err != nil {
		return nil, "", fmt.Errorf("devnet: which binary runs: %w", err)
	}
	host, image, err := devnet.DockerDemo(ctx, exe)
	switch {
	case err != nil && auto:
		fmt.Fprintf(w, "devnet: providers run WASM only (no Docker engine: %v)\n", err)
		return rts, "", nil
	case err != nil:
		return nil, "", fmt.Errorf("devnet: --runtimes %s: %w", flag, err)
	}
	if auto {
		rts = []string{"docker", "wasm"}
	}
	fmt.Fprintf(w, "devnet: providers run Docker containers on the engine at %s; demo service image %s\n", host, image)
	return rts, image, nil
}
