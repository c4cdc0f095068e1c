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
}

func newAvoidList() *avoidList { return &avoidList{byJob: map[string]map[string]bool{}} }

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
	avoid := v.byJob[jobID]
	if len(avoid) == 0 {
		v.mu.Unlock()
		return bids, ids
	}
	var kb []*auction.Bid
	var ki []string
	for i, b := range bids {
		if !avoid[b.Provider] {
			kb, ki = append(kb, b), append(ki, ids[i])
		}
	}
	v.mu.Unlock()
	return kb, ki
}
