package renter

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/idlegrid/idlegrid/attest"
	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node/failpoint"
	"github.com/idlegrid/idlegrid/node/jobproto"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/store"
)

// payerDeps are what the payments need of the room.
type payerDeps struct {
	log    *slog.Logger
	now    func() time.Time
	key    crypto.PrivKey
	self   peer.ID
	db     *store.DB
	leases *lease.Book
	jobs   *jobTracker
	call   jobCaller
	// withhold is the payment policy (Deps.WithholdPayment); nil pays.
	withhold func(leaseID string) bool
	// reportFraud hands a double-lease proof to trust
	// (Deps.ReportFraud); publishFraud gossips it.
	reportFraud  func(proof []byte)
	publishFraud func(ctx context.Context, proof []byte) error
	// failUnhealthy fails a service lease that stayed unhealthy, so its
	// job is re-auctioned (follower.failUnhealthy).
	failUnhealthy func(l *store.Lease)
}

// payments run a payer per running lease and settle each ended lease (its
// last voucher, its receipt).
type payments struct {
	payerDeps

	mu      sync.Mutex
	running map[string]chan struct{} // per lease, closed when its payer returned
	// settling paces fetchReceipt; zero is defaultSettling (tests shorten it).
	settling settling
}

func newPayments(deps payerDeps) *payments {
	return &payments{payerDeps: deps, running: map[string]chan struct{}{}}
}

// payer pays for one running lease: it follows the provider's chain from
// the lease's start, verifies it (package attest's checks, scoped to the
// lease) whenever a telemetry window arrives, and signs a cumulative
// voucher covering up to the end of the last verified window. Telemetry
// that fails a check, or that stops coming, stops the payments: the
// provider then stops the work after its grace, so neither side risks more
// than about one interval.
type payer struct {
	d        *payerDeps // the payments' deps
	l        *store.Lease
	provider peer.ID
	// terms are the lease terms both parties signed (the award's): the
	// payer judges the provider by them, never by this node's config.
	terms auction.LeaseTerms

	fingerprints [][]byte
	// entries are the lease's latest chain entries, at most about
	// maxProofEntries once windows pass: what a double-lease proof may
	// hold (conclusive from the lease's started event while that is among
	// them). A window is verified with entries[verifyFrom:] only, the
	// tail its checks need (keepTail), coverage counted from
	// scopeStartMs. Verifying the whole segment at every window cost a
	// month-long service 43,000 signature checks a minute, and the memory
	// of every entry.
	entries      [][]byte
	verifyFrom   int
	scopeStartMs int64
	next         uint64 // chain seq to ask for after a reconnect
	seq          uint64 // vouchers sent
	coveredMs    int64  // what the last voucher covers
	undelivered  []byte // the last voucher, until the provider acknowledged it
	// lastWindow is when the last telemetry window arrived or, before
	// any, when the lease's `started` event did (or the payer began).
	lastWindow time.Time
	// sawEnd: the chain showed the event that ended the lease (finished,
	// failed...): nothing more to pay for comes after it.
	sawEnd bool
	// started: the chain showed the lease's `started` event. Until then
	// the provider is preparing and gets auction.PrepareAllowance more.
	started bool
	stopped string // why payments stopped ("" while paying)
	// unhealthySince is when the service lease was first seen unhealthy.
	unhealthySince time.Time
}

// endedTries bounds the attestation streams a payer opens for a lease that
// has ended without its end entry having arrived.
const endedTries = 5

