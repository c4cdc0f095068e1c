package provider

import (
	"context"
	"fmt"
	"log/slog"
	"os/exec"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/idlegrid/idlegrid/auction"
)

// Pre-staging: a provider fetches the models many renters ask for into
// its models directory before it wins their work, so later auctions find
// it warm (auction/cold_start.go). The node does not download weights
// itself: the operator names a command (provider.prestage_command) that
// fetches a model by its ID from sources the operator trusts. Renters'
// keys are free, so what a flood of RFQs can make it fetch is bounded:
// a model needs prestage_min_renters distinct renters within a day, at
// most prestage_max_gib, at most prestage_per_day fetches a day, one at a
// time, each model tried at most once a day.

// Pre-staging bounds.
const (
	prestageWindow  = 24 * time.Hour
	prestageTimeout = 2 * time.Hour // one fetch
	prestageEvery   = time.Minute   // how often asks are looked at
)

// PrestageConfig is what pre-staging is bounded by (OfferConfig's
// prestage_* keys).
type PrestageConfig struct {
	// Command is the argv run to fetch a model; the model ID, its size in
	// MiB and the models directory are appended. Empty: off.
	Command    []string
	MinRenters int
	MaxGiB     int
	PerDay     int
}

func prestageConfig(o OfferConfig) PrestageConfig {
	return PrestageConfig{Command: o.PrestageCommand, MinRenters: o.PrestageMinRenters, MaxGiB: o.PrestageMaxGiB, PerDay: o.PrestagePerDay}
}

// prestager keeps the record of asks and runs the fetch command for the
// popular models this host does not hold.
type prestager struct {
	prestagerDeps
	mu    sync.Mutex
	asks  *auction.ModelAsks
	tried map[string]time.Time // model ID -> last fetch started
	runs  []time.Time          // fetches started within the window
}

type prestagerDeps struct {
	log  *slog.Logger
	now  func() time.Time
	cfg  PrestageConfig
	dir  string // provider.models_dir
	held func() []string
	// fetched re-publishes the record once a model landed.
	fetched func()
	// command runs argv (os/exec by default; tests replace it).
	command func(ctx context.Context, argv []string) error
}

func newPrestager(d prestagerDeps) *prestager {
	if d.command == nil {
		d.command = func(ctx context.Context, argv []string) error {
			out, err := exec.CommandContext(ctx, argv[0], argv[1:]...).CombinedOutput()
			if err != nil {
				return fmt.Errorf("%w: %s", err, tail(out, 512))
			}
			return nil
		}
	}
	return &prestager{prestagerDeps: d, asks: auction.NewModelAsks(), tried: map[string]time.Time{}}
}

func (p *prestager) enabled() bool { return p != nil && len(p.cfg.Command) > 0 && p.dir != "" }

// noteRFQ records the model an RFQ asks for.
func (p *prestager) noteRFQ(rfq *auction.RFQ) {
	if !p.enabled() || rfq.Model == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.asks.Note(*rfq.Model, rfq.Renter, p.now())
}

// run looks at the asks every prestageEvery until ctx ends.
func (p *prestager) run(ctx context.Context) {
	if !p.enabled() {
		return
	}
	t := time.NewTicker(prestageEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			p.fetchOne(ctx)
		}
	}
}

// fetchOne fetches the most asked model not held, not tried within the
// window, if the day's budget allows; it reports the model it fetched.
func (p *prestager) fetchOne(ctx context.Context) (string, error) {
	now := p.now()
	held := p.held()
	p.mu.Lock()
	p.runs = slices.DeleteFunc(p.runs, func(t time.Time) bool { return now.Sub(t) >= prestageWindow })
	if len(p.runs) >= p.cfg.PerDay {
		p.mu.Unlock()
		return "", nil
	}
	var pick *auction.ModelRef
	for _, a := range p.asks.Popular(now, prestageWindow, p.cfg.MinRenters, uint64(p.cfg.MaxGiB)<<10) {
		if last, ok := p.tried[a.Model.ID]; slices.Contains(held, a.Model.ID) || ok && now.Sub(last) < prestageWindow {
			continue
		}
		pick = &a.Model
		break
	}
	if pick == nil {
		p.mu.Unlock()
		return "", nil
	}
	p.tried[pick.ID] = now
	p.runs = append(p.runs, now)
	for id, t := range p.tried { // bounded by the asks' models
		if now.Sub(t) >= prestageWindow {
			delete(p.tried, id)
		}
	}
	p.mu.Unlock()

	argv := append(slices.Clone(p.cfg.Command), pick.ID, strconv.FormatUint(pick.SizeMiB, 10), p.dir)
	fctx, cancel := context.WithTimeout(ctx, prestageTimeout)
	defer cancel()
	p.log.Info("pre-staging a model renters ask for", "model", pick.ID, "size_mib", pick.SizeMiB)
	if err := p.command(fctx, argv); err != nil {
		p.log.Warn("pre-staging failed", "model", pick.ID, "err", err)
		return "", fmt.Errorf("pre-stage %s: %w", pick.ID, err)
	}
	if p.fetched != nil {
		p.fetched()
	}
	return pick.ID, nil
}

// tail is the last n bytes of b, for an error message.
func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
