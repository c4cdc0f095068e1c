package auction

import (
	"cmp"
	"container/heap"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/idlegrid/idlegrid/attest"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
)

// auctionMessage is what every auction message type implements.
type auctionMessage interface {
	attest.Payload
	Validate() error
}

// sealMessage validates m, checks that key belongs to owner (the peer the
// message names as its author) and signs it. A node never signs a message
// it would refuse to open, nor one that speaks for another peer.
func sealMessage(op string, m auctionMessage, owner string, key crypto.PrivKey) ([]byte, error) {
	if key == nil {
		return nil, fmt.Errorf("auction.%s: nil key", op)
	}
	if err := m.Validate(); err != nil {
		return nil, fmt.Errorf("auction.%s: %w", op, err)
	}
	id, err := peer.IDFromPrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("auction.%s: %w", op, err)
	}
	if id.String() != owner {
		return nil, fmt.Errorf("auction.%s: %w: key is %s, message names %s", op, ErrNotOwner, id, owner)
	}
	raw, err := attest.Seal(m, key)
	if err != nil {
		return nil, fmt.Errorf("auction.%s: %w", op, err)
	}
	return raw, nil
}

// openMessage is attest.Open at limit, then structural validation, then
// signer == owner(m). It does not look at the clock.
func openMessage[T any, P interface {
	*T
	auctionMessage
}](op string, raw []byte, limit int, owner func(*T) string) (*T, peer.ID, error) {
	m, signer, err := attest.Open[T, P](raw, limit)
	if err != nil {
		return nil, "", fmt.Errorf("auction.%s: %w", op, err)
	}
	if err := P(m).Validate(); err != nil {
		return nil, "", fmt.Errorf("auction.%s: %w", op, err)
	}
	if named := owner(m); signer.String() != named {
		return nil, "", fmt.Errorf("auction.%s: %w: signed by %s, message names %s", op, ErrNotOwner, signer, named)
	}
	return m, signer, nil
}

var errNilMessage = errors.New("nil message")

// SealRFQ validates r and signs it with key, which must be r.Renter's.
func SealRFQ(r *RFQ, key crypto.PrivKey) ([]byte, error) {
	if r == nil {
		return nil, fmt.Errorf("auction.SealRFQ: %w", errNilMessage)
	}
	return sealMessage("SealRFQ", r, r.Renter, key)
}

// OpenRFQ verifies and decodes a sealed RFQ (at most MaxRFQSize bytes),
// validates it and checks that the signer is r.Renter. The caller checks
// expiry (Expired) and replay (SeenCache).
func OpenRFQ(raw []byte) (*RFQ, peer.ID, error) {
	return openMessage[RFQ]("OpenRFQ", raw, MaxRFQSize, func(r *RFQ) string { return r.Renter })
}

// SealBid validates b and signs it with key, which must be b.Provider's.
func SealBid(b *Bid, key crypto.PrivKey) ([]byte, error) {
	if b == nil {
		return nil, fmt.Errorf("auction.SealBid: %w", errNilMessage)
	}
	return sealMessage("SealBid", b, b.Provider, key)
}

// OpenBid verifies and decodes a sealed bid (at most MaxBidSize bytes),
// validates it and checks that the signer is b.Provider.
func OpenBid(raw []byte) (*Bid, peer.ID, error) {
	return openMessage[Bid]("OpenBid", raw, MaxBidSize, func(b *Bid) string { return b.Provider })
}

// SealAward validates a and signs it with key, which must be a.Renter's.
func SealAward(a *Award, key crypto.PrivKey) ([]byte, error) {
	if a == nil {
		return nil, fmt.Errorf("auction.SealAward: %w", errNilMessage)
	}
	return sealMessage("SealAward", a, a.Renter, key)
}

// OpenAward verifies and decodes a sealed award (at most MaxAwardSize
// bytes), validates it and checks that the signer is a.Renter.
func OpenAward(raw []byte) (*Award, peer.ID, error) {
	return openMessage[Award]("OpenAward", raw, MaxAwardSize, func(a *Award) string { return a.Renter })
}

// SealLeaseAcceptance validates l and signs it with key, which must be
// l.Provider's.
func SealLeaseAcceptance(l *LeaseAcceptance, key crypto.PrivKey) ([]byte, error) {
	if l == nil {
		return nil, fmt.Errorf("auction.SealLeaseAcceptance: %w", errNilMessage)
	}
	return sealMessage("SealLeaseAcceptance", l, l.Provider, key)
}

// OpenLeaseAcceptance verifies and decodes a sealed acceptance (at most
// MaxAcceptSize bytes), validates it and checks that the signer is
// l.Provider.
func OpenLeaseAcceptance(raw []byte) (*LeaseAcceptance, peer.ID, error) {
	return openMessage[LeaseAcceptance]("OpenLeaseAcceptance", raw, MaxAcceptSize,
		func(l *LeaseAcceptance) string { return l.Provider })
}

