package main_test

import (
	"bufio"
	"context"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestDevnetRunsTheDemoJob runs the README's first command, `idlegrid
// devnet`, with the real binary: the network comes up, the demo WASM job is
// auctioned, leased, run by a provider, and its log and CID-verified output
// are shown; Ctrl-C then shuts everything down cleanly.
func TestDevnetRunsTheDemoJob(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-node devnet")
	}
	bin := buildBinary(t)
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "devnet", "--dir", t.TempDir())
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var lines []string
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines = append(lines, sc.Text())
			if strings.HasPrefix(sc.Text(), "devnet ready") {
				ready <- true
				break
			}
		}
		ready <- false
		for sc.Scan() {
		}
	}()
	select {
	case ok := <-ready:
		if !ok {
			_ = cmd.Wait()
			t.Fatalf("devnet ended before it was ready:\n%s", strings.Join(lines, "\n"))
		}
	case <-ctx.Done():
		t.Fatalf("devnet not ready in time:\n%s", strings.Join(lines, "\n"))
	}
	all := strings.Join(lines, "\n")
	// With a Docker engine the devnet built its demo image: removed at the
	// end, after the devnet (and its containers).
	if f := strings.Fields(after(all, "demo service image ")); len(f) > 0 {
		t.Cleanup(func() {
			_ = exec.Command("docker", "rmi", "-f", strings.TrimPrefix(f[0], "idlegrid-devnet/hello@")).Run()
		})
	}
	// The auction had competition. A renter that has seen no provider bid
	// yet publishes an RFQ to the cheapest auction.MaxUnprovenShards GPU
	// families that fit (docs/protocol.md, shard choice), so the demo's
	// first auction reaches two of the three providers' families.
	if !regexp.MustCompile(`window closed with ([2-9]|\d\d+) bids`).MatchString(all) {
		t.Errorf("devnet output lacks an auction with at least 2 bids:\n%s", all)
	}
	for _, want := range []string{
		"lease-running",                   // the lease ran
		"done: n=160 checksum=3306940650", // the log, from the provider
		"CID verified",                    // the output
		"the result matches the expected result",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("devnet output lacks %q:\n%s", want, all)
		}
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("devnet exit after Ctrl-C: %v", err)
		}
	case <-time.After(time.Minute):
		_ = cmd.Process.Kill()
		t.Fatal("devnet did not stop within a minute of Ctrl-C")
	}
}
