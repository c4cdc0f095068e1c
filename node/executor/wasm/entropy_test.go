package wasm

import (
	"context"
	"testing"
	"time"
)

// TestEntropyMakesRunsReproducible: under a set Entropy a guest reading
// the clock and random bytes writes the same output every run; another
// Entropy (or the host's) gives another output.
func TestEntropyMakesRunsReproducible(t *testing.T) {
	needModules(t)
	output := func(en *Entropy) string {
		e := newExecutor(t, func(c *Config) { c.Entropy = en })
		h, res := runSpec(t, e, progSpec("entropy"))
		if res.ExitCode != 0 {
			t.Fatalf("exit %d: %s", res.ExitCode, res.Message)
		}
		out, err := e.Outputs(context.Background(), h)
		if err != nil {
			t.Fatal(err)
		}
		return out.CID
	}
	a := &Entropy{Walltime: time.Date(2001, 2, 3, 4, 5, 6, 7, time.UTC), Seed: 1}
	b := &Entropy{Walltime: time.Date(2037, 1, 1, 0, 0, 0, 0, time.UTC), Seed: 2}
	first := output(a)
	if again := output(a); again != first {
		t.Fatalf("one Entropy, two outputs: %s and %s", first, again)
	}
	if other := output(b); other == first {
		t.Fatal("another Entropy gave the same output")
	}
	if host := output(nil); host == first {
		t.Fatal("the host's clock and randomness gave the set Entropy's output")
	}
}
