package provider

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node/gpu"
	"github.com/idlegrid/idlegrid/p2p"
	"github.com/idlegrid/idlegrid/store"
)

// Errors of the GPU lease seam.
var (
	ErrUnknownGPU    = errors.New("no such offered GPU")
	ErrGPULeased     = errors.New("GPU is already leased")
	ErrNotAdvertiser = errors.New("this node does not advertise capacity")
)

// inventoryPoll is how often the advertiser re-reads the GPU backend to
// notice a device that vanished or failed.
const inventoryPoll = 30 * time.Second

// provideTimeout bounds the announcement of one capability key (a DHT
// lookup and a put to each closest peer) within a publish's minute, so
// that one slow key cannot use up the time of all the others.
const provideTimeout = 20 * time.Second

// capacityPutGap is the least time between two puts of the capacity
// record. Every node takes at most p2p's DHTPutRate (2/s, burst 20) PUTs
// from one peer and charges the excess as abuse; a provider with short
// leases changes its record several times a second, and putting each
// change had all its closest peers charge it until gossipsub's score cut
// it off from RFQs (docs/benchmarks.md, "The busy provider cut off").
// Changes within the gap go out together in the next put, a quarter of
// the rate the peers allow, so retries and republishing stay inside it.
const capacityPutGap = 2 * time.Second

// errAnnounce marks a publish whose record is out but some of whose
// capability keys are not: it is retried with backoff like a failed put,
// because a provider whose provider key is not announced cannot be found
// by any renter until it is.
var errAnnounce = errors.New("announcing capability keys")

// advertiser keeps this provider's signed capacity record in the DHT and
// its capability keys announced. It re-puts when a GPU is leased or freed
// or the device list changes (at most once per capacityPutGap), and on a
// timer shorter than the record's TTL.
type advertiser struct {
	advertiserDeps
	self    peer.ID
	changed wakeup

	// liveMu guards cfg and the calendar, which reconfigure changes on a
	// running provider (reload.go).
	liveMu   sync.RWMutex
	cfg      OfferConfig
	calendar []auction.Window

	mu       sync.Mutex
	leases   map[string]string // GPU UUID -> lease ID
	current  *auction.Capacity
	sealed   []byte // current, as signed and put
	provided map[cid.Cid]time.Time
	// slugs keeps each device's model slug: the record is built on every
	// RFQ (to decide whether to bid and to quote), and the slug's parsing
	// was a third of a build.
	slugs deviceSlugs
}

// deviceSlugs memoizes gpu.ModelSlug for this host's devices (a few
// names; bounded all the same).
type deviceSlugs map[deviceName]string

type deviceName struct {
	name      string
	memoryMiB uint64
}

// maxDeviceSlugs bounds deviceSlugs: far more models than one host has.
const maxDeviceSlugs = 64

// of is the model slug of a device; callers hold the advertiser's mu.
func (s *deviceSlugs) of(name string, memoryMiB uint64) string {
	k := deviceName{name, memoryMiB}
	if slug, ok := (*s)[k]; ok {
		return slug
	}
	if *s == nil || len(*s) >= maxDeviceSlugs {
		*s = deviceSlugs{}
	}
	slug := gpu.ModelSlug(name, memoryMiB)
	(*s)[k] = slug
	return slug
}

// advertiserDeps are what the advertiser builds the record from and whom
// it tells of a change.
type advertiserDeps struct {
	log  *slog.Logger
	now  func() time.Time
	key  crypto.PrivKey
	p2p  *p2p.Node
	db   *store.DB
	gpus gpu.Backend
	// host is the machine around the GPUs (hostFacts).
	host    auction.Host
	version string
	// firmHeld are the GPUs under firm hold now (shown as held).
	firmHeld func() map[string]bool
	// cpuOffer is the CPU share with what is free of it now; nil: none.
	cpuOffer func() *auction.CPUOffer
	// fingerprintID is the record ID of the hardware fingerprint in force
	// in the chain (the attestor); nil or "": none.
	fingerprintID func() string
	// onChange is called when a GPU is leased or freed and after each
	// record published (the digester gossips the change); may be nil.
	onChange func()
}

// newAdvertiser advertises offer.
func newAdvertiser(offer OfferConfig, d advertiserDeps) (*advertiser, error) {
	cal, err := ParseCalendar(offer.Calendar)
	if err != nil {
		return nil, fmt.Errorf("provider calendar: %w", err)
	}
	a := &advertiser{
		advertiserDeps: d, self: d.p2p.ID(), changed: newWakeup(), cfg: offer, calendar: cal,
		leases: map[string]string{}, provided: map[cid.Cid]time.Time{},
	}
	// Fail at start, not at the first publish, on a record that could
	// never validate (no GPUs and no runtime, bad dataset CID, ...).
	if _, err := a.build(1); err != nil {
		return nil, err
	}
	return a, nil
}

// heldModels lists the models this host holds now (models.go).
func (a *advertiser) heldModels() []string {
	a.liveMu.RLock()
	cfg := a.cfg
	a.liveMu.RUnlock()
	return heldModels(cfg, a.log)
}

