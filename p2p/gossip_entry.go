package p2p

import (
	"sync/atomic"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	pb "github.com/libp2p/go-libp2p-pubsub/pb"
	"github.com/libp2p/go-libp2p/core/peer"
)

// EntryCheck gives a topic's entry check, nil for a topic with none
// (SetEntryCheck). An entry check is a cheap check of a message that from
// forwarded, run before gossipsub takes the message as seen; it says
// whether the message may go on to the topic's validator.
type EntryCheck func(topic string) func(from peer.ID, data []byte) bool

// entryChecks lets messages in before gossipsub remembers them.
//
// Why before: gossipsub marks a message seen before any validator runs,
// so a validator's Withhold (ValidationIgnore) drops that message for
// good, including the copies other peers forward later. A verdict about
// the forwarder, such as "this peer has passed on its share of fresh
// renters' RFQs", then also drops the message when the author's own copy
// arrives a moment later. A hostile peer could spend its budget on junk
// and then relay honest renters' RFQs first, so that nobody it reaches
// first ever bids on them. A message cut here is not remembered: the next
// copy, from another peer, is checked afresh.
//
// Each message let in is kept (by gossipsub's message ID, for as long as
// gossipsub remembers what it saw), so its later copies pass without
// spending their forwarders' budgets again: gossipsub drops them as seen.
type entryChecks struct {
	check atomic.Pointer[EntryCheck]
	let   *lru.Cache[string, time.Time] // message ID -> when it was let in
	now   func() time.Time
}

// entryKept bounds the messages remembered as let in, and entrySeenFor is
// how long: gossipsub's own seen-message TTL.
const (
	entryKept    = 1 << 16
	entrySeenFor = 2 * time.Minute
)

func newEntryChecks() *entryChecks {
	let, err := lru.New[string, time.Time](entryKept)
	if err != nil {
		panic(err) // only for a size below one
	}
	return &entryChecks{let: let, now: time.Now}
}

// set installs f (nil: every message is let in).
func (e *entryChecks) set(f EntryCheck) {
	if f == nil {
		e.check.Store(nil)
		return
	}
	e.check.Store(&f)
}

// admit reports whether m, forwarded by from, goes on to gossipsub.
func (e *entryChecks) admit(from peer.ID, m *pb.Message) bool {
	f := e.check.Load()
	if f == nil {
		return true
	}
	check := (*f)(m.GetTopic())
	if check == nil {
		return true
	}
	id, now := contentID(m), e.now()
	if at, ok := e.let.Get(id); ok && now.Sub(at) < entrySeenFor {
		return true
	}
	if !check(from, m.GetData()) {
		return false
	}
	e.let.Add(id, now)
	return true
}

// SetEntryCheck gives each joined topic's entry check, which a message a
// peer forwards on it passes before gossipsub sees it (EntryCheck,
// entryChecks). A message it refuses is cut from its RPC, uncharged, and
// counted as withheld on its topic; a later copy of it from another peer
// is checked again. It runs on gossipsub's event loop, once per message
// let in and once per copy refused, so it must be cheap: a budget, never
// a signature. The messages let in are remembered in a bounded cache, so
// peers flooding it can at worst make honest copies spend their
// forwarders' budgets again. Set it before Run.
func (n *Node) SetEntryCheck(f EntryCheck) { n.entry.set(f) }

// entryAdmit is admit for the RPC inspector, counting what it refuses.
// Messages on topics this node has not joined go on untouched: gossipsub
// neither validates nor relays them.
func (n *Node) entryAdmit(from peer.ID, m *pb.Message) bool {
	if !n.joined.has(m.GetTopic()) || n.entry.admit(from, m) {
		return true
	}
	n.metrics.validated(m.GetTopic(), Withhold)
	return false
}
