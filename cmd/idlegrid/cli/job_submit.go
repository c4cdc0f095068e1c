package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	yaml "go.yaml.in/yaml/v3"

	"github.com/idlegrid/idlegrid/node/api"
	"github.com/idlegrid/idlegrid/node/api/client"
	"github.com/idlegrid/idlegrid/node/lease"
)

// specFlag maps a submit flag to a job spec field (docs/jobspec.md); help
// gives the unit, format and default, as the field's table row does.
type specFlag struct {
	flag, field string
	kind        string // string, int, float, bool, list
	help        string
}

var specFlags = []specFlag{
	{"name", "name", "string", "job name, up to 128 printable characters (default none)"},
	{"image", "image", "string", "Docker image REF@sha256:<64 hex> (required for docker)"},
	{"module", "module", "string", "WASM module CID; add the file first with idlegrid artifact add (required for wasm)"},
	{"runtime", "runtime", "string", "docker or wasm (default: docker with --image, wasm with --module)"},
	{"gpus", "gpus", "int", "number of GPUs, 0..64; 0 is a CPU-only job (default 1, 0 for wasm)"},
	{"gpu", "gpu", "list", "GPU models or families, any of them, e.g. h100,a100 (default any model)"},
	{"vram", "vram", "string", "minimum memory per GPU: MiB, GiB, GB or TB; a bare number is GB, e.g. 40GiB (default no minimum)"},
	{"cc", "cc", "string", "minimum compute capability major.minor, e.g. 8.0 (default no minimum)"},
	{"cpu", "cpu", "int", "minimum CPU cores (default no minimum)"},
	{"ram", "ram", "string", "minimum host memory, units as --vram, e.g. 64GiB (default no minimum)"},
	{"disk", "disk", "string", "minimum scratch disk, units as --vram, e.g. 200GB (default no minimum)"},
	{"tier", "tier", "string", "gold (reserved), silver (on-demand) or bronze (interruptible) (default silver)"},
	{"max-price", "max_price", "float", "most you pay, USD per GPU-hour (per hour for --gpus 0), e.g. 1.80 (required)"},
	{"min-reliability", "min_reliability", "float", "lowest provider reliability you accept, 0 to 1 (default 0)"},
	{"region", "region", "list", "ISO country codes, any of them, e.g. de,fr (default anywhere)"},
	{"near", "near", "list", "where the work's users are, ISO country codes: bids from there get 10% off in the match, a preference unlike --region, e.g. de,nl (default none)"},
	{"max-rtt", "max_rtt", "string", "longest round trip to the provider, at most 1m, e.g. 80ms (default no limit)"},
	{"duration", "duration", "string", "expected run time, e.g. 2h or 30s, at most 8784h (required)"},
	{"max-duration", "max_duration", "string", "hard time limit, at least --duration (default 2 x --duration)"},
	{"start-by", "start_by", "string", "latest start: RFC 3339 time or a duration from now, e.g. 30m (default no deadline)"},
	{"max-wait", "max_wait", "string", "how long your node keeps auctioning while no auction finds a plan, from submission, e.g. 2h; 0s: unfilled at once (default the node's market.max_wait, 24h)"},
	{"bid-window", "bid_window", "string", "how long the auction collects bids, 50ms to 1m (default 500ms)"},
	{"dataset", "datasets", "list", "dataset CIDs the job reads (default none)"},
	{"model", "model", "string", "the model it serves: the weights' CID or NAME@sha256:<64 hex>; providers holding it are preferred (default none)"},
	{"model-size", "model_size", "string", "the model's size on disk, units as --vram, e.g. 16GB (required with --model)"},
	{"pricing", "pricing", "string", "first (pay each winner its bid) or second (one clearing price) (default first)"},
	{"egress", "egress", "bool", "the job needs outbound network (default false)"},
	{"min-notice", "min_notice", "string", "bronze only: shortest preemption notice you accept, e.g. 5m (default none)"},
	{"replicas", "replicas", "int", "distinct providers that run it at once, 1..8: batch outputs must agree; service replicas share one endpoint (default 1)"},
	{"verifier", "verifier", "string", "batch job with --replicas 2 or more: a WASM module this renter holds (its CID) or an image REF@sha256:<64 hex> that judges replicas' differing outputs (default none)"},
	{"replica-regions", "replica_regions", "string", "batch job with --replicas 2 or more: distinct puts every replica in another country, or any (default any)"},
	{"kind", "kind", "string", "batch (runs to its exit) or service (runs until cancelled, reached with job forward; docker only) (default batch)"},
	{"ports", "ports", "ints", "service: the container ports it listens on, e.g. 8080 (at most 8)"},
	{"health", "health", "string", "service: http:PORT/PATH or tcp:PORT, e.g. http:8080/healthz (default no check)"},
	{"health-interval", "health_interval", "string", "service: time between health checks, 500ms to 10m (default 5s)"},
	{"health-threshold", "health_threshold", "int", "service: failed checks in a row that make it unhealthy, 1..100 (default 3)"},
	{"min-replicas", "min_replicas", "int", "service: the fewest replicas the renter scales down to, 1..8 (default --replicas)"},
	{"max-replicas", "max_replicas", "int", "service: the most replicas the renter scales up to, 1..8, at least --replicas (default --replicas)"},
	{"scale-in-flight", "scale_in_flight", "int", "service: requests in flight per replica above which one is added; under a quarter of it one is removed, 1..10000 (default 4)"},
	{"scale-window", "scale_window", "string", "service: the window requests in flight are averaged over and the least time between scaling steps, 1s to 1h (default 30s)"},
	{"max-usd-per-mtok", "max_usd_per_mtok", "float", "service: the most a million tokens may cost, USD; over it the scaler adds no replica (default no cap)"},
	{"forward-peer", "forward_peers", "list", "service: peer IDs besides this renter that may open the tunnel (default none)"},
	{"reauction-unhealthy", "reauction_unhealthy", "bool", "service: auction it again elsewhere when it turns unhealthy (default false)"},
}

