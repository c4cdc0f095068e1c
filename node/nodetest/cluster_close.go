package nodetest

import (
	"errors"
	"fmt"
	"os"
	"runtime/pprof"
	"slices"
	"time"
)

// CloseTimeout bounds a cluster's shutdown: a member still stopping
// after it is reported, so a wedged node fails the test instead of
// hanging it until the test binary's timeout.
const CloseTimeout = 30 * time.Second

// Close stops every member at once and then the mocknet, waiting at most
// CloseTimeout; members that did not stop by then are named in the error
// (and left running). Idempotent.
func (c *Cluster) Close() error {
	c.once.Do(func() {
		errs := make([]error, len(c.Members))
		done := make([]chan struct{}, len(c.Members))
		for i, m := range c.Members {
			done[i] = make(chan struct{})
			go func() {
				defer close(done[i])
				if e := m.stop(); e != nil {
					errs[i] = fmt.Errorf("member %d: %w", i, e)
				}
			}()
		}
		deadline := time.NewTimer(CloseTimeout)
		defer deadline.Stop()
		var stuck []int
		expired := false
		for i := range done {
			if !expired {
				select {
				case <-done[i]:
					continue
				case <-deadline.C:
					expired = true
				}
			}
			select {
			case <-done[i]:
			default:
				stuck = append(stuck, i)
			}
		}
		var all []error
		for i := range errs {
			// A stuck member's goroutine may still write its slot.
			if !slices.Contains(stuck, i) && errs[i] != nil {
				all = append(all, errs[i])
			}
		}
		if len(stuck) > 0 {
			all = append(all, fmt.Errorf("members %v did not stop within %s; %s", stuck, CloseTimeout, dumpGoroutines()))
		} else if e := c.Net.Close(); e != nil {
			all = append(all, fmt.Errorf("mocknet: %w", e))
		}
		c.err = errors.Join(all...)
	})
	return c.err
}

// dumpGoroutines writes every goroutine's stack, identical stacks counted
// once, to a temporary file, and says where: what a wedged member waits
// on is in it.
func dumpGoroutines() string {
	f, err := os.CreateTemp("", "nodetest-stuck-*.txt")
	if err != nil {
		return "no goroutine dump: " + err.Error()
	}
	defer f.Close()
	if err := pprof.Lookup("goroutine").WriteTo(f, 1); err != nil {
		return "no goroutine dump: " + err.Error()
	}
	return "goroutines in " + f.Name()
}
