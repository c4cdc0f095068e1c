package cli

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/idlegrid/idlegrid/node"
)

// Ways a message speaks Go instead of the user's terms.
var (
	// goIdent is an exported Go identifier with its package
	// ("node.New", "store.Open", "auction.ParseJobSpec"); config keys are
	// lower case ("p2p.nat") and do not match.
	goIdent = regexp.MustCompile(`\b[a-z][a-z0-9]*\.[A-Z][A-Za-z0-9]*\b`)
	// goPrefix is a standard library's error prefix.
	goPrefix = regexp.MustCompile(`\bstrconv\.[A-Za-z]+|(^|[\s:])(time|json|toml|yaml|multiaddr): `)
	// goList is fmt's %v of a slice: "[provider renter bootstrap]".
	goList = regexp.MustCompile(`\[[^\[\]\s,]+( [^\[\]\s,]+)+\]|\[\]`)
	// goDuration is time.Duration's String with zero units: "24h0m0s".
	goDuration = regexp.MustCompile(`\b\d+h\d+m\d+s\b|\b\d+m0s\b`)
	// zeroTime is an unset time.Time or Unix time 0, printed.
	zeroTime = regexp.MustCompile(`0001-01-01|1970-01-01`)
)

// wordingProblems lists what in out speaks Go or says a thing twice.
func wordingProblems(out string) []string {
	var probs []string
	for _, c := range []struct {
		what string
		re   *regexp.Regexp
	}{{"a Go identifier", goIdent}, {"a Go error prefix", goPrefix}, {"a Go list", goList}, {"a Go duration", goDuration}, {"a zero time", zeroTime}} {
		if m := c.re.FindString(out); m != "" {
			probs = append(probs, fmt.Sprintf("%s (%q)", c.what, m))
		}
	}
	// A clause said twice: "store is locked ...: store is locked ...".
	for line := range strings.Lines(out) {
		seen := map[string]bool{}
		for _, clause := range regexp.MustCompile(`: |; | \(|\)`).Split(line, -1) {
			clause = strings.TrimSpace(clause)
			if len(clause) >= 12 && seen[clause] {
				probs = append(probs, fmt.Sprintf("a repeated clause (%q)", clause))
			}
			seen[clause] = true
		}
	}
	return probs
}

func TestWordingProblemsCatchesGo(t *testing.T) {
	for _, bad := range []string{
		"error: node.New: store.Open /x: store is locked by another process (is another daemon running?): store is locked by another process",
		`error: invalid argument "3d" for "--window" flag: time: unknown unit "d" in duration "3d"`,
		"role: want one of [provider renter bootstrap]",
		"window 24h0m0s",
		"p2p.nat: strconv.ParseBool: parsing \"maybe\": invalid syntax",
		"since 0001-01-01 00:00:00",
	} {
		if len(wordingProblems(bad)) == 0 {
			t.Errorf("no problem found in %q", bad)
		}
	}
	for _, good := range []string{
		`error: p2p.nat: "maybe": want true or false`,
		"error: role: \"pilot\" is not a role; want provider, renter or bootstrap",
		"usage: idlegrid job forward JOB [LOCAL_ADDR:]PORT, window 24h, 1h30m",
		"/tmp/x/config.toml:3: api.listen: want host:port",
		"error: /tmp/bad.yaml: invalid job spec: line 1: unknown field",
	} {
		if p := wordingProblems(good); len(p) > 0 {
			t.Errorf("%q: %v", good, p)
		}
	}
}