// SealDecline validates d and signs it with key, which must be
// d.Provider's.
func SealDecline(d *Decline, key crypto.PrivKey) ([]byte, error) {
	if d == nil {
		return nil, fmt.Errorf("auction.SealDecline: %w", errNilMessage)
	}
	return sealMessage("SealDecline", d, d.Provider, key)
}

// OpenDecline verifies and decodes a sealed decline (at most
// MaxDeclineSize bytes), validates it and checks that the signer is
// d.Provider.
func OpenDecline(raw []byte) (*Decline, peer.ID, error) {
	return openMessage[Decline]("OpenDecline", raw, MaxDeclineSize, func(d *Decline) string { return d.Provider })
}

// SealPreemptNotice validates n and signs it with key, which must be
// n.Provider's.
func SealPreemptNotice(n *PreemptNotice, key crypto.PrivKey) ([]byte, error) {
	if n == nil {
		return nil, fmt.Errorf("auction.SealPreemptNotice: %w", errNilMessage)
	}
	return sealMessage("SealPreemptNotice", n, n.Provider, key)
}

// OpenPreemptNotice verifies and decodes a sealed preemption notice (at
// most MaxPreemptSize bytes), validates it and checks that the signer is
// n.Provider.
func OpenPreemptNotice(raw []byte) (*PreemptNotice, peer.ID, error) {
	return openMessage[PreemptNotice]("OpenPreemptNotice", raw, MaxPreemptSize,
		func(n *PreemptNotice) string { return n.Provider })
}

// SealAwardSummary validates s and signs it with key, which must be
// s.Renter's.
func SealAwardSummary(s *AwardSummary, key crypto.PrivKey) ([]byte, error) {
	if s == nil {
		return nil, fmt.Errorf("auction.SealAwardSummary: %w", errNilMessage)
	}
	return sealMessage("SealAwardSummary", s, s.Renter, key)
}

// OpenAwardSummary verifies and decodes a sealed award summary (at most
// MaxSummarySize bytes), validates it, checks that the signer is s.Renter
// and that the lease it carries backs it (checkLease).
func OpenAwardSummary(raw []byte) (*AwardSummary, peer.ID, error) {
	s, signer, err := openMessage[AwardSummary]("OpenAwardSummary", raw, MaxSummarySize,
		func(s *AwardSummary) string { return s.Renter })
	if err != nil {
		return nil, "", err
	}
	if err := s.checkLease(); err != nil {
		return nil, "", fmt.Errorf("auction.OpenAwardSummary: %w", err)
	}
	return s, signer, nil
}

// SummaryOfLease builds the award summary of a lease from its two sealed
// halves (the award and the provider's acceptance), the model of the
// winning bid, the auction's bidders (Bidders) and the time now. The
// renter seals it (SealAwardSummary).
func SummaryOfLease(awardEnv, acceptEnv []byte, model string, bidders []string, now time.Time) (*AwardSummary, error) {
	aw, _, err := OpenAward(awardEnv)
	if err != nil {
		return nil, fmt.Errorf("auction.SummaryOfLease: %w", err)
	}
	acc, _, err := OpenLeaseAcceptance(acceptEnv)
	if err != nil {
		return nil, fmt.Errorf("auction.SummaryOfLease: %w", err)
	}
	s := &AwardSummary{
		V: MessagesVersion, Renter: aw.Renter, Provider: aw.Provider, Award: attest.RecordID(awardEnv).String(),
		RFQ: aw.RFQ, Model: model, Tier: aw.Tier, GPUs: uint32(len(acc.GPUs)), PriceMicro: aw.PriceMicro,
		AtMs: now.UnixMilli(), AwardEnv: awardEnv, AcceptEnv: acceptEnv, Bidders: bidders,
	}
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("auction.SummaryOfLease: %w", err)
	}
	if err := s.checkLease(); err != nil {
		return nil, fmt.Errorf("auction.SummaryOfLease: %w", err)
	}
	return s, nil
}

// Bidders lists the providers of bids for an award summary: the cheapest
// MaxSummaryBidders, sorted by peer ID, each once.
func Bidders(bids []*Bid) []string {
	sorted := slices.Clone(bids)
	slices.SortStableFunc(sorted, func(a, b *Bid) int { return cmp.Compare(a.PriceMicro, b.PriceMicro) })
	var out []string
	for _, b := range sorted {
		if len(out) == MaxSummaryBidders {
			break
		}
		if !slices.Contains(out, b.Provider) {
			out = append(out, b.Provider)
		}
	}
	slices.Sort(out)
	return out
}

