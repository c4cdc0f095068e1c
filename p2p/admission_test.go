package p2p

import (
	"fmt"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"
)

func TestPickEviction(t *testing.T) {
	t0 := time.Unix(0, 0)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	// distinct is n connections from n subnets, opened a second apart.
	distinct := func(n int) map[string]inboundConn {
		m := map[string]inboundConn{}
		for i := range n {
			id := fmt.Sprintf("h%02d", i)
			m[id] = inboundConn{peer: peer.ID(id), subnet: id, opened: at(i)}
		}
		return m
	}
	with := func(m map[string]inboundConn, id, subnet string, opened int) map[string]inboundConn {
		m[id] = inboundConn{peer: peer.ID(id), subnet: subnet, opened: at(opened)}
		return m
	}
	for _, tc := range []struct {
		name      string
		conns     map[string]inboundConn
		protected map[peer.ID]bool
		values    map[string]connValue
		want      string
		crowded   bool
	}{
		{"a crowded subnet loses its youngest", map[string]inboundConn{
			"f1": {peer: "f1", subnet: "flood", opened: at(1)},
			"f2": {peer: "f2", subnet: "flood", opened: at(3)},
			"f3": {peer: "f3", subnet: "flood", opened: at(2)},
			"h1": {peer: "h1", subnet: "a", opened: at(4)},
		}, nil, nil, "f2", true},
		{"protected peers do not count towards a crowd", map[string]inboundConn{
			"f1": {peer: "f1", subnet: "flood", opened: at(1)},
			"f2": {peer: "f2", subnet: "flood", opened: at(3)},
			"f3": {peer: "f3", subnet: "flood", opened: at(2)},
			"h1": {peer: "h1", subnet: "a", opened: at(0)},
			"h2": {peer: "h2", subnet: "b", opened: at(5)},
		}, map[peer.ID]bool{"f2": true}, nil, "h1", false},
		{"distinct subnets: the newcomer stays, the oldest idle goes", with(distinct(9), "new", "new", 100), nil, nil, "h00", false},
		{"the newcomers' share is kept even when it is worth least",
			with(distinct(9), "new", "new", 100), nil,
			map[string]connValue{"h00": {score: 5}, "h01": {score: 5}, "h02": {score: 5}, "h03": {score: 5}, "h04": {score: 5}, "h05": {score: 5}, "h06": {score: 5}, "h07": {score: 5}},
			"h00", false},
		{"the connection manager's protection goes last", distinct(9), nil,
			map[string]connValue{"h00": {kept: true}, "h01": {kept: true}}, "h02", false},
		{"the lowest score goes first", distinct(9), nil,
			map[string]connValue{"h00": {score: 20}, "h01": {score: 20}, "h02": {score: 20}, "h03": {score: -3}}, "h03", false},
		{"a negative score goes before a neutral one", distinct(9), nil,
			map[string]connValue{"h05": {score: -3}}, "h05", false},
		{"idle before busy", distinct(9), nil,
			map[string]connValue{"h00": {streams: 2}, "h01": {streams: 1}, "h02": {streams: 1}, "h03": {streams: 1}, "h04": {streams: 1}, "h05": {streams: 1}, "h06": {streams: 2}}, "h01", false},
		{"all protected", map[string]inboundConn{
			"a1": {peer: "a1", subnet: "a", opened: at(1)},
		}, map[peer.ID]bool{"a1": true}, nil, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rule := admissionRule[string](8) // crowded above 2, 2 newcomers
			rule.protected = func(p peer.ID) bool { return tc.protected[p] }
			rule.value = func(c string, _ peer.ID) connValue { return tc.values[c] }
			got, crowded := pickEviction(tc.conns, rule)
			if got != tc.want || crowded != tc.crowded {
				t.Fatalf("evicted %q (crowded %v), want %q (crowded %v)", got, crowded, tc.want, tc.crowded)
			}
		})
	}
}

// The rule alone, as the issue found it: a cap's worth of honest peers
// from distinct subnets, then newcomers one at a time, each over the cap.
// No newcomer is the one evicted.
func TestPickEvictionNeverTurnsAwayDistinctNewcomers(t *testing.T) {
	const limit = 66
	rule := admissionRule[string](limit)
	conns := map[string]inboundConn{}
	t0 := time.Unix(0, 0)
	for i := range 5 * limit {
		id := fmt.Sprintf("p%03d", i)
		conns[id] = inboundConn{peer: peer.ID(id), subnet: id, opened: t0.Add(time.Duration(i) * time.Second)}
		if len(conns) <= limit {
			continue
		}
		victim, crowded := pickEviction(conns, rule)
		if victim == id || crowded {
			t.Fatalf("newcomer %d of %d distinct subnets: evicted %q (crowded %v)", i, 5*limit, victim, crowded)
		}
		delete(conns, victim)
	}
}

func TestDefaultSubnet(t *testing.T) {
	for _, tc := range []struct {
		peer, addr, want string
	}{
		{"a", "/ip4/192.0.2.7/tcp/7401", "192.0.2.0/24"},
		{"b", "/ip4/192.0.2.200/udp/7401/quic-v1", "192.0.2.0/24"},
		{"a", "/ip6/2001:db8:1:2::7/tcp/7401", "2001:db8:1::/48"},
		{"a", "/ip4/127.0.0.1/tcp/7401", "loopback/" + peer.ID("a").String()},
		{"b", "/ip4/127.0.0.1/tcp/7402", "loopback/" + peer.ID("b").String()},
		{"a", "/dns4/example.com/tcp/7401", "/dns4/example.com/tcp/7401"},
	} {
		if got := DefaultSubnet(peer.ID(tc.peer), ma.StringCast(tc.addr)); got != tc.want {
			t.Errorf("DefaultSubnet(%s, %s) = %q, want %q", tc.peer, tc.addr, got, tc.want)
		}
	}
}

// The resource manager keeps room for what the connection manager keeps
// plus handshakes, so the connection manager trims first and admission
// (capped at the room left) is the flood backstop.
func TestResourceManagerFollowsConnHigh(t *testing.T) {
	for _, tc := range []struct {
		memory        int64
		high, wantCap int
	}{
		{512 << 20, 192, 192}, // production defaults: 96 inbound from memory alone
		{64 << 20, 32, 32},
		{64 << 20, 8, 32}, // the memory budget's own room is the floor
	} {
		cfg := DefaultConfig()
		cfg.ResourceMemory, cfg.ConnHigh = tc.memory, tc.high
		rm, keep, err := newResourceManager(&cfg)
		if err != nil {
			t.Fatal(err)
		}
		_ = rm.Close()
		if keep != tc.wantCap {
			t.Errorf("memory %d MiB, ConnHigh %d: admission keeps %d, want %d", tc.memory>>20, tc.high, keep, tc.wantCap)
		}
	}
}
