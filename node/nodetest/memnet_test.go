package nodetest_test

import (
	"context"
	"testing"
	"time"

	ma "github.com/multiformats/go-multiaddr"

	"github.com/idlegrid/idlegrid/node"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/node/nodetest"
)

// TestJobRunsOnMemnet: the scale benchmarks' in-process transport
// (p2p/p2ptest/memnet) carries a whole market: the cluster forms through
// its bootstrap peer, a job is leased and completes, and every node sees
// its peers at their own listen addresses (one /24 each, as admission
// groups them), not at one shared address.
func TestJobRunsOnMemnet(t *testing.T) {
	c, renter := auctionCluster(t, []provOpts{{gpus: 1, bronze: 0.5}, {gpus: 1, bronze: 0.6}}, nodetest.Options{Transport: "memnet"})
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	j, err := renter.Renter().Submit(jobYAML(jobOpts{name: "on-memnet", gpus: 1}))
	if err != nil {
		t.Fatal(err)
	}
	waitJob(t, ctx, renter, j.ID, lease.JobCompleted)

	checked := 0
	for _, m := range c.ByRole(node.RoleProvider) {
		for _, cn := range m.Node.P2P().Host().Network().Conns() {
			want := ""
			for _, o := range c.Members {
				if o.Node.ID() == cn.RemotePeer() {
					want, _ = o.Addr.ValueForProtocol(ma.P_IP4)
				}
			}
			if got, _ := cn.RemoteMultiaddr().ValueForProtocol(ma.P_IP4); got != want {
				t.Errorf("member %d sees %s at %s, want its listen IP %s", m.Index, cn.RemotePeer(), cn.RemoteMultiaddr(), want)
			}
			checked++
		}
	}
	if checked == 0 {
		t.Fatal("the providers hold no connections")
	}
}