func newJobSubmitCmd(g *globals) *cobra.Command {
	var (
		file    string
		env     []string
		detach  bool
		asJSON  bool
		idemKey string
	)
	cmd := &cobra.Command{
		Use:   "submit [-f SPEC.yaml] [flags] [-- CMD ARGS...]",
		Short: "Validate a job, auction it and follow the auction live",
		Long: `Submit a job from a YAML spec (-f) and/or flags (flags win), for example:

  idlegrid job submit --gpus 1 --gpu h100,a100 --vram 40GiB --tier bronze \
    --max-price 1.80 --region de,fr --duration 2h --image REF@sha256:... -- cmd args

The daemon validates the spec (nothing is posted when it is wrong), gives the
submission its own job ID (submitting one spec twice makes two jobs; a retry
with the same --idempotency-key returns the first) and runs the auction. Progress (bids received, best price, award, or why
it failed) is shown live; --json prints the outcome. Every field is described
in docs/jobspec.md.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			body, raw, spec, err := submitBody(cmd.Flags(), file, env, args)
			if err != nil {
				return err
			}
			c, err := g.client()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			job, err := c.SubmitJobWith(ctx, body, api.SubmitOptions{IdempotencyKey: idemKey})
			if err != nil {
				err = explain(err, g.home)
				if !bytes.Equal(body, raw) {
					// The daemon read YAML the CLI wrote: name flags.
					err = errors.New(inFlagTerms(err.Error(), cmd.Flags(), file))
				} else if file != "" {
					// Its line numbers are the file's: say which file.
					err = fmt.Errorf("%s: %w", file, err)
				}
				return err
			}
			w := cmd.OutOrStdout()
			if !asJSON {
				fmt.Fprintf(w, "job %s submitted\n", job.ID)
			}
			if detach {
				if asJSON {
					return printJSON(w, job)
				}
				return nil
			}
			// A service never ends by itself: follow it until it runs (and,
			// with a health check, answers it), then return.
			watchCtx, stopWatch := context.WithCancel(ctx)
			defer stopWatch()
			var up atomic.Bool
			if kind, _ := spec["kind"].(string); strings.EqualFold(kind, "service") {
				go func() {
					if waitServiceUp(watchCtx, c, job.ID, spec["health"] != nil) {
						up.Store(true)
						stopWatch()
					}
				}()
			}
			var shown strings.Builder // what the events said, so the error does not repeat it
			werr := c.WatchJob(watchCtx, job.ID, func(ev api.JobEvent) {
				if !asJSON {
					printEvent(w, ev)
					shown.WriteString(ev.Message + "\n")
				}
			})
			if werr != nil && !errors.Is(werr, context.Canceled) {
				return explain(werr, g.home)
			}
			final, err := c.Job(context.WithoutCancel(ctx), job.ID)
			if err != nil {
				return explain(err, g.home)
			}
			if asJSON {
				if err := printJSON(w, final); err != nil {
					return err
				}
			} else if up.Load() {
				port := "PORT"
				if ports, ok := spec["ports"].([]any); ok && len(ports) > 0 {
					port = fmt.Sprint(ports[0])
				} else if ports, ok := spec["ports"].([]int); ok && len(ports) > 0 {
					port = fmt.Sprint(ports[0])
				}
				fmt.Fprintf(w, "job %s: service running; reach it with idlegrid job forward %s %s (idlegrid job cancel %s stops it)\n",
					lease.Short(final.ID), lease.Short(final.ID), port, lease.Short(final.ID))
			} else if final.State == "completed" {
				fmt.Fprintf(w, "job %s: %s\n", lease.Short(final.ID), final.State)
			}
			if final.Terminal() && final.State != "completed" {
				if final.Reason == "" || strings.Contains(shown.String(), final.Reason) {
					return fmt.Errorf("job %s %s (see above)", lease.Short(final.ID), final.State)
				}
				return fmt.Errorf("job %s %s: %s", lease.Short(final.ID), final.State, final.Reason)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVarP(&file, "file", "f", "", "YAML job spec (flags override its fields)")
	for _, sf := range specFlags {
		switch sf.kind {
		case "int":
			f.Int(sf.flag, 0, sf.help)
		case "float":
			f.Float64(sf.flag, 0, sf.help)
		case "bool":
			f.Bool(sf.flag, false, sf.help)
		case "list":
			f.StringSlice(sf.flag, nil, sf.help)
		case "ints":
			f.IntSlice(sf.flag, nil, sf.help)
		default:
			f.String(sf.flag, "", sf.help)
		}
	}
	f.StringArrayVar(&env, "env", nil, "environment variable KEY=VALUE (repeatable)")
	f.BoolVar(&detach, "detach", false, "return once the job is accepted, without following the auction")
	f.BoolVar(&asJSON, "json", false, "print the final job as JSON")
	f.StringVar(&idemKey, "idempotency-key", "", "client key for safe retries: a submit with a key already used returns that job")
	return cmd
}

// submitBody is the job spec submit sends: the file's fields with the
// flags, --env and the command over them, as YAML; or, when nothing
// changes the file, the file byte for byte, so the daemon's errors carry
// its own line numbers. It also returns the file's bytes (nil without -f)
// and the spec's fields.
func submitBody(fs *pflag.FlagSet, file string, env, args []string) (body, raw []byte, spec map[string]any, err error) {
	spec = map[string]any{}
	if file != "" {
		if raw, err = os.ReadFile(file); err != nil {
			return nil, nil, nil, err
		}
		if err := yaml.Unmarshal(raw, &spec); err != nil {
			return nil, nil, nil, fmt.Errorf("%s: %w", file, err)
		}
		if spec == nil {
			spec = map[string]any{}
		}
	}
	if err := applySpecFlags(fs, spec); err != nil {
		return nil, nil, nil, err
	}
	if len(env) > 0 {
		m := map[string]string{}
		for _, kv := range env {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				return nil, nil, nil, fmt.Errorf("--env %q: want KEY=VALUE", kv)
			}
			m[k] = v
		}
		spec["env"] = m
	}
	if len(args) > 0 {
		spec["command"] = args
	}
	body = raw
	if body == nil || overridden(fs) || len(env) > 0 || len(args) > 0 {
		if body, err = yaml.Marshal(spec); err != nil {
			return nil, nil, nil, err
		}
	}
	return body, raw, spec, nil
}

// waitServiceUp polls a service job until its lease runs and, when the
// spec has a health check, reports healthy (true), or the job ends or ctx
// does (false).
func waitServiceUp(ctx context.Context, c *client.Client, id string, health bool) bool {
	return pollJob(ctx, c, id, func(j api.Job) bool {
		n := len(j.Leases)
		if n == 0 {
			return false
		}
		l := j.Leases[n-1]
		return l.State == string(lease.Running) && (!health || l.Health == string(lease.HealthHealthy))
	})
}

// pollJob reads job id every 500 ms until ready says it is (true), or the
// job ends or ctx does (false). A read that fails is tried again at the
// next tick: the daemon may be restarting.
func pollJob(ctx context.Context, c *client.Client, id string, ready func(api.Job) bool) bool {
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-tick.C:
		}
		j, err := c.Job(ctx, id)
		switch {
		case err != nil:
		case j.Terminal():
			return false
		case ready(j):
			return true
		}
	}
}

// overridden reports whether any spec flag was set.
func overridden(fs *pflag.FlagSet) bool {
	for _, sf := range specFlags {
		if fs.Changed(sf.flag) {
			return true
		}
	}
	return false
}

// applySpecFlags copies the flags the user set into the spec.
func applySpecFlags(fs *pflag.FlagSet, spec map[string]any) error {
	for _, sf := range specFlags {
		if !fs.Changed(sf.flag) {
			continue
		}
		var v any
		var err error
		switch sf.kind {
		case "int":
			v, err = fs.GetInt(sf.flag)
		case "float":
			v, err = fs.GetFloat64(sf.flag)
		case "bool":
			v, err = fs.GetBool(sf.flag)
		case "list":
			v, err = fs.GetStringSlice(sf.flag)
		case "ints":
			v, err = fs.GetIntSlice(sf.flag)
		default:
			v, err = fs.GetString(sf.flag)
		}
		if err != nil {
			return err
		}
		spec[sf.field] = v
	}
	return nil
}
