package nodetest_test

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node"
	"github.com/idlegrid/idlegrid/node/nodetest"
	"github.com/idlegrid/idlegrid/p2p"
)

// TestProtocolDocMatchesNodes keeps docs/protocol.md honest about what
// nodes speak (issue 28): every idlegrid stream protocol a bootstrap peer,
// provider or renter registers and every topic it joins (a shard topic by
// its pattern) is in the doc, and every protocol ID the doc's §1 table
// lists and every topic of its §3.2 table is one some node serves. The
// protocols are read from the running hosts, not from a list that could
// drift from the handlers.
func TestProtocolDocMatchesNodes(t *testing.T) {
	raw, err := os.ReadFile("../../docs/protocol.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	c := nodetest.New(t, 3, nodetest.Options{})
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := c.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	provider, renter := c.ByRole(node.RoleProvider)[0].Node, c.ByRole(node.RoleRenter)[0].Node
	// A provider follows its shards once its capacity is known; a renter
	// the digest topics of the shards its market view learns of.
	onShard := func(n *node.Node, kind auction.ShardTopicKind) func() bool {
		return func() bool {
			return slices.ContainsFunc(n.P2P().JoinedTopics(), func(topic string) bool {
				st, err := auction.ParseShardTopic(topic)
				return err == nil && st.Kind == kind
			})
		}
	}
	for _, w := range []struct {
		what string
		cond func() bool
	}{
		{"the provider on an RFQ shard", onShard(provider, auction.ShardTopicRFQ)},
		{"the provider on a digest shard", onShard(provider, auction.ShardTopicDigest)},
		{"the renter on a digest shard", onShard(renter, auction.ShardTopicDigest)},
	} {
		if err := nodetest.WaitFor(ctx, w.what, w.cond); err != nil {
			t.Fatal(err)
		}
	}

	served := map[string]bool{}
	for _, m := range c.Members {
		for _, id := range m.Node.P2P().Host().Mux().Protocols() {
			if strings.HasPrefix(string(id), "/idlegrid/") {
				served[string(id)] = true
			}
		}
		for _, topic := range append(m.Node.P2P().JoinedTopics(), p2p.AllTopics...) {
			if pattern := topicPattern(topic); !strings.Contains(doc, "`"+pattern+"`") {
				t.Errorf("%s (%s) uses topic %s, but docs/protocol.md does not name `%s`", m.Role, m.Node.ID(), topic, pattern)
			}
		}
	}
	for id := range served {
		if !strings.Contains(doc, "`"+id+"`") {
			t.Errorf("nodes serve %s, but docs/protocol.md does not name it", id)
		}
	}
	if len(served) < 6 {
		t.Fatalf("nodes serve only %v: did the cluster start every role?", served)
	}

	listed := tableColumn(t, doc, "### idlegrid protocol IDs")
	for _, id := range listed {
		if !served[id] {
			t.Errorf("docs/protocol.md §1 lists %s, but no node serves it", id)
		}
	}
	for _, topic := range tableColumn(t, doc, "### 3.2 Topics") {
		name := strings.NewReplacer("<family>", "h100", "<i>", "3", "<G>", "32").Replace(topic)
		if _, err := auction.ParseShardTopic(name); err != nil && !slices.Contains(p2p.AllTopics, name) {
			t.Errorf("docs/protocol.md §3.2 lists topic %s, which nodes do not admit", topic)
		}
	}
}

// topicPattern is the name the doc gives a topic: a shard topic by its
// pattern (idlegrid/rfq/2/gpu/<family>), any other by itself.
func topicPattern(topic string) string {
	st, err := auction.ParseShardTopic(topic)
	if err != nil {
		return topic
	}
	shard := "cpu"
	if strings.HasPrefix(string(st.Shard), "gpu/") {
		shard = "gpu/<family>"
	}
	if st.Kind == auction.ShardTopicRFQ {
		return auction.RFQShardPrefix + shard
	}
	return auction.DigestShardPrefix + shard
}

// tableColumn returns the code spans of the first column of the first
// table after the heading.
func tableColumn(t *testing.T, doc, heading string) []string {
	t.Helper()
	_, rest, ok := strings.Cut(doc, heading+"\n")
	if !ok {
		t.Fatalf("docs/protocol.md has no heading %q", heading)
	}
	var out []string
	inTable := false
	for _, line := range strings.Split(rest, "\n") {
		if !strings.HasPrefix(line, "|") {
			if inTable {
				break
			}
			continue
		}
		inTable = true
		cell := strings.Split(line, "|")[1]
		for i, span := range strings.Split(cell, "`") {
			if i%2 == 1 { // inside a code span
				out = append(out, span)
			}
		}
	}
	if len(out) == 0 {
		t.Fatalf("docs/protocol.md: no table rows after %q", heading)
	}
	return out
}
