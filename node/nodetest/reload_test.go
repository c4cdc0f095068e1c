package nodetest_test

import (
	"context"
	"log/slog"
	"os"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/idlegrid/idlegrid/node"
	"github.com/idlegrid/idlegrid/node/nodetest"
	"github.com/idlegrid/idlegrid/node/provider"
)

// TestSIGHUPChangesFloorLive: a provider's operator raises the gold floor
// in config.toml and sends SIGHUP; a renter's market lookup sees the new
// floor in the provider's capacity record, with no restart. A changed key
// that is not live is named, not applied.
func TestSIGHUPChangesFloorLive(t *testing.T) {
	home := t.TempDir()
	c := nodetest.New(t, 3, nodetest.Options{Configure: func(_ int, cfg *node.Config) {
		if cfg.Role == node.RoleProvider {
			cfg.Home = home
		}
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := c.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	prov, renter := c.ByRole(node.RoleProvider)[0], c.ByRole(node.RoleRenter)[0]
	writeConfig := func(cfg node.Config) {
		t.Helper()
		raw, err := cfg.Encode()
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(node.ConfigPath(home), raw, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	writeConfig(prov.Config)
	if r, err := prov.Node.Reload(); err != nil || len(r.Applied)+len(r.Restart) != 0 {
		t.Fatalf("reload of the config it runs = %+v, %v; want no changes", r, err)
	}
	floorSeen := func(micro uint64) func() bool {
		return func() bool {
			rec, err := renter.Node.Trust().ProviderRecord(ctx, prov.Node.ID())
			return err == nil && rec.Floor.Gold == micro
		}
	}
	if err := nodetest.WaitFor(ctx, "the default gold floor in the record", floorSeen(provider.USDToMicro(prov.Config.Provider.FloorUSD.Gold))); err != nil {
		t.Fatal(err)
	}

	stop := node.WatchSIGHUP(prov.Node, slog.New(slog.DiscardHandler))
	defer stop()
	next := prov.Config
	next.Provider.FloorUSD.Gold = 7.5
	next.P2P.ConnHigh = 300
	writeConfig(next)
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	if err := nodetest.WaitFor(ctx, "the raised gold floor in the record a renter finds", floorSeen(7_500_000)); err != nil {
		t.Fatal(err)
	}
	r, err := prov.Node.Reload()
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Applied) != 0 || !slices.Equal(r.Restart, []string{"p2p.conn_high"}) {
		t.Errorf("second reload = %+v, want only p2p.conn_high, for a restart", r)
	}
}
