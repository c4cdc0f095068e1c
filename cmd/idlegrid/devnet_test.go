package main_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/idlegrid/idlegrid/node/api"
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

// TestDevnetServesAModel runs `idlegrid devnet --model` with the real
// binary and Docker, then the README's model block as written: the model
// server runs as a 3-replica service on distinct providers behind one
// endpoint, which balances the block's requests over every replica, and
// `job endpoint` counts exactly the tokens the server's usage reported.
func TestDevnetServesAModel(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-node devnet with Docker")
	}
	if err := exec.Command("docker", "version").Run(); err != nil {
		if os.Getenv("IDLEGRID_REQUIRE_DOCKER") == "1" {
			t.Fatalf("IDLEGRID_REQUIRE_DOCKER=1 but no Docker engine answers: %v", err)
		}
		t.Skipf("no Docker engine: %v", err)
	}
	bin := buildBinary(t)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(t.Context(), 6*time.Minute)
	defer cancel()
	var images []string
	// The images go after the devnet (and its containers).
	t.Cleanup(func() {
		for _, im := range images {
			_ = exec.Command("docker", "rmi", "-f", im).Run()
		}
	})
	// The reader's 8000 may be taken here: a free local port instead.
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	hints := startDevnet(t, ctx, bin, dir, "--model", "--model-listen", addr)
	for _, marker := range []string{"demo service image ", "model server image "} {
		if f := strings.Fields(after(hints, marker)); len(f) > 0 {
			images = append(images, f[0][strings.Index(f[0], "@")+1:])
		}
	}
	if !strings.Contains(hints, "serves on http://"+addr+" over 3 replicas") {
		t.Fatalf("devnet --model did not say it serves 3 replicas on %s:\n%s", addr, hints)
	}

	block := readmeBlock(t, "readme-test: model")
	script := strings.ReplaceAll(block, "/tmp/modeldev", dir)
	script = strings.ReplaceAll(script, "127.0.0.1:8000", addr)
	sh := exec.CommandContext(ctx, "bash", "-eu", "-c", script)
	sh.Env = append(os.Environ(), "PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"))
	out, err := sh.CombinedOutput()
	if err != nil {
		t.Fatalf("README model block failed: %v\n%s\n--- block ---\n%s", err, out, script)
	}
	// Six completions of 8 tokens for a 2-word prompt.
	if n := strings.Count(string(out), "t0 t1 t2 t3 t4 t5 t6 t7 "); n != 6 {
		t.Errorf("README model block: %d of 6 completions:\n%s", n, out)
	}
	for _, want := range []string{"REPLICA", "TTFT P95", "$/1M TOK", "service", "PROMPT TOK", "devnet-model"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("README model block output lacks %q:\n%s", want, out)
		}
	}

	renter := filepath.Join(dir, "renter")
	ls, err := run(t, bin, "job", "ls", "-q", "--home", renter)
	if err != nil || ls == "" {
		t.Fatalf("job ls: %v\n%s", err, ls)
	}
	job := strings.Fields(ls)[0]
	var e api.Endpoint
	// An answer is counted once relayed: the client can read it first.
	waitFor(t, ctx, "the endpoint to count the six answers' tokens", nil, func() (bool, string) {
		js, err := run(t, bin, "job", "endpoint", "--json", "--home", renter, job)
		if err != nil {
			return false, js
		}
		e = api.Endpoint{}
		if err := json.Unmarshal([]byte(js), &e); err != nil {
			return false, js
		}
		return e.Total.Requests == 6 && e.Total.Tokens() == 6*(2+8), js
	})
	if e.Total.PromptTokens != 12 || e.Total.CompletionTokens != 48 {
		t.Errorf("service tokens: prompt %d, completion %d; want 12 and 48", e.Total.PromptTokens, e.Total.CompletionTokens)
	}
	providers := map[string]bool{}
	for _, r := range e.Replicas {
		providers[r.Provider] = true
		if r.Requests == 0 {
			t.Errorf("replica %d (%s) got no request of six: %+v", r.Slot, r.Provider, e.Replicas)
		}
	}
	if len(e.Replicas) != 3 || len(providers) != 3 {
		t.Errorf("want 3 replicas on distinct providers: %+v", e.Replicas)
	}
}
