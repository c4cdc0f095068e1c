package provider

import (
	"fmt"
	"reflect"
	"slices"
	"sync"

	"github.com/idlegrid/idlegrid/node/costs"
)

// LiveOfferKeys are the [provider] keys Reconfigure applies to a running
// provider: what the capacity record and the bids are built from at each
// use. The others (region, runtimes, holds, timers, host resources) are
// fixed at start.
var LiveOfferKeys = []string{"floor_usd", "calendar", "offer_gpus", "tiers", "max_duration", "allowed_images"}

// liveConfig holds what a reload replaced outside the advertiser.
type liveConfig struct {
	mu    sync.Mutex
	costs *costs.Config
}

// Reconfigure applies the live keys of next (see LiveOfferKeys) and
// re-advertises; it returns the keys that changed, as "provider.KEY". A
// calendar that does not parse changes nothing.
func (p *Provider) Reconfigure(next OfferConfig) ([]string, error) {
	cal, err := ParseCalendar(next.Calendar)
	if err != nil {
		return nil, fmt.Errorf("provider.Reconfigure: calendar: %w", err)
	}
	a := p.adv
	a.liveMu.Lock()
	cur := a.cfg
	var changed []string
	diff := func(key string, x, y any) {
		if !reflect.DeepEqual(x, y) {
			changed = append(changed, "provider."+key)
		}
	}
	diff("floor_usd", cur.FloorUSD, next.FloorUSD)
	diff("calendar", cur.Calendar, next.Calendar)
	diff("offer_gpus", cur.OfferGPUs, next.OfferGPUs)
	diff("tiers", cur.Tiers, next.Tiers)
	diff("max_duration", cur.MaxDuration, next.MaxDuration)
	diff("allowed_images", cur.AllowedImages, next.AllowedImages)
	a.cfg.FloorUSD, a.cfg.Calendar, a.calendar = next.FloorUSD, slices.Clone(next.Calendar), cal
	a.cfg.OfferGPUs, a.cfg.Tiers = slices.Clone(next.OfferGPUs), slices.Clone(next.Tiers)
	a.cfg.MaxDuration, a.cfg.AllowedImages = next.MaxDuration, slices.Clone(next.AllowedImages)
	a.liveMu.Unlock()
	if len(changed) > 0 {
		p.log.Info("provider reconfigured", "keys", changed)
		a.signal()
	}
	return changed, nil
}

// SetCosts replaces the [costs] that Earnings prices with.
func (p *Provider) SetCosts(c costs.Config) error {
	if _, err := costs.NewModel(c); err != nil {
		return fmt.Errorf("provider.SetCosts: %w", err)
	}
	p.live.mu.Lock()
	p.live.costs = &c
	p.live.mu.Unlock()
	return nil
}

// costsConfig is the [costs] in force.
func (p *Provider) costsConfig() costs.Config {
	p.live.mu.Lock()
	defer p.live.mu.Unlock()
	if p.live.costs != nil {
		return *p.live.costs
	}
	return p.cfg.Costs
}