// payLease runs until ctx ends (the lease ended or the job stopped).
func (pm *payments) payLease(ctx context.Context, l *store.Lease) {
	done := pm.payerStarted(l.ID)
	defer close(done)
	p, err := peer.Decode(l.Provider)
	if err != nil {
		return
	}
	py := &payer{d: &pm.payerDeps, l: l, provider: p, terms: lease.Agreed(l), lastWindow: pm.now()}
	if v, err := pm.db.Voucher(l.ID); err == nil {
		if pv, err := attest.OpenVoucher(v); err == nil {
			// Continue after a restart: the provider accepts only the next
			// seq and never less coverage, and may not have received the
			// stored voucher before the renter stopped.
			py.seq, py.coveredMs, py.undelivered = pv.Seq, pv.CoveredUntilMs, v
		}
	}
	if py.terms.Prepay > 0 && py.seq == 0 {
		py.pay(ctx, time.UnixMilli(l.StartsAtMs).Add(py.terms.Prepaid()), "")
	}
	if len(l.GPUs) == 0 {
		py.payByTime(ctx) // CPU-only work: no telemetry windows (pay_cpu.go)
		return
	}
	late := py.terms.Allowance()
	backoff := 500 * time.Millisecond
	// Until the lease ends, and after: a lease that ended (a short job
	// ends before its payer's first stream is up) is followed until its
	// end entry arrived, at most endedTries streams, so one failed stream
	// on a loaded link does not leave its last windows unpaid and the
	// provider without a voucher or a receipt.
	for tries := 0; ctx.Err() == nil; {
		err := py.follow(ctx, late)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			pm.log.Debug("attestation stream ended", "lease", lease.Short(l.ID), "err", err)
		}
		if py.ended() {
			// The last voucher the provider never answered (it went down
			// between the lease's end and its receipt) is sent again: the
			// provider takes a voucher after the end and issues the receipt
			// over it. Left unsent, the renter would count as paid what
			// the provider cannot claim.
			if py.undelivered != nil {
				py.send(ctx, py.undelivered)
			}
			if tries++; (py.sawEnd && py.undelivered == nil) || tries >= endedTries {
				return
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 10*time.Second)
	}
}

// follow reads the provider's attestation stream until it ends, checking
// for late telemetry as it waits.
func (py *payer) follow(ctx context.Context, late time.Duration) error {
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	_, fr, err := py.d.call(sctx, py.provider, &jobproto.Request{Op: jobproto.OpAttest, Lease: py.l.ID, After: py.next, Follow: true})
	if err != nil {
		py.checkLate(late)
		return err
	}
	defer fr.Close()
	frames := make(chan []byte)
	errc := make(chan error, 1)
	go func() {
		for {
			b, err := fr.Next()
			if err != nil {
				errc <- err
				return
			}
			select {
			case frames <- append([]byte(nil), b...):
			case <-sctx.Done():
				errc <- sctx.Err()
				return
			}
		}
	}()
	tick := time.NewTicker(max(late/4, 10*time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-errc:
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		case <-tick.C:
			py.checkLate(late)
		case raw := <-frames:
			py.entry(ctx, raw)
		}
	}
}

// ended reports whether the lease ended (as the renter last heard).
func (py *payer) ended() bool {
	l, err := py.d.db.GetLease(py.l.ID)
	return err != nil || lease.State(l.State).Terminal()
}

// checkLate stops the payments once telemetry is late beyond the grace.
func (py *payer) checkLate(late time.Duration) {
	what, wait := "no telemetry from the provider", late
	if !py.started {
		what, wait = "the provider has not started the work", late+auction.PrepareAllowance
	}
	if py.stopped == "" && py.d.now().Sub(py.lastWindow) > wait && !py.ended() {
		py.stop(fmt.Sprintf("%s for %s", what, py.d.now().Sub(py.lastWindow).Round(time.Second)))
	}
	py.checkUnhealthy(late)
}

func (py *payer) stop(why string) {
	py.stopped = why
	py.d.jobs.event(py.l.RenterJobID(), "payment-stopped", "lease %s: payments stopped: %s", lease.Short(py.l.ID), why)
	py.d.log.Warn("payments stopped", "lease", lease.Short(py.l.ID), "reason", why)
}

// entry takes one chain entry from the stream; a telemetry window is
// verified with everything before it and, if it passes, paid for.
func (py *payer) entry(ctx context.Context, raw []byte) {
	e, err := attest.OpenEntry(raw)
	if err != nil {
		py.stop("the provider sent an invalid chain entry: " + err.Error())
		return
	}
	if e.Fingerprint != nil && !py.hasFingerprint(raw) {
		py.fingerprints = append(py.fingerprints, raw)
	}
	switch {
	case len(py.entries) == 0 && e.Fingerprint != nil:
		return // the fingerprint in force, sent ahead of the lease's segment
	case len(py.entries) > 0 && e.Seq < py.next:
		return // already verified (a reconnect repeats it)
	}
	py.entries = append(py.entries, raw)
	py.next = e.Seq + 1
	py.checkDoubleLease(ctx, e)
	if j := e.Job; j != nil && j.Lease == py.l.ID && j.Event == attest.JobStarted && !py.started {
		// The work started here: telemetry is due an allowance from the
		// signed start (the provider's payment clock starts there too),
		// however long the provider took to prepare. A start dated in the
		// future counts from now.
		py.started, py.lastWindow = true, py.d.now()
		if at := time.UnixMilli(e.AtMs); at.Before(py.lastWindow) {
			py.lastWindow = at
		}
	}
	if j := e.Job; j != nil && j.Lease == py.l.ID && j.Event.Ends() {
		py.sawEnd = true
	}
	if e.Telemetry == nil {
		return
	}
	py.started = true
	py.lastWindow = py.d.now()
	if py.stopped != "" {
		return
	}
	rep := attest.Verify(py.entries[py.verifyFrom:], py.verifyOptions())
	if !rep.OK() {
		fs := rep.Failures()
		py.stop(fmt.Sprintf("telemetry failed the %q check: %s", fs[0].Check, fs[0].Message))
		return
	}
	py.keepTail()
	py.pay(ctx, time.UnixMilli(e.Telemetry.EndMs), attest.RecordID(raw).String())
}

