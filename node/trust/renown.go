package trust

import "sync"

// A renter is renowned when this node holds a receipt a provider it has
// evidence of (a backed record, now or before) issued to it: it paid for
// work somebody real did. Renowned renters get the higher RFQ rate
// (rfq_rate.go) and a full weight in the price index (prices.go). Keys
// are free; receipts from providers nobody checked are not evidence.

// renownEvery is how often, in seconds, the set is rebuilt from the
// stored receipts.
const renownEvery = 10

type renown struct {
	mu      sync.RWMutex
	renters map[string]bool
}

func newRenown() *renown { return &renown{renters: map[string]bool{}} }

// Renowned reports whether renter holds a receipt from a provider with
// evidence.
func (t *Trust) Renowned(renter string) bool {
	if renter == t.selfStr {
		return true
	}
	t.renown.mu.RLock()
	defer t.renown.mu.RUnlock()
	return t.renown.renters[renter]
}

// refreshRenown rebuilds the renowned renters from the stored receipts.
func (t *Trust) refreshRenown() {
	renters := map[string]bool{}
	self := t.selfStr
	for _, rc := range t.receiptEvidence() {
		if rc.Renter == rc.Provider || renters[rc.Renter] {
			continue
		}
		if rc.Provider == self || t.ev.of(rc.Provider).everBacked {
			renters[rc.Renter] = true
		}
	}
	t.renown.mu.Lock()
	t.renown.renters = renters
	t.renown.mu.Unlock()
}
