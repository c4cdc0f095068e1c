package renter

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/idlegrid/idlegrid/auction"
)

// Submit-time refusals: the job could never be filled as written, so
// nothing is posted. Both are the user's to fix.
var (
	// ErrMissingArtifact: a WASM job names a module this renter does not
	// hold, so no provider could fetch it.
	ErrMissingArtifact = errors.New("this renter does not hold the job's WASM module")
	// ErrUnknownModel: a job names a GPU model no card has.
	ErrUnknownModel = errors.New("unknown GPU model")
)

// viewTimeout bounds the market-view reads of a submit and of an unfilled
// auction's explanation: both are advice, not worth a slow DHT walk.
const viewTimeout = 3 * time.Second

// precheck refuses, before any RFQ is posted, a job whose artifacts this
// renter cannot serve or whose GPU model names no card. A lease would
// otherwise be awarded and signed only to fail at the provider.
func (s *submitter) precheck(ctx context.Context, spec *auction.JobSpec) error {
	rfq, err := spec.RFQ(s.self, make([]byte, 16), s.now())
	if err != nil {
		return err
	}
	if rfq.Runtime == auction.RuntimeWasm && rfq.Module != "" && s.artifacts != nil && !s.artifacts.Has(rfq.Module) {
		return fmt.Errorf("%w %s: add the file with `idlegrid artifact add FILE` (it prints the CID to use)", ErrMissingArtifact, rfq.Module)
	}
	if m := spec.VerifierModule(); m != "" && s.artifacts != nil && !s.artifacts.Has(m) {
		return fmt.Errorf("%w %s (the verifier module): add the file with `idlegrid artifact add FILE` (it prints the CID to use)", ErrMissingArtifact, m)
	}
	var offered []string
	viewRead := false
	for _, m := range rfq.Resources.Models {
		if !auction.UnknownGPUModel(m, nil) {
			continue
		}
		// Not a card we know of: maybe a provider offers it anyway.
		if !viewRead {
			offered, viewRead = s.offeredModels(ctx), true
		}
		if !auction.UnknownGPUModel(m, offered) {
			continue
		}
		// Offered families first: of two names one typo away ("h10":
		// a10, h100), the one on this market is the likelier meant.
		candidates := append(families(offered), auction.KnownGPUFamilies...)
		msg := fmt.Sprintf("%q names no GPU this renter knows of or sees offered", m)
		if sug, ok := auction.Closest(m, candidates); ok {
			msg += fmt.Sprintf(" (did you mean %q?)", sug)
		}
		if len(offered) > 0 {
			msg += "; offered now: " + strings.Join(families(offered), ", ")
		}
		return fmt.Errorf("%w: %s", ErrUnknownModel, msg)
	}
	return nil
}

// offeredModels returns the GPU model slugs of the renter's market view
// (empty when it cannot be read quickly).
func (s *submitter) offeredModels(ctx context.Context) []string {
	ctx, cancel := context.WithTimeout(ctx, viewTimeout)
	defer cancel()
	offers, _ := s.offers(ctx)
	var out []string
	for _, o := range offers {
		if o.Capacity == nil {
			continue
		}
		for _, g := range o.Capacity.GPUs {
			out = append(out, g.Model)
		}
	}
	return out
}

func families(models []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, m := range models {
		if f := auction.GPUFamily(m); !seen[f] {
			seen[f] = true
			out = append(out, f)
		}
	}
	return out
}
