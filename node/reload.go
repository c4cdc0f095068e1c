package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"reflect"
	"strings"
	"syscall"

	"github.com/idlegrid/idlegrid/node/api"
	"github.com/idlegrid/idlegrid/node/provider"
)

// liveKey reports whether a changed config key applies without a restart:
// the provider's live offer keys and [costs].
func liveKey(key string) bool {
	if strings.HasPrefix(key, "costs.") {
		return true
	}
	for _, k := range provider.LiveOfferKeys {
		if key == "provider."+k || strings.HasPrefix(key, "provider."+k+".") {
			return true
		}
	}
	return false
}

// changedKeys lists the keys whose values differ between two configs.
func changedKeys(old, next Config) []string {
	vals := map[string]reflect.Value{}
	walkConfig(reflect.ValueOf(old), "", func(key string, f reflect.Value) { vals[key] = f })
	var out []string
	walkConfig(reflect.ValueOf(next), "", func(key string, f reflect.Value) {
		if !reflect.DeepEqual(vals[key].Interface(), f.Interface()) {
			out = append(out, key)
		}
	})
	return out
}

// Reload re-reads config.toml (and IDLEGRID_* variables), applies the
// keys that can change live (the provider's floors, calendar, tiers,
// offered GPUs and policies, and [costs]) and re-advertises; the other
// changed keys are returned under Restart, unapplied. A file that does not
// validate changes nothing. Flags given to the daemon are not re-read: a
// key set by flag shows as changed.
func (n *Node) Reload() (api.Reload, error) {
	n.reload.Lock()
	defer n.reload.Unlock()
	if n.cfg.Home == "" {
		return api.Reload{}, errors.New("node.Reload: this node has no home directory, so no config file")
	}
	next, err := LoadConfig(n.cfg.Home)
	if err == nil {
		err = next.ApplyEnv(os.LookupEnv)
	}
	if err == nil {
		err = next.Validate()
	}
	if err != nil {
		return api.Reload{}, fmt.Errorf("node.Reload: %w", err)
	}
	out := api.Reload{Applied: []string{}, Restart: []string{}}
	live := false
	for _, k := range changedKeys(n.fileCfg, next) {
		if liveKey(k) && n.provider != nil {
			out.Applied = append(out.Applied, k)
			live = true
		} else {
			out.Restart = append(out.Restart, k)
		}
	}
	if !live {
		return out, nil
	}
	if err := n.provider.SetCosts(next.Costs); err != nil {
		return api.Reload{}, fmt.Errorf("node.Reload: %w", err)
	}
	if _, err := n.provider.Reconfigure(next.Provider); err != nil {
		return api.Reload{}, fmt.Errorf("node.Reload: %w", err)
	}
	n.fileCfg.Costs = next.Costs
	p, q := &n.fileCfg.Provider, next.Provider
	p.FloorUSD, p.Calendar, p.OfferGPUs, p.Tiers, p.MaxDuration, p.AllowedImages =
		q.FloorUSD, q.Calendar, q.OfferGPUs, q.Tiers, q.MaxDuration, q.AllowedImages
	return out, nil
}

// WatchSIGHUP reloads the node's config on every SIGHUP until stop is
// called, logging what was applied and what needs a restart. The signal is
// caught from the moment it returns, so a SIGHUP cannot kill the daemon.
func WatchSIGHUP(n *Node, log *slog.Logger) (stop func()) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				r, err := n.Reload()
				if err != nil {
					log.Error("reload failed; config unchanged", "err", err)
					continue
				}
				log.Info("config reloaded", "applied", r.Applied, "restart_needed", r.Restart)
			}
		}
	}()
	return func() {
		signal.Stop(hup)
		cancel()
		<-done
	}
}

func (b apiBackend) Reload() (api.Reload, error) { return b.n.Reload() }
