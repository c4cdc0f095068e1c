package renter

import (
	"fmt"
	"time"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/store"
)

// reasonUnhealthy starts the reason of a service lease the renter failed
// because its health check kept failing; the job driver re-auctions it.
const reasonUnhealthy = "service unhealthy"

// checkUnhealthy stops the payments of a service lease that stayed
// unhealthy (as its provider reports) past the grace, as for late
// telemetry, and, when the spec asks, fails the lease so the job is
// re-auctioned elsewhere.
func (py *payer) checkUnhealthy(grace time.Duration) {
	if py.stopped != "" {
		return
	}
	l, err := py.d.db.GetLease(py.l.ID)
	if err != nil || l.Health != lease.HealthUnhealthy || lease.State(l.State).Terminal() {
		py.unhealthySince = time.Time{}
		return
	}
	now := py.d.now()
	if py.unhealthySince.IsZero() {
		py.unhealthySince = now
		return
	}
	if now.Sub(py.unhealthySince) <= grace {
		return
	}
	py.stop(fmt.Sprintf("the service failed its health check for %s", now.Sub(py.unhealthySince).Round(time.Second)))
	if reauctionUnhealthy(py.d.db, l.RenterJobID()) {
		py.d.failUnhealthy(l)
	}
}

// reauctionUnhealthy reports whether the job's spec asks for an
// unhealthy service to be re-auctioned; a replicated service's unhealthy
// replica always is (service_replicas.go).
func reauctionUnhealthy(db *store.DB, jobID string) bool {
	j, err := db.GetJob(jobID)
	if err != nil {
		return false
	}
	spec, err := auction.ParseJobSpec(j.Spec)
	if err != nil {
		return false
	}
	w, err := spec.Workload()
	return err == nil && w.Service != nil && (w.Service.ReauctionUnhealthy || spec.ReplicaCount() > 1)
}