// TestErrorWording runs the CLI's error paths (flags, config values,
// homes that do not exist, a stopped daemon, a home in use, a running
// renter's API refusals, bad job specs and queries) and the empty lists,
// and fails on any message that speaks Go: package-qualified identifiers,
// Go's formatting of lists and durations, repeated clauses or zero times.
// Every error path must also exit non-zero.
func TestErrorWording(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a node")
	}
	dir := t.TempDir()
	stopped := filepath.Join(dir, "stopped")
	if _, err := node.Init(stopped, node.RoleRenter, node.InitOptions{}); err != nil {
		t.Fatal(err)
	}
	renter, apiAddr := startRenter(t, filepath.Join(dir, "renter"))
	module := filepath.Join(dir, "module.wasm")
	if err := os.WriteFile(module, []byte("\x00asm\x01\x00\x00\x00"), 0o644); err != nil {
		t.Fatal(err)
	}
	spec := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(spec, []byte("max_prise: 2\nduration: 2d\ntier: bronz\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	nohome := filepath.Join(dir, "nohome")
	const bogusJob = "bafkreiaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"

	fails := [][]string{
		// Commands and flags.
		{"sumbit"}, {"job", "sumbit"}, {"market", "serch"}, {"sim", "scal"}, {"job", "ls", "extra"},
		{"status", "--bogus"}, {"market", "prices", "--window", "3x", "--home", renter},
		{"sim", "--seeds", "x"}, {"sim", "--traces", filepath.Join(dir, "none")},
		// Homes: none, already there, a bad role, a stopped daemon.
		{"status", "--home", nohome}, {"job", "ls", "--home", nohome}, {"init", "--role", "pilot", "--home", nohome},
		{"init", "--role", "renter", "--home", stopped}, {"status", "--home", stopped}, {"leases", "--home", stopped},
		{"job", "submit", "--home", stopped, "--module", bogusJob, "--max-price", "1", "--duration", "1m"},
		// Config values, from flags.
		{"daemon", "--home", stopped, "--set", "p2p.nat=maybe"},
		{"daemon", "--home", stopped, "--set", "market.refresh=1d"},
		{"daemon", "--home", stopped, "--set", "p2p.conn_low=many"},
		{"daemon", "--home", stopped, "--set", "role=pilot"},
		{"daemon", "--home", stopped, "--set", "gpu.backend=sim", "--set", "gpu.sim.profiles=h100,tpu"},
		{"daemon", "--home", stopped, "--set", "provider.runtimes=java"},
		{"daemon", "--home", stopped, "--set", "p2p.reconnect_min=3s", "--set", "p2p.reconnect_max=1s"},
		{"daemon", "--home", stopped, "--set", "no.such_key=1"},
		{"daemon", "--home", stopped, "--bootstrap", "foo"},
		{"daemon", "--home", stopped, "--listen", "tcp:7401"},
		// A home in use, a taken API port.
		{"daemon", "--home", renter},
		{"daemon", "--home", stopped, "--api-listen", apiAddr, "--listen", "/ip4/127.0.0.1/tcp/0"},
		// The running renter's refusals.
		{"job", "status", "zzzzzzzz", "--home", renter}, {"job", "logs", "JOB", "--home", renter},
		{"job", "result", bogusJob, "--home", renter}, {"job", "cancel", bogusJob, "--home", renter},
		{"job", "forward", bogusJob, "8080", "--stop", "--home", renter},
		{"job", "forward", bogusJob, "http", "--home", renter},
		{"market", "search", "vrma>=40", "--home", renter}, {"market", "search", "gpu=h100 price<cheap", "--home", renter},
		{"market", "show", "12D3KooWnotapeer", "--home", renter}, {"rep", "12D3KooWnotapeer", "--home", renter},
		{"attest", "export", "lease-x", "--home", renter}, {"earnings", "--home", renter}, {"advise", "--home", renter},
		{"artifact", "add", filepath.Join(dir, "none.wasm"), "--home", renter},
		{"job", "submit", "--home", renter, "-f", spec},
		{"job", "submit", "--home", renter, "--module", bogusJob, "--max-price", "-1", "--duration", "2d", "--tier", "bronz"},
		{"job", "submit", "--home", renter, "--gpu", "h10", "--image", "busybox", "--max-price", "2", "--duration", "1m"},
		{"job", "submit", "--home", renter, "--module", bogusJob, "--max-price", "2", "--duration", "1m"},
	}
	for _, args := range fails {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			out, code := runCLI(args...)
			if os.Getenv("WORDING_SHOW") != "" {
				t.Log(out)
			}
			if code == 0 {
				t.Errorf("exit 0, want a failure:\n%s", out)
			}
			for _, p := range wordingProblems(out) {
				t.Errorf("%s in:\n%s", p, out)
			}
		})
	}

	// What a new node prints before anything happened: no zero times,
	// no Go lists.
	works := [][]string{
		{"--version"}, {"status", "--home", renter}, {"peers", "--home", renter}, {"leases", "--home", renter},
		{"job", "ls", "--home", renter}, {"rep", "--home", renter}, {"market", "prices", "--home", renter, "--window", "7d"},
		{"spend", "--home", renter}, {"artifact", "add", module, "--home", renter},
		{"artifact", "ls", "--home", renter},
		// The doctor reads the running renter's own config, and before
		// init checks the host with a provider's defaults.
		{"doctor", "--home", renter},
	}
	for _, args := range works {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			out, code := runCLI(args...)
			if code != 0 {
				t.Errorf("exit %d:\n%s", code, out)
			}
			if args[0] == "doctor" && !strings.Contains(out, "(the running daemon's config)") {
				t.Errorf("the doctor did not read the daemon's config:\n%s", out)
			}
			for _, p := range wordingProblems(out) {
				t.Errorf("%s in:\n%s", p, out)
			}
		})
	}
}

// runCLI runs the CLI in process and returns its output and exit code.
func runCLI(args ...string) (string, int) {
	var out bytes.Buffer
	code := Main(args, &out, &out)
	return out.String(), code
}

// startRenter runs a renter node with its API on an ephemeral port until
// the test ends, and returns its home and API address.
func startRenter(t *testing.T, home string) (string, string) {
	t.Helper()
	cfg := node.DefaultConfig(node.RoleRenter)
	cfg.P2P.Listen = []string{"/ip4/127.0.0.1/tcp/0"}
	cfg.P2P.NAT = false
	cfg.API.Listen = "127.0.0.1:0"
	if _, err := node.Init(home, node.RoleRenter, node.InitOptions{Config: &cfg}); err != nil {
		t.Fatal(err)
	}
	cfg.Home = home
	n, err := node.New(cfg, node.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- n.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
		_ = n.Close()
	})
	// Run writes api.url, which the CLI reads.
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(node.APIURLPath(home)); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the renter wrote no api.url in 30 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	return home, strings.TrimPrefix(n.APIURL(), "http://")
}
