//go:build linux

package main_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A NAT topology of Linux network namespaces, built by the tests that run
// the real binary behind NATs (e2e_nat_test.go):
//
//	          "internet" (namespace <p>-wan, bridge br0, 7.0.0.0/24)
//	  ┌──────────────┬─────────────────┬─────────────────┐
//	boot 7.0.0.1   nat-a 7.0.0.11     nat-r 7.0.0.12     nat-s 7.0.0.13
//	(bootstrap,    MASQUERADE         MASQUERADE         MASQUERADE --random-fully
//	 relay)          │ 10.0.1.0/24      │ 10.0.2.0/24      │ 10.0.3.0/24
//	               prov-a 10.0.1.2    renter 10.0.2.2    prov-s 10.0.3.2
//
// Each router drops unsolicited inbound traffic, as home routers do (an
// RST from the router would break TCP hole punching where a real router
// stays silent). nat-a and nat-r keep a flow's source port (endpoint-
// independent mapping), so hole punching works between them; nat-s picks
// a random port per flow, so what the relay sees is not what a peer would
// have to dial: it cannot be hole-punched.
//
// The "public" side is 7.0.0.0/24, not a documentation range: libp2p
// (go-multiaddr's manet.IsPublicAddr) counts 192.0.2.0/24, 198.51.100.0/24
// and 203.0.113.0/24 as unroutable, and its AutoNAT, relay reservations and
// hole punching only use public addresses, so a topology on documentation
// ranges would never run the code paths under test. No namespace has a
// link to the host's own network: nothing here can reach the internet.
type natTopology struct {
	prefix string
}

// Namespaces of the topology, by role.
const (
	nsWAN     = "wan"
	nsBoot    = "boot"
	nsNATA    = "nat-a"
	nsProvA   = "prov-a"
	nsNATR    = "nat-r"
	nsRenter  = "renter"
	nsNATS    = "nat-s"
	nsProvS   = "prov-s"
	wanPrefix = "7.0.0."
	bootIP    = wanPrefix + "1"
)

// lanIP is the address of the host behind router nat (1, 2 or 3).
func lanIP(lan int) string { return fmt.Sprintf("10.0.%d.2", lan) }

// needNetns skips the test unless it can build network namespaces (root,
// ip and iptables); with IDLEGRID_REQUIRE_NETNS=1 it fails instead.
func needNetns(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("network-namespace test")
	}
	var missing []string
	if os.Geteuid() != 0 {
		missing = append(missing, "root")
	}
	for _, tool := range []string{"ip", "iptables"} {
		if _, err := exec.LookPath(tool); err != nil {
			missing = append(missing, tool)
		}
	}
	if len(missing) == 0 {
		// Root in a container may still lack the right to make namespaces.
		b := make([]byte, 3)
		_, _ = rand.Read(b)
		probe := "igprobe" + hex.EncodeToString(b)
		out, err := exec.Command("ip", "netns", "add", probe).CombinedOutput()
		if err == nil {
			_ = exec.Command("ip", "netns", "del", probe).Run()
			return
		}
		missing = append(missing, fmt.Sprintf("the right to add one (%v: %s)", err, strings.TrimSpace(string(out))))
	}
	if os.Getenv("IDLEGRID_REQUIRE_NETNS") == "1" {
		t.Fatalf("network namespaces required (IDLEGRID_REQUIRE_NETNS=1) but missing: %s", strings.Join(missing, ", "))
	}
	t.Skipf("network namespaces need %s", strings.Join(missing, ", "))
}

