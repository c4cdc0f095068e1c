package p2p

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	pb "github.com/libp2p/go-libp2p-pubsub/pb"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// A message the entry check cuts is not remembered: when a hostile relay
// passes on a message first and its copy is cut, the author's own copy,
// arriving after it, is still taken. With the same verdict as a
// validator's Withhold, gossipsub would have marked the message seen at
// the relay's copy and dropped the author's.
func TestEntryCutMessageIsTakenFromItsAuthor(t *testing.T) {
	const topic = "idlegrid/test-entry/1"
	nodes := mockNet(t, 4, func(_ int, c *Config) {
		c.TopicPolicy = func(t string) bool { return strings.HasPrefix(t, "idlegrid/test-entry/") }
	})
	relay, author, sub := nodes[1], nodes[2], nodes[3]
	var mu sync.Mutex
	checked := map[peer.ID]int{} // at sub, by forwarder
	for _, n := range nodes[1:] {
		waitFor(t, "routing table", 30*time.Second, n.Ready)
		n.SetValidatorFactory(func(string) RecordValidator {
			return NoRecord(func(context.Context, peer.ID, peer.ID, []byte) Verdict { return Accept })
		})
		n.SetEntryCheck(func(string) func(peer.ID, []byte) bool {
			return func(from peer.ID, _ []byte) bool {
				if n == sub {
					mu.Lock()
					checked[from]++
					mu.Unlock()
				}
				return from != relay.ID()
			}
		})
	}
	got := make(chan string, 4)
	ctx := t.Context()
	for _, n := range nodes[1:] {
		if err := n.Subscribe(ctx, topic, func(m Message) {
			if n == sub {
				got <- string(m.Data)
			}
		}); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range []*Node{relay, author} {
		waitFor(t, "sub as a topic peer", 30*time.Second, func() bool {
			for _, p := range n.ListTopicPeers(topic) {
				if p == sub.ID() {
					return true
				}
			}
			return false
		})
	}
	const data = "an honest renter's RFQ"
	if err := relay.Publish(ctx, topic, []byte(data), 1); err != nil {
		t.Fatal(err)
	}
	withheld := func(n *Node) float64 {
		return testutil.ToFloat64(n.metrics.validation.WithLabelValues(topic, "withhold"))
	}
	waitFor(t, "the relay's copy cut at sub", 30*time.Second, func() bool { return withheld(sub) > 0 })
	select {
	case m := <-got:
		t.Fatalf("sub took %q from the relay", m)
	default:
	}
	if err := author.Publish(ctx, topic, []byte(data), 1); err != nil {
		t.Fatalf("the author publishing a message its peers cut from the relay: %v", err)
	}
	select {
	case m := <-got:
		if m != data {
			t.Fatalf("sub took %q", m)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("sub never took the author's copy of a message it had cut from the relay")
	}
	mu.Lock()
	defer mu.Unlock()
	if checked[author.ID()] != 1 {
		t.Fatalf("sub checked %d copies from the author, want 1", checked[author.ID()])
	}
}

// Copies of a message let in are not checked again (gossipsub drops them
// as seen, and they must not spend their forwarders' budgets); those of a
// message cut are.
func TestEntryChecksLetEachMessageInOnce(t *testing.T) {
	e := newEntryChecks()
	if !e.admit("a", &pb.Message{Topic: ptr("t"), Data: []byte("x")}) {
		t.Fatal("no check set: a message was cut")
	}
	calls := 0
	e.set(func(topic string) func(peer.ID, []byte) bool {
		if topic == "unchecked" {
			return nil
		}
		return func(from peer.ID, _ []byte) bool {
			calls++
			return from != "hostile"
		}
	})
	msg := func(data string) *pb.Message { return &pb.Message{Topic: ptr("t"), Data: []byte(data)} }
	for range 3 {
		if e.admit("hostile", msg("m1")) {
			t.Fatal("the check refused it, yet it was let in")
		}
	}
	if calls != 3 {
		t.Fatalf("%d checks of three copies of a message cut, want 3", calls)
	}
	if !e.admit("honest", msg("m1")) {
		t.Fatal("an honest peer's copy of a message cut before was cut")
	}
	for _, from := range []peer.ID{"honest", "hostile", "other"} {
		if !e.admit(from, msg("m1")) {
			t.Fatalf("a copy from %s of a message let in was cut", from)
		}
	}
	if calls != 4 {
		t.Fatalf("%d checks, want 4: copies of a message let in are not checked", calls)
	}
	if !e.admit("honest", &pb.Message{Topic: ptr("other topic"), Data: []byte("m1")}) || calls != 5 {
		t.Fatalf("the same data on another topic is another message: %d checks", calls)
	}
	// A topic with no entry check: its messages are neither checked nor
	// remembered.
	for range 3 {
		if !e.admit("hostile", &pb.Message{Topic: ptr("unchecked"), Data: []byte("m1")}) || calls != 5 {
			t.Fatalf("a topic with no entry check: cut, or %d checks", calls)
		}
	}
	if e.let.Len() != 2 {
		t.Fatalf("%d messages remembered, want the 2 let in on checked topics", e.let.Len())
	}
	// Once gossipsub has forgotten it, a copy is a new message again.
	later := time.Now().Add(entrySeenFor)
	e.now = func() time.Time { return later }
	if e.admit("hostile", msg("m1")) || calls != 6 {
		t.Fatalf("a copy after gossipsub forgot the message was not checked again: %d checks", calls)
	}
}

func ptr[T any](v T) *T { return &v }

// BenchmarkEntryAdmit is the entry check's cost on gossipsub's event loop
// for a 1 kB message (an RFQ is about that): a copy cut (hash, lookup, a
// refusing check) and a later copy of a message let in (hash, lookup).
func BenchmarkEntryAdmit(b *testing.B) {
	e := newEntryChecks()
	e.set(func(string) func(peer.ID, []byte) bool {
		return func(from peer.ID, _ []byte) bool { return from == "honest" }
	})
	data := make([]byte, 1024)
	m := &pb.Message{Topic: ptr("idlegrid/rfq/2/gpu/a10"), Data: data}
	b.Run("cut", func(b *testing.B) {
		for b.Loop() {
			e.admit("hostile", m)
		}
	})
	e.admit("honest", m)
	b.Run("copy_of_let_in", func(b *testing.B) {
		for b.Loop() {
			e.admit("hostile", m)
		}
	})
}
