package renter

import (
	"sync"

	"github.com/idlegrid/idlegrid/auction"
)

// avoidList holds, per job, the providers whose lease of it failed
// unreachable or unhealthy: the job driver adds them, and the job's
// re-auctions take no bid from them.
type avoidList struct {
	mu    sync.Mutex
	byJob map[string]map[string]bool
	// busy holds, per job, the providers that run one of its replicas
	// now: another replica's auction takes no bid from them
	// (service_replicas.go).
	busy map[string]map[string]int
}

func newAvoidList() *avoidList {
	return &avoidList{byJob: map[string]map[string]bool{}, busy: map[string]map[string]int{}}
}

// hold keeps provider out of the job's auctions while it runs one of the
// job's replicas; release ends one hold.
func (v *avoidList) hold(jobID, provider string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.busy[jobID] == nil {
		v.busy[jobID] = map[string]int{}
	}
	v.busy[jobID][provider]++
}

func (v *avoidList) release(jobID, provider string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.busy[jobID][provider]--; v.busy[jobID][provider] <= 0 {
		delete(v.busy[jobID], provider)
	}
	if len(v.busy[jobID]) == 0 {
		delete(v.busy, jobID)
	}
}

// add keeps provider out of the job's re-auctions.
func (v *avoidList) add(jobID, provider string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.byJob[jobID] == nil {
		v.byJob[jobID] = map[string]bool{}
	}
	v.byJob[jobID][provider] = true
}

// filter drops the bids of providers the job avoids.
func (v *avoidList) filter(jobID string, bids []*auction.Bid, ids []string) ([]*auction.Bid, []string) {
	v.mu.Lock()
	avoid, busy := v.byJob[jobID], v.busy[jobID]
	if len(avoid) == 0 && len(busy) == 0 {
		v.mu.Unlock()
		return bids, ids
	}
	var kb []*auction.Bid
	var ki []string
	for i, b := range bids {
		if !avoid[b.Provider] && busy[b.Provider] == 0 {
			kb, ki = append(kb, b), append(ki, ids[i])
		}
	}
	v.mu.Unlock()
	return kb, ki
}