// newNATTopology builds the topology under a random prefix, so that the
// leftovers of a crashed run never collide with it, and removes it at
// cleanup (registered first, so it runs after the daemons' cleanups).
// With forwardA, nat-a forwards TCP and UDP port natP2PPort to prov-a, as
// an operator forwards a port on a home router: prov-a is then public.
func newNATTopology(t *testing.T, forwardA bool) *natTopology {
	t.Helper()
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	n := &natTopology{prefix: "ig" + hex.EncodeToString(b)}
	all := []string{nsWAN, nsBoot, nsNATA, nsProvA, nsNATR, nsRenter, nsNATS, nsProvS}
	t.Cleanup(func() {
		for _, ns := range all {
			_ = exec.Command("ip", "netns", "del", n.ns(ns)).Run()
		}
	})
	for _, ns := range all {
		n.ip(t, "netns", "add", n.ns(ns))
		n.ip(t, "-n", n.ns(ns), "link", "set", "lo", "up")
	}
	n.ip(t, "-n", n.ns(nsWAN), "link", "add", "br0", "type", "bridge")
	n.ip(t, "-n", n.ns(nsWAN), "link", "set", "br0", "up")
	n.public(t, nsBoot, "eth0", bootIP)
	for i, r := range []struct{ router, host string }{{nsNATA, nsProvA}, {nsNATR, nsRenter}, {nsNATS, nsProvS}} {
		lan := i + 1
		n.public(t, r.router, "wan0", fmt.Sprintf("%s%d", wanPrefix, 10+lan))
		n.ip(t, "link", "add", "lan0", "netns", n.ns(r.router), "type", "veth", "peer", "name", "eth0", "netns", n.ns(r.host))
		n.ip(t, "-n", n.ns(r.router), "addr", "add", fmt.Sprintf("10.0.%d.1/24", lan), "dev", "lan0")
		n.ip(t, "-n", n.ns(r.router), "link", "set", "lan0", "up")
		n.ip(t, "-n", n.ns(r.host), "addr", "add", lanIP(lan)+"/24", "dev", "eth0")
		n.ip(t, "-n", n.ns(r.host), "link", "set", "eth0", "up")
		n.ip(t, "-n", n.ns(r.host), "route", "add", "default", "via", fmt.Sprintf("10.0.%d.1", lan))
		n.exec(t, r.router, "sh", "-c", "echo 1 > /proc/sys/net/ipv4/ip_forward")
		masq := []string{"iptables", "-t", "nat", "-A", "POSTROUTING", "-o", "wan0", "-j", "MASQUERADE"}
		if r.router == nsNATS {
			masq = append(masq, "--random-fully")
		}
		n.exec(t, r.router, masq...)
		n.exec(t, r.router, "iptables", "-A", "INPUT", "-i", "wan0", "-m", "conntrack", "!", "--ctstate", "ESTABLISHED,RELATED", "-j", "DROP")
		if forwardA && r.router == nsNATA {
			for _, proto := range []string{"tcp", "udp"} {
				n.exec(t, r.router, "iptables", "-t", "nat", "-A", "PREROUTING", "-i", "wan0", "-p", proto, "--dport", strconv.Itoa(natP2PPort),
					"-j", "DNAT", "--to-destination", fmt.Sprintf("%s:%d", lanIP(lan), natP2PPort))
			}
		}
	}
	return n
}

// ns is the full name of a namespace of the topology.
func (n *natTopology) ns(role string) string { return n.prefix + "-" + role }

// public plugs namespace role into the internet bridge as ifname with ip.
func (n *natTopology) public(t *testing.T, role, ifname, ip string) {
	t.Helper()
	port := "p-" + role
	n.ip(t, "link", "add", port, "netns", n.ns(nsWAN), "type", "veth", "peer", "name", ifname, "netns", n.ns(role))
	n.ip(t, "-n", n.ns(nsWAN), "link", "set", port, "master", "br0", "up")
	n.ip(t, "-n", n.ns(role), "addr", "add", ip+"/24", "dev", ifname)
	n.ip(t, "-n", n.ns(role), "link", "set", ifname, "up")
}

func (n *natTopology) ip(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// exec runs a command inside namespace role.
func (n *natTopology) exec(t *testing.T, role string, args ...string) {
	t.Helper()
	if out, err := n.command(role, args...).CombinedOutput(); err != nil {
		t.Fatalf("in %s: %s: %v\n%s", role, strings.Join(args, " "), err, out)
	}
}

// command is args run inside namespace role.
func (n *natTopology) command(role string, args ...string) *exec.Cmd {
	return exec.Command("ip", append([]string{"netns", "exec", n.ns(role)}, args...)...)
}

// httpClient is an HTTP client whose connections are made inside
// namespace role (its loopback, its routes): for a daemon's API and for a
// forward's local listener there.
func (n *natTopology) httpClient(role string) *http.Client {
	path := "/var/run/netns/" + n.ns(role)
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return dialInNetns(ctx, path, network, addr)
		},
	}}
}

// dialInNetns dials from inside the network namespace at path. A socket
// belongs to the namespace of the thread that creates it, so the dial
// runs on a locked thread that enters the namespace and is never unlocked:
// Go ends that thread with the goroutine instead of reusing it.
func dialInNetns(ctx context.Context, path, network, addr string) (net.Conn, error) {
	type result struct {
		c   net.Conn
		err error
	}
	done := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			done <- result{err: fmt.Errorf("open %s: %w", path, err)}
			return
		}
		defer unix.Close(fd)
		if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
			done <- result{err: fmt.Errorf("setns %s: %w", path, err)}
			return
		}
		var d net.Dialer
		c, err := d.DialContext(ctx, network, addr)
		done <- result{c, err}
	}()
	r := <-done
	return r.c, r.err
}