// pay signs and sends a cumulative voucher covering the lease up to until.
func (py *payer) pay(ctx context.Context, until time.Time, telemetry string) {
	d, l := py.d, py.l
	if d.withhold != nil && d.withhold(l.ID) {
		return
	}
	start := time.UnixMilli(l.StartsAtMs)
	if until.Before(start) || until.UnixMilli() <= py.coveredMs {
		return // already paid (a reconnect or restart replays the chain)
	}
	if py.undelivered != nil {
		// The provider needs it to accept the next seq; if it already
		// holds it, it refuses this copy and no harm is done.
		py.send(ctx, py.undelivered)
	}
	py.seq++
	v := &attest.Voucher{
		V: attest.RecordsVersion, Lease: l.ID, Renter: l.Renter, Provider: l.Provider, Seq: py.seq,
		AmountMicro: owed(l.PriceMicro, leaseUnits(len(l.GPUs)), until.Sub(start)), CoveredUntilMs: until.UnixMilli(),
		Telemetry: telemetry, IssuedMs: py.d.now().UnixMilli(),
	}
	raw, err := attest.SealVoucher(v, d.key)
	if err != nil {
		d.log.Warn("seal voucher", "lease", lease.Short(l.ID), "err", err)
		return
	}
	// Stored before it is sent: the renter owes what it signed.
	if err := d.db.PutVoucher(l.ID, raw); err != nil {
		d.log.Warn("store voucher", "lease", lease.Short(l.ID), "err", err)
		return
	}
	py.coveredMs, py.undelivered = v.CoveredUntilMs, raw
	if _, err := d.leases.Update(l.ID, func(s *store.Lease) bool {
		s.PaidMicro, s.PaidUntilMs = v.AmountMicro, v.CoveredUntilMs
		return true
	}); err != nil {
		d.log.Warn("store lease", "lease", lease.Short(l.ID), "err", err)
	}
	failpoint.Hit(failpoint.RenterVoucherStored)
	py.send(ctx, raw)
}

// send delivers a voucher to the provider; once the provider answered
// (acknowledged or refused it) it is not sent again.
func (py *payer) send(ctx context.Context, raw []byte) {
	d, l := py.d, py.l
	// A voucher on its way is delivered even if the lease just ended and
	// its following stops: it pays for the last window.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	_, fr, err := py.d.call(cctx, py.provider, &jobproto.Request{Op: jobproto.OpVoucher, Lease: l.ID, Voucher: raw})
	var re *jobproto.RemoteError
	if errors.As(err, &re) {
		d.log.Debug("voucher refused", "lease", lease.Short(l.ID), "err", err)
		py.undelivered = nil
		return
	}
	if err != nil {
		d.log.Info("voucher not delivered (sent again before the next one)", "lease", lease.Short(l.ID), "err", err)
		return
	}
	_ = fr.Close()
	py.undelivered = nil
}

// owed is the cumulative amount for gpus GPUs over d at price uUSD per
// GPU-hour, rounded down to the micro-dollar.
func owed(priceMicro uint64, gpus int, d time.Duration) uint64 {
	x := new(big.Int).SetUint64(priceMicro)
	x.Mul(x, big.NewInt(int64(gpus)))
	x.Mul(x, big.NewInt(d.Milliseconds()))
	x.Quo(x, big.NewInt(int64(time.Hour/time.Millisecond)))
	return x.Uint64()
}
