package provider

import (
	"sync"
	"time"
)

// firmHolds are the provider's only reservations before an award. A plain
// bid holds nothing: it is an offer subject to availability, re-checked
// when the award comes, so a renter that asks for everything and never
// awards keeps no GPU from anyone. A renter this provider holds a paid
// receipt from (evidence that it awards and pays) gets its bid's GPUs
// reserved, for at most ttl (the provider's cap, whatever the renter's
// bid window) and on at most perRenter GPUs at once.
//
// The bidder changes holds under its own lock; the advertiser only reads
// them (held), so firmHolds has its own lock and never calls out. A grant
// re-publishes the capacity record (its GPUs show held); an ended hold
// leaves the record at the advertiser's next inventory poll.
type firmHolds struct {
	ttl       time.Duration // provider.firm_hold; 0: no firm holds
	perRenter int           // provider.firm_hold_gpus
	now       func() time.Time

	mu sync.Mutex
	// gpus: GPU UUID -> the firm hold on it.
	gpus map[string]firmHold
	// paid: renters with a paid, receipted lease on this provider.
	paid map[string]bool
}

type firmHold struct {
	bidID  string
	renter string
	until  time.Time
}

func newFirmHolds(ttl time.Duration, perRenter int, now func() time.Time) *firmHolds {
	return &firmHolds{ttl: ttl, perRenter: perRenter, now: now, gpus: map[string]firmHold{}, paid: map[string]bool{}}
}

// notePaid records evidence: renter paid for a lease this provider
// receipted.
func (f *firmHolds) notePaid(renter string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.paid[renter] = true
}

// hasPaid reports whether renter paid for a lease this provider
// receipted.
func (f *firmHolds) hasPaid(renter string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.paid[renter]
}

// grant reserves up to the renter's remaining allowance of gpus for bidID
// until now + ttl (never past the bid's validity), and returns the GPUs
// it reserved: none for a renter without evidence, when firm holds are
// off, or when the renter's allowance is used up.
func (f *firmHolds) grant(renter, bidID string, gpus []string, now, validUntil time.Time) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ttl <= 0 || f.perRenter <= 0 || !f.paid[renter] {
		return nil
	}
	f.expireLocked(now)
	left := f.perRenter
	for _, h := range f.gpus {
		if h.renter == renter {
			left--
		}
	}
	until := now.Add(f.ttl)
	if validUntil.Before(until) {
		until = validUntil
	}
	var out []string
	for _, g := range gpus {
		if left <= 0 {
			break
		}
		if _, taken := f.gpus[g]; taken {
			continue
		}
		f.gpus[g] = firmHold{bidID: bidID, renter: renter, until: until}
		out = append(out, g)
		left--
	}
	return out
}

// heldBy is the bid holding g at now ("" when g is not held).
func (f *firmHolds) heldBy(g string, now time.Time) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if h, ok := f.gpus[g]; ok && now.Before(h.until) {
		return h.bidID
	}
	return ""
}

// held is the set of GPUs under firm hold at now.
func (f *firmHolds) held(now time.Time) map[string]bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]bool{}
	for g, h := range f.gpus {
		if now.Before(h.until) {
			out[g] = true
		}
	}
	return out
}

// heldNow is held at the provider's clock (what the advertiser shows).
func (f *firmHolds) heldNow() map[string]bool { return f.held(f.now()) }

// rekey moves the holds of bid from to bid to (a provisional ID becomes
// the sealed bid's record ID).
func (f *firmHolds) rekey(from, to string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for g, h := range f.gpus {
		if h.bidID == from {
			h.bidID = to
			f.gpus[g] = h
		}
	}
}

// release drops every hold of bidID.
func (f *firmHolds) release(bidID string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for g, h := range f.gpus {
		if h.bidID == bidID {
			delete(f.gpus, g)
		}
	}
}

// take drops the hold on g (it was committed to a lease).
func (f *firmHolds) take(g string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.gpus, g)
}

// expire drops holds past their end.
func (f *firmHolds) expire(now time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.expireLocked(now)
}

func (f *firmHolds) expireLocked(now time.Time) {
	for g, h := range f.gpus {
		if !now.Before(h.until) {
			delete(f.gpus, g)
		}
	}
}