// ErrSummaryUnbacked: an award summary's award or acceptance is not the
// lease it reports (a different price, renter, provider or award, a bad
// signature).
var ErrSummaryUnbacked = errors.New("award summary not backed by its lease")

// checkLease checks that s reports the lease it carries: the award is
// signed by the renter, is the record s.Award names, and states the
// summary's provider, RFQ, tier and price; the acceptance is the
// provider's, of that award, for s.GPUs GPUs. Two keys signed the lease,
// so a summary needs both parties; the model is the renter's word (it is
// in the bid, which the summary does not carry).
func (s *AwardSummary) checkLease() error {
	aw, _, err := OpenAward(s.AwardEnv)
	if err != nil {
		return fmt.Errorf("%w: award: %w", ErrSummaryUnbacked, err)
	}
	switch {
	case attest.RecordID(s.AwardEnv).String() != s.Award:
		return fmt.Errorf("%w: the award is not record %s", ErrSummaryUnbacked, s.Award)
	case aw.Renter != s.Renter || aw.Provider != s.Provider:
		return fmt.Errorf("%w: the award is between other parties", ErrSummaryUnbacked)
	case aw.RFQ != s.RFQ || aw.Tier != s.Tier || aw.PriceMicro != s.PriceMicro:
		return fmt.Errorf("%w: the award's rfq, tier or price differ", ErrSummaryUnbacked)
	}
	acc, _, err := OpenLeaseAcceptance(s.AcceptEnv)
	if err != nil {
		return fmt.Errorf("%w: acceptance: %w", ErrSummaryUnbacked, err)
	}
	if acc.Provider != s.Provider || acc.Award != s.Award || len(acc.GPUs) != int(s.GPUs) {
		return fmt.Errorf("%w: the acceptance is not of this award for %d GPUs", ErrSummaryUnbacked, s.GPUs)
	}
	return nil
}

// Expired reports whether the RFQ has expired at now.
func (r *RFQ) Expired(now time.Time) bool { return now.UnixMilli() >= r.ExpiresAtMs }

// Expired reports whether the bid's validity (and its hold on the GPUs)
// has ended at now.
func (b *Bid) Expired(now time.Time) bool { return now.UnixMilli() >= b.ValidUntilMs }

// Expired reports whether the award can no longer be countersigned at now.
func (a *Award) Expired(now time.Time) bool { return now.UnixMilli() >= a.ExpiresAtMs }

// SeenCache is a bounded replay guard: it remembers message IDs until the
// message expires, so a replayed RFQ or award is recognised, and it never
// holds more than max IDs, so a flood of valid messages cannot exhaust
// memory. It has no clock of its own and is safe for concurrent use
// (gossipsub runs topic validators concurrently).
type SeenCache struct {
	mu  sync.Mutex
	max int
	ids map[string]struct{}
	exp seenHeap // the same IDs, soonest expiry first
}

// NewSeenCache returns a cache holding at most max IDs. max < 1 is a
// programming error and panics.
func NewSeenCache(max int) *SeenCache {
	if max < 1 {
		panic(fmt.Sprintf("auction.NewSeenCache: max %d < 1", max))
	}
	return &SeenCache{max: max, ids: make(map[string]struct{})}
}

// Seen reports whether id was recorded before and has not yet expired,
// and records it until expiresAtMs otherwise. A message already expired at
// now is not recorded (callers reject expired messages before asking).
// When full, the ID closest to expiry is dropped first: it would have
// protected for the shortest time anyway.
func (c *SeenCache) Seen(id string, expiresAtMs int64, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	nowMs := now.UnixMilli()
	for len(c.exp) > 0 && c.exp[0].expiresAtMs <= nowMs {
		c.drop()
	}
	if _, ok := c.ids[id]; ok {
		return true
	}
	if expiresAtMs <= nowMs {
		return false
	}
	for len(c.exp) >= c.max {
		c.drop()
	}
	c.ids[id] = struct{}{}
	heap.Push(&c.exp, seenEntry{id: id, expiresAtMs: expiresAtMs})
	return false
}

// Len returns the number of IDs held.
func (c *SeenCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.exp)
}

// drop forgets the ID that expires soonest.
func (c *SeenCache) drop() {
	e := heap.Pop(&c.exp).(seenEntry)
	delete(c.ids, e.id)
}

type seenEntry struct {
	id          string
	expiresAtMs int64
}

// seenHeap is a min-heap of entries by expiry (container/heap).
type seenHeap []seenEntry

func (h seenHeap) Len() int           { return len(h) }
func (h seenHeap) Less(i, j int) bool { return h[i].expiresAtMs < h[j].expiresAtMs }
func (h seenHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *seenHeap) Push(x any)        { *h = append(*h, x.(seenEntry)) }
func (h *seenHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}
