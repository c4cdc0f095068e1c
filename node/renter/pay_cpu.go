package renter

import (
	"context"
	"time"

	"github.com/idlegrid/idlegrid/node/lease"
)

// payByTime pays a CPU-only lease (no GPU, so no telemetry windows to
// verify): every voucher interval while the work runs, a cumulative
// voucher up to now, and at the end one up to when the work finished.
// The renter has no evidence of the running work beyond the provider's
// status, so it risks one interval, as with GPU work (CPU telemetry would
// make these payments verified); the last stretch, up to when the work
// finished, is paid only once the lease's completion is verified (and,
// for a replica, its output compared with the others').
func (py *payer) payByTime(ctx context.Context) {
	d := py.d
	t := time.NewTicker(max(py.terms.VoucherInterval(), 10*time.Millisecond))
	defer t.Stop()
	for {
		cur, err := d.db.GetLease(py.l.ID)
		switch {
		case err != nil:
			return
		case cur.State == lease.Completed && cur.WorkFinishedMs != 0 && replicaPending(d.db, cur):
			// A replica: paid once the replicas' outputs agree or its
			// own is confirmed (settleReplicas), never when proven wrong.
		case cur.State == lease.Completed && cur.WorkFinishedMs != 0:
			py.pay(ctx, time.UnixMilli(cur.WorkFinishedMs), "")
			return
		case lease.State(cur.State).Terminal():
			return
		case cur.WorkFinishedMs != 0:
			// Reported finished: wait for the verifier's verdict.
		case cur.WorkStartedMs != 0:
			py.pay(ctx, d.now(), "")
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// leaseUnits is what a lease's price is per hour of: its GPUs, or the
// whole job for CPU-only work (priced per hour of the lease).
func leaseUnits(gpus int) int { return max(gpus, 1) }
