package main_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ipfs/go-cid"
	mh "github.com/multiformats/go-multihash"
)

// TestNewcomer runs what a new user runs (issue 15) with the real binary
// against one devnet shared by every subtest: the README's Try-it block as
// written, then each failure a newcomer meets, checking that the output
// names the cause in the user's terms. It also runs the README test, so
// the README cannot drift from the binary.
func TestNewcomer(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-node devnet")
	}
	bin := buildBinary(t)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	// The devnet's demo image goes after the devnet (and its containers).
	var helloImage string
	t.Cleanup(func() {
		if helloImage != "" {
			_ = exec.Command("docker", "rmi", "-f", helloImage).Run()
		}
	})
	hints := startDevnet(t, ctx, bin, dir)
	if f := strings.Fields(after(hints, "demo service image ")); len(f) > 0 {
		helloImage = strings.TrimPrefix(f[0], "idlegrid-devnet/hello@")
	}
	renter := filepath.Join(dir, "renter")
	// cli runs one command against the devnet's renter.
	cli := func(t *testing.T, args ...string) (string, error) {
		t.Helper()
		return run(t, bin, append([]string{"--home", renter}, args...)...)
	}
	// The renter sees every provider before anything is submitted, as the
	// README's reader would after the devnet said it was ready.
	waitFor(t, ctx, "the renter's market view of 4 providers", nil, func() (bool, string) {
		out, _ := cli(t, "market", "search", "--json", "")
		return strings.Count(out, `"peer_id"`) >= 4, out
	})

	t.Run("devnet hints name the running binary", func(t *testing.T) {
		for _, want := range []string{bin + " market search --home " + renter, "kill -INT", "job ls -q"} {
			if !strings.Contains(hints, want) {
				t.Errorf("devnet hints lack %q:\n%s", want, hints)
			}
		}
	})

	t.Run("README Try-it block runs as written", func(t *testing.T) {
		// The README's install step, into a directory of the test's.
		gobin := t.TempDir()
		install := exec.CommandContext(ctx, "make", "-C", "../..", "install")
		install.Env = append(os.Environ(), "GOBIN="+gobin)
		out, err := install.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "installed "+filepath.Join(gobin, "idlegrid")) || !strings.Contains(string(out), "add it to PATH") {
			t.Fatalf("make install: %v\n%s", err, out)
		}
		block := readmeBlock(t, "readme-test: devnet")
		script := strings.ReplaceAll(block, "/tmp/docdev", dir)
		sh := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", script)
		// After the install step: idlegrid is on PATH.
		sh.Env = append(os.Environ(), "PATH="+gobin+string(os.PathListSeparator)+os.Getenv("PATH"))
		out, err = sh.CombinedOutput()
		if err != nil {
			t.Fatalf("README block failed: %v\n%s\n--- block ---\n%s", err, out, block)
		}
		for _, want := range []string{"completed", "done: n=", "1 file (", "archive", "verified"} {
			if !strings.Contains(string(out), want) {
				t.Errorf("README block output lacks %q:\n%s", want, out)
			}
		}
	})

	t.Run("README service block runs as written", func(t *testing.T) {
		// The devnet runs Docker providers when an engine answers, and
		// says so with its demo image.
		if helloImage == "" {
			if os.Getenv("IDLEGRID_REQUIRE_DOCKER") == "1" {
				t.Fatalf("IDLEGRID_REQUIRE_DOCKER=1 but the devnet runs no Docker providers:\n%s", hints)
			}
			t.Skipf("no Docker engine: the devnet's providers run WASM only:\n%s", hints)
		}
		block := readmeBlock(t, "readme-test: service")
		// The reader's 8080 may be taken here: a free local port, still
		// forwarded to the container's 8080.
		port := fmt.Sprint(freePort(t))
		script := strings.ReplaceAll(block, "/tmp/docdev", dir)
		script = strings.ReplaceAll(script, "127.0.0.1:8080 ", "127.0.0.1:"+port+" --remote-port 8080 ")
		script = strings.ReplaceAll(script, "127.0.0.1:8080/", "127.0.0.1:"+port+"/")
		// No pipefail: with several jobs, head closes `job ls -q` early
		// and the pipe's SIGPIPE is not a failure.
		sh := exec.CommandContext(ctx, "bash", "-eu", "-c", script)
		sh.Env = append(os.Environ(), "PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"))
		out, err := sh.CombinedOutput()
		if err != nil {
			t.Fatalf("README service block failed: %v\n%s\n--- block ---\n%s", err, out, script)
		}
		for _, want := range []string{"service running", "hello from idlegrid", "running (healthy)", "P95", "stopped forwarding", "cancelled"} {
			if !strings.Contains(string(out), want) {
				t.Errorf("README service block output lacks %q:\n%s", want, out)
			}
		}
	})

	t.Run("short and unknown job IDs", func(t *testing.T) {
		out, err := cli(t, "job", "ls", "-q")
		if err != nil || out == "" {
			t.Fatalf("job ls -q: %v\n%s", err, out)
		}
		id := strings.Fields(out)[0]
		for _, typed := range []string{id[len(id)-8:], id[:6] + "…" + id[len(id)-8:]} {
			if out, err := cli(t, "job", "status", typed); err != nil || !strings.Contains(out, id) {
				t.Errorf("job status %s: %v\n%s", typed, err, out)
			}
		}
		for typed, want := range map[string]string{
			"JOB":      "give at least 4 characters",
			"zzzzzzzz": `no job "zzzzzzzz" on this node (idlegrid job ls lists them)`,
		} {
			out, err := cli(t, "job", "logs", typed)
			if err == nil || !strings.Contains(out, want) || strings.Contains(out, "store.") {
				t.Errorf("job logs %s: %v, want %q:\n%s", typed, err, want, out)
			}
		}
	})

	module := strings.Fields(after(hints, "--module "))[0]
	submit := func(t *testing.T, args ...string) string {
		t.Helper()
		out, err := cli(t, append([]string{"job", "submit", "--gpus", "1", "--duration", "20s", "--module", module}, args...)...)
		if err == nil {
			t.Fatalf("job submit %v succeeded, want a failure:\n%s", args, out)
		}
		if goName.MatchString(out) {
			t.Errorf("job submit %v shows Go names:\n%s", args, out)
		}
		return out
	}
	t.Run("unfilled auctions say why", func(t *testing.T) {
		for _, tc := range []struct {
			args []string
			want string
		}{
			{[]string{"--gpu", "t4", "--max-price", "3"}, "no provider offers t4: the market view's 4 providers offer"},
			{[]string{"--gpu", "h100", "--max-price", "0.01"}, "the cheapest asks $2.4900 per GPU-hour for silver and your cap is $0.0100"},
			{[]string{"--gpu", "h100", "--max-price", "3", "--region", "us"}, "none in region us (they are in de)"},
		} {
			// --max-wait 0s: unfilled at the first auction, as the reader
			// who wants an answer now would ask.
			args := append(tc.args, "--max-wait", "0s")
			if out := submit(t, args...); !strings.Contains(out, tc.want) {
				t.Errorf("job submit %v: want %q:\n%s", args, tc.want, out)
			}
		}
		// Without it the job waits for a plan, saying why, until its
		// max_wait, then says how long it waited.
		out := submit(t, "--gpu", "t4", "--max-price", "3", "--max-wait", "10s")
		for _, want := range []string{"no plan yet (", "no provider offers t4", "auctioning again in", "auctions over", "(its max_wait 10s)"} {
			if !strings.Contains(out, want) {
				t.Errorf("job submit --max-wait 10s: want %q:\n%s", want, out)
			}
		}
	})

	t.Run("refused at submit", func(t *testing.T) {
		out := submit(t, "--gpu", "h10", "--max-price", "3")
		if !strings.Contains(out, `unknown GPU model: "h10"`) || !strings.Contains(out, `did you mean "h100"?`) || strings.Contains(out, "RFQ") {
			t.Errorf("unknown model:\n%s", out)
		}
		sum, err := mh.Sum([]byte("a module this renter never added"), mh.SHA2_256, -1)
		if err != nil {
			t.Fatal(err)
		}
		missing := cid.NewCidV1(cid.Raw, sum).String()
		out, err = cli(t, "job", "submit", "--duration", "20s", "--max-price", "3", "--module", missing, "--", "1")
		if err == nil || !strings.Contains(out, "idlegrid artifact add") || strings.Count(out, missing) != 1 || strings.Contains(out, "RFQ") {
			t.Errorf("missing module (want one clear message, the CID once): %v\n%s", err, out)
		}
		out = submit(t, "--max-price", "-1")
		if !strings.Contains(out, "--max-price") || strings.Contains(out, "line ") || strings.Contains(out, "max_price") {
			t.Errorf("flag problems by flag name, no YAML lines:\n%s", out)
		}
	})

	t.Run("errors and empty tables in the user's terms", func(t *testing.T) {
		out, err := cli(t, "market", "search", "vrma>=40")
		if err == nil || goName.MatchString(out) || !strings.Contains(out, "column 1") {
			t.Errorf("bad query: %v\n%s", err, out)
		}
		out, err = run(t, bin, "leases", "--home", filepath.Join(dir, "bootstrap"))
		if err != nil || !strings.Contains(out, "no leases yet") {
			t.Errorf("leases with none: %v\n%s", err, out)
		}
		out, _ = run(t, bin, "job", "submit", "--help")
		for _, want := range []string{"USD per GPU-hour", "(default 500ms)", "bare number is GB"} {
			if !strings.Contains(out, want) {
				t.Errorf("job submit --help lacks %q", want)
			}
		}
	})

	t.Run("a lone node says why it is not ready", func(t *testing.T) {
		p := initProc(t, bin, t.TempDir(), "lone", "renter")
		env := exec.Command(bin, "status")
		env.Env = append(os.Environ(), "IDLEGRID_HOME="+p.home)
		out, _ := env.CombinedOutput()
		if !strings.Contains(string(out), "for home "+p.home) {
			t.Errorf("no daemon, home from IDLEGRID_HOME: the message must name it:\n%s", out)
		}
		p.args = []string{
			"--listen", fmt.Sprintf("/ip4/127.0.0.1/tcp/%d,/ip4/127.0.0.1/udp/%d/quic-v1", p.p2pPort, p.p2pPort),
			"--api-listen", fmt.Sprintf("127.0.0.1:%d", p.apiPort),
		}
		p.start(t, bin)
		defer p.stop()
		waitFor(t, ctx, "the lone node's status", []*proc{p}, func() (bool, string) {
			out, err := run(t, bin, "status", "--home", p.home)
			return err == nil && strings.Contains(out, "this node has no bootstrap peers"), out
		})
		out2, _ := run(t, bin, "market", "search", "--home", p.home, "gpu=h100")
		if !strings.Contains(out2, "no bootstrap peers") || strings.Contains(out2, "routing table") {
			t.Errorf("search on a lone node:\n%s", out2)
		}
	})
}