// Lease marks an offered GPU as leased and re-advertises.
func (a *advertiser) Lease(uuid, leaseID string) error {
	if leaseID == "" {
		return errors.New("lease GPU: empty lease ID")
	}
	if err := a.checkOffered(uuid); err != nil {
		return err
	}
	a.mu.Lock()
	if cur, ok := a.leases[uuid]; ok && cur != leaseID {
		a.mu.Unlock()
		return fmt.Errorf("lease GPU %s: %w (lease %s)", uuid, ErrGPULeased, cur)
	}
	a.leases[uuid] = leaseID
	a.mu.Unlock()
	a.signal()
	return nil
}

// Release frees a leased GPU and re-advertises.
func (a *advertiser) Release(uuid string) error {
	a.mu.Lock()
	_, ok := a.leases[uuid]
	delete(a.leases, uuid)
	a.mu.Unlock()
	if !ok {
		return fmt.Errorf("release GPU %s: %w", uuid, ErrUnknownGPU)
	}
	a.signal()
	return nil
}

// leaseOf returns the lease holding a GPU ("" when free).
func (a *advertiser) leaseOf(uuid string) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.leases[uuid]
}

func (a *advertiser) checkOffered(uuid string) error {
	devs, _ := a.gpus.Devices()
	for _, d := range a.offered(devs) {
		if d.UUID == uuid {
			return nil
		}
	}
	return fmt.Errorf("lease GPU %s: %w", uuid, ErrUnknownGPU)
}

// signal re-advertises soon (the record changed).
func (a *advertiser) signal() {
	a.changed.notify()
	if a.onChange != nil {
		a.onChange()
	}
}

// Current returns the last published record (nil before the first).
func (a *advertiser) Current() *auction.Capacity {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.current
}

// Sealed returns the last published record as signed (nil before the
// first).
func (a *advertiser) Sealed() []byte {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.sealed
}

// offered filters devices by provider.offer_gpus (UUIDs or indices).
func (a *advertiser) offered(devs []gpu.Device) []gpu.Device {
	a.liveMu.RLock()
	ids := a.cfg.OfferGPUs
	a.liveMu.RUnlock()
	if len(ids) == 0 {
		return devs
	}
	var out []gpu.Device
	for _, d := range devs {
		if slices.Contains(ids, d.UUID) || slices.Contains(ids, strconv.Itoa(d.Index)) {
			out = append(out, d)
		}
	}
	return out
}

// build assembles the record for seq from the GPU backend, the leases and
// the config, and validates it.
func (a *advertiser) build(seq uint64) (*auction.Capacity, error) {
	devs, err := a.gpus.Devices()
	if err != nil {
		// Partial results are usable: a lost GPU must not hide the rest.
		a.log.Warn("reading GPUs", "err", err)
	}
	a.liveMu.RLock()
	cfg, calendar := a.cfg, a.calendar
	a.liveMu.RUnlock()
	now := a.now()
	c := &auction.Capacity{
		V:            auction.CapacityVersion,
		Peer:         a.self.String(),
		Seq:          seq,
		IssuedAtMs:   now.UnixMilli(),
		ExpiresAtMs:  now.Add(cfg.RecordTTL).UnixMilli(),
		Host:         a.host,
		Region:       auction.Region{Country: cfg.Region, Zone: cfg.Zone},
		Reachability: a.reachability(),
		Runtimes:     slices.Clone(cfg.Runtimes),
		Calendar:     calendar,
		Policy: auction.Policy{
			MaxDurationSec: uint64(cfg.MaxDuration / time.Second),
			AllowedImages:  slices.Clone(cfg.AllowedImages),
			Egress:         cfg.Egress,
		},
		Datasets: slices.Clone(cfg.Datasets),
		Models:   heldModels(cfg, a.log),
		Version:  a.version,
	}
	if a.fingerprintID != nil {
		c.FingerprintID = a.fingerprintID()
	}
	for _, t := range cfg.Tiers {
		tier := auction.Tier(t)
		c.Policy.Tiers = append(c.Policy.Tiers, tier)
		micro := USDToMicro(cfg.FloorUSD.For(tier))
		switch tier {
		case auction.TierGold:
			c.Floor.Gold = micro
		case auction.TierSilver:
			c.Floor.Silver = micro
		case auction.TierBronze:
			c.Floor.Bronze = micro
		}
	}
	if a.cpuOffer != nil {
		c.CPU = a.cpuOffer()
	}
	held := a.firmHeld()
	a.mu.Lock()
	for _, d := range a.offered(devs) {
		lease := a.leases[d.UUID]
		c.GPUs = append(c.GPUs, auction.GPU{
			Index:      uint32(d.Index),
			UUID:       d.UUID,
			Model:      a.slugs.of(d.Name, d.MemoryMiB),
			Name:       d.Name,
			VRAMMiB:    d.MemoryMiB,
			ComputeCap: fmt.Sprintf("%d.%d", d.ComputeMajor, d.ComputeMinor),
			Free:       lease == "",
			LeaseID:    lease,
			Held:       lease == "" && held[d.UUID],
		})
	}
	a.mu.Unlock()
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("build capacity record: %w", err)
	}
	return c, nil
}

