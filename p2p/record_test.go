package p2p

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
)

// opened stands for a record a validator opened: what it hands on.
type opened struct{ text string }

// TestValidatorRecordReachesSubscribers: what a RecordValidator returns for
// a message it accepts reaches the topic's subscribers with that message,
// its own and its peers', the very value and not a copy, so that nothing
// after the validator opens the record (and checks its signature) again.
// A plain Validator's messages arrive with no record.
func TestValidatorRecordReachesSubscribers(t *testing.T) {
	nodes := mockNet(t, 3, nil)
	for i, n := range nodes[1:] {
		waitFor(t, fmt.Sprintf("node %d routing table", i+1), 30*time.Second, n.Ready)
	}
	ctx := t.Context()
	var mu sync.Mutex
	handedOn := map[*opened]bool{} // every record a validator returned
	got := map[int][]Message{}
	for i, n := range nodes[1:] {
		if err := n.RegisterRecordValidator(TopicRFQ, func(_ context.Context, _, _ peer.ID, data []byte) (Verdict, any) {
			rec := &opened{text: string(data)}
			mu.Lock()
			handedOn[rec] = true
			mu.Unlock()
			return Accept, rec
		}); err != nil {
			t.Fatal(err)
		}
		if err := n.RegisterValidator(TopicFraud, func(context.Context, peer.ID, peer.ID, []byte) Verdict { return Accept }); err != nil {
			t.Fatal(err)
		}
		for _, topic := range []string{TopicRFQ, TopicFraud} {
			if err := n.Subscribe(ctx, topic, func(m Message) {
				mu.Lock()
				got[i+1] = append(got[i+1], m)
				mu.Unlock()
			}); err != nil {
				t.Fatal(err)
			}
		}
	}
	pub := nodes[1]
	received := func(node int, topic string) bool {
		mu.Lock()
		defer mu.Unlock()
		for _, m := range got[node] {
			if m.Topic == topic {
				return true
			}
		}
		return false
	}
	// Published until both reach the other subscriber: the first may go
	// out before the two share a mesh.
	for seq := 0; !received(2, TopicRFQ) || !received(2, TopicFraud); seq++ {
		if seq == 300 {
			t.Fatal("the subscriber received nothing in 60 s")
		}
		for _, topic := range []string{TopicRFQ, TopicFraud} {
			pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			err := pub.Publish(pctx, topic, fmt.Appendf(nil, "%s %d", topic, seq), 1)
			cancel()
			if err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	for node, ms := range map[string][]Message{"the publisher's own": got[1], "its peer's": got[2]} {
		for _, m := range ms {
			switch m.Topic {
			case TopicRFQ:
				rec, ok := m.Record.(*opened)
				if !ok || !handedOn[rec] || rec.text != string(m.Data) {
					t.Errorf("%s subscription got %q with record %#v, not the one its validator opened", node, m.Data, m.Record)
				}
			case TopicFraud:
				if m.Record != nil {
					t.Errorf("%s subscription got a record %#v from a validator that hands none on", node, m.Record)
				}
			}
		}
	}
}