// goName matches Go identifiers a user never wrote: "auction.ParseJobSpec:",
// "query.Parse:", "store.GetJob".
var goName = regexp.MustCompile(`\b[a-z]+\.[A-Z][A-Za-z]*\b`)

// startDevnet runs `idlegrid devnet --providers 4 --no-demo` with extra
// flags until the test ends and returns its output up to and including
// the hints.
func startDevnet(t *testing.T, ctx context.Context, bin, dir string, extra ...string) string {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"devnet", "--providers", "4", "--no-demo", "--dir", dir}, extra...)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGINT)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(time.Minute):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	got := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		var b strings.Builder
		sent := false
		for sc.Scan() {
			b.WriteString(sc.Text() + "\n")
			if !sent && strings.Contains(sc.Text(), "market prices --home") {
				got <- b.String()
				sent = true
			}
		}
		if !sent {
			got <- "ENDED: " + b.String()
		}
	}()
	select {
	case s := <-got:
		if strings.HasPrefix(s, "ENDED: ") {
			t.Fatalf("devnet ended before it was ready:\n%s", s)
		}
		return s
	case <-ctx.Done():
		t.Fatal("devnet not ready in time")
	}
	return ""
}

// readmeBlock returns the shell block that follows the marker comment in
// the repository's README.
func readmeBlock(t *testing.T, marker string) string {
	t.Helper()
	raw, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	rest := after(string(raw), marker)
	rest = after(rest, "```sh\n")
	block, _, ok := strings.Cut(rest, "```")
	if !ok || block == "" {
		t.Fatalf("README has no sh block after %q", marker)
	}
	return block
}

func after(s, sep string) string {
	_, rest, _ := strings.Cut(s, sep)
	return rest
}
