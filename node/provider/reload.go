package provider

import (
	"fmt"
	"reflect"
	"slices"
)

// LiveOfferKeys are the [provider] keys Reconfigure applies to a running
// provider: what the capacity record and the bids are built from at each
// use. The others (region, runtimes, holds, timers, host resources) are
// fixed at start.
var LiveOfferKeys = []string{"floor_usd", "calendar", "offer_gpus", "tiers", "max_duration", "allowed_images", "models", "models_dir"}

// reconfigure applies the live keys of next (see LiveOfferKeys) to the
// record and re-advertises; it returns the keys that changed, as
// "provider.KEY". A calendar that does not parse changes nothing.
func (a *advertiser) reconfigure(next OfferConfig) ([]string, error) {
	cal, err := ParseCalendar(next.Calendar)
	if err != nil {
		return nil, fmt.Errorf("calendar: %w", err)
	}
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
	diff("models", cur.Models, next.Models)
	diff("models_dir", cur.ModelsDir, next.ModelsDir)
	a.cfg.FloorUSD, a.cfg.Calendar, a.calendar = next.FloorUSD, slices.Clone(next.Calendar), cal
	a.cfg.OfferGPUs, a.cfg.Tiers = slices.Clone(next.OfferGPUs), slices.Clone(next.Tiers)
	a.cfg.MaxDuration, a.cfg.AllowedImages = next.MaxDuration, slices.Clone(next.AllowedImages)
	a.cfg.Models, a.cfg.ModelsDir = slices.Clone(next.Models), next.ModelsDir
	a.liveMu.Unlock()
	if len(changed) > 0 {
		a.signal()
	}
	return changed, nil
}