// reachability says how renters can dial us, from the p2p layer's
// verdict: an address AutoNAT has not confirmed does not make us public.
func (a *advertiser) reachability() auction.Reachability {
	switch a.p2p.Reachability().State {
	case p2p.ReachPublic:
		return auction.ReachPublic
	case p2p.ReachRelayed:
		return auction.ReachRelayed
	}
	return auction.ReachPrivate
}

// sameOffer reports whether two records offer the same thing (ignoring
// sequence number and timestamps).
func sameOffer(x, y *auction.Capacity) bool {
	if x == nil || y == nil {
		return false
	}
	a, b := *x, *y
	a.Seq, a.IssuedAtMs, a.ExpiresAtMs = 0, 0, 0
	b.Seq, b.IssuedAtMs, b.ExpiresAtMs = 0, 0, 0
	return reflect.DeepEqual(a, b)
}

// publish signs and puts a new record with a sequence number above any
// this node used before (persisted first, so a crash cannot reuse one),
// then announces capability keys not announced recently.
func (a *advertiser) publish(ctx context.Context) error {
	last, err := a.db.CapacitySeq()
	if err != nil {
		return err
	}
	// The clock keeps sequence numbers rising even if the store was lost.
	seq := max(last+1, uint64(a.now().UnixMilli()))
	rec, err := a.build(seq)
	if err != nil {
		return err
	}
	raw, err := auction.SealCapacity(rec, a.key)
	if err != nil {
		return fmt.Errorf("seal capacity record: %w", err)
	}
	if err := a.db.SetCapacitySeq(seq); err != nil {
		return err
	}
	if err := a.p2p.DHT().PutValue(ctx, auction.CapacityKey(a.self), raw); err != nil {
		return fmt.Errorf("put capacity record: %w", err)
	}
	a.mu.Lock()
	a.current, a.sealed = rec, raw
	a.mu.Unlock()
	a.log.Info("capacity published", "seq", seq, "gpus", len(rec.GPUs), "free", rec.FreeGPUs())
	if a.onChange != nil {
		a.onChange()
	}
	if err := a.provide(ctx, rec); err != nil {
		return fmt.Errorf("%w: %w", errAnnounce, err)
	}
	return nil
}

// provide announces the record's capability keys, re-announcing each one
// once per republish interval (the DHT never republishes by itself). The
// provider key goes first: it is the one every market search starts from.
func (a *advertiser) provide(ctx context.Context, rec *auction.Capacity) error {
	keys := auction.CapabilityKeys(rec)
	if i := slices.Index(keys, auction.CapabilityCID(auction.CapabilityProvider)); i > 0 {
		keys[0], keys[i] = keys[i], keys[0]
	}
	var errs []error
	for _, k := range keys {
		a.mu.Lock()
		fresh := a.now().Sub(a.provided[k]) < a.cfg.Republish
		a.mu.Unlock()
		if fresh {
			continue
		}
		kctx, cancel := context.WithTimeout(ctx, provideTimeout)
		err := a.p2p.DHT().Provide(kctx, k, true)
		cancel()
		if err != nil {
			errs = append(errs, fmt.Errorf("provide %s: %w", k, err))
			continue
		}
		a.mu.Lock()
		a.provided[k] = a.now()
		a.mu.Unlock()
	}
	return errors.Join(errs...)
}

// run publishes once the routing table is non-empty, then on change, on
// the republish timer, and after failures with backoff.
func (a *advertiser) run(ctx context.Context) {
	if err := a.p2p.WaitReady(ctx); err != nil {
		return
	}
	republish := time.NewTicker(a.cfg.Republish)
	defer republish.Stop()
	poll := time.NewTicker(min(inventoryPoll, a.cfg.Republish))
	defer poll.Stop()
	retry := time.NewTimer(0) // publish at once
	defer retry.Stop()
	backoff := time.Second
	var lastPut time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-a.changed:
		case <-republish.C:
		case <-retry.C:
		case <-poll.C:
			next, err := a.build(1) // seq is ignored by sameOffer
			if err != nil || sameOffer(next, a.Current()) {
				continue
			}
		}
		if wait := capacityPutGap - time.Since(lastPut); wait > 0 {
			// Too soon after the last put: one put after the gap carries
			// this change and any that follow it.
			retry.Reset(wait)
			continue
		}
		lastPut = time.Now()
		pctx, cancel := context.WithTimeout(ctx, time.Minute)
		err := a.publish(pctx)
		cancel()
		if err != nil && ctx.Err() == nil {
			a.log.Warn("publishing capacity failed; retrying", "err", err, "in", backoff)
			retry.Reset(backoff)
			backoff = min(2*backoff, 30*time.Second)
			continue
		}
		backoff = time.Second
	}
}
