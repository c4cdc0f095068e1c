package nodetest_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/idlegrid/idlegrid/node"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/node/nodetest"
)

// TestWarmPlacement (issue 30): a provider that holds a job's model (in
// its models directory) at 1.10 USD/h against a cold one at 1.00 that
// declares 1 Gbit/s. With no model named the cheap one wins; with a 16 GB
// model (a 2-minute download charged against a 2-second job) the warm one
// wins, and the job's events say it starts warm and why the cheaper one
// lost; with a 1 MiB model (9 ms of download) the cheaper cold one wins
// again.
func TestWarmPlacement(t *testing.T) {
	const modelID = "tiny-llm@sha256:5d41402abc4b2a76b9719d911017c592a0fc0b7a2b5b5b5b5b5b5b5b5b5b5b5b"
	modelsDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(modelsDir, modelID), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	c, renter := auctionCluster(t, []provOpts{{gpus: 1, bronze: 1.00}, {gpus: 1, bronze: 1.10}},
		nodetest.Options{Configure: func(i int, cfg *node.Config) {
			switch i {
			case 1:
				cfg.Provider.BandwidthMbps = 1000
			case 2:
				cfg.Provider.ModelsDir = modelsDir
			}
		}})
	provs := c.ByRole(node.RoleProvider)
	cold, warm := provs[0].Node.P2P().ID().String(), provs[1].Node.P2P().ID().String()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	for round, tc := range []struct {
		extra, want string
		notes       []string // in the job's events
	}{
		{"", cold, nil},
		{"model: " + modelID + "\nmodel_size: 16GB\n", warm, []string{"model warm", "bids outranked with the model's download charged", "including a cold start of 2m8s"}},
		{"model: " + modelID + "\nmodel_size: 1MiB\n", cold, []string{"model cold: about 9ms to download"}},
	} {
		if err := nodetest.WaitFor(ctx, "every GPU free", func() bool {
			res, err := renter.Trust().Search(ctx, "gpus>=1", "", 0, false)
			return err == nil && len(res.Offers) == 2
		}); err != nil {
			t.Fatal(err)
		}
		spec := append(jobYAML(jobOpts{name: fmt.Sprintf("warm-%d", round), gpus: 1, duration: "2s"}), tc.extra...)
		j, err := renter.Renter().Submit(spec)
		if err != nil {
			t.Fatal(err)
		}
		j = waitJob(t, ctx, renter, j.ID, lease.JobCompleted)
		l, err := renter.Store().GetLease(j.Leases[0])
		if err != nil {
			t.Fatal(err)
		}
		var events []string
		for _, ev := range j.Events {
			events = append(events, ev.Kind+": "+ev.Message)
		}
		if l.Provider != tc.want {
			t.Fatalf("round %d (%q): won by %s at %s, want %s; events:\n%s", round, tc.extra,
				lease.Short(l.Provider), lease.USD(l.PriceMicro), lease.Short(tc.want), strings.Join(events, "\n"))
		}
		for _, note := range tc.notes {
			if !strings.Contains(strings.Join(events, "\n"), note) {
				t.Errorf("round %d: no job event says %q:\n%s", round, note, strings.Join(events, "\n"))
			}
		}
		t.Logf("round %d (%q): won by %s at %s", round, strings.TrimSpace(tc.extra), lease.Short(l.Provider), lease.USD(l.PriceMicro))
	}
}
