package trust

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fxamacker/cbor/v2"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/p2p"
)

// RecordsProto serves the capacity records behind the digests a node
// vouches for: a node checking a digest asks the peer that passed it on
// (or served it in a sync page), and the provider itself, for the record
// before it looks it up in the DHT. The record is the provider's own
// signature whoever serves it, and it is checked by the DHT validator's
// rules (signer, expiry, clock skew); what a DHT lookup added was only
// where the copy came from, at the price of a lookup per provider per
// node: about N² lookups while N nodes form a network (docs/benchmarks.md,
// "200 nodes on mocknet"). The DHT stays the fallback, and the copy a
// renter's search reads. Request and response are canonical CBOR
// (docs/protocol.md §6.5).
const RecordsProto protocol.ID = "/idlegrid/records/1.0.0"

const (
	recordsVersion = 1
	// recordsBatch is the most records one request asks for: a sync page's
	// new providers go in batches of this many.
	recordsBatch = 32
	// recordsAskTimeout bounds one ask of a check; the DHT lookup follows.
	recordsAskTimeout = 5 * time.Second
)

// RecordsLimits bound one exchange of RecordsProto: 32 peer IDs in, at
// most 32 records of MaxCapacitySize out.
var RecordsLimits = p2p.StreamLimits{MaxRequest: 4 << 10, MaxResponse: recordsBatch*auction.MaxCapacitySize + 4<<10, Timeout: 10 * time.Second}

// Serving rates, per asking peer, per its network and for all askers: a
// node checking a network's worth of providers at once asks each peer a
// few dozen times (about 25 per peer when 200 providers' digests arrive
// over 8 mesh peers).
const (
	recordsPeerRate, recordsPeerBurst       = 10, 64
	recordsNetworkRate, recordsNetworkBurst = 20, 128
	recordsAllRate, recordsAllBurst         = 100, 400
)

// Abuse of the records protocol: requests over a rate, and answers no
// honest server sends (records that do not open, of providers not asked
// for, or more than asked). A record that is merely old or expired is not
// charged: the server's copy may have been current when it checked it.
const (
	AbuseRecordsRate    p2p.AbuseReason = "records_rate"
	AbuseRecordsAnswer  p2p.AbuseReason = "records_bad_answer"
	recordsRatePoints                   = 1
	recordsAnswerPoints                 = 20
)

type recordsRequest struct {
	V     uint     `cbor:"v"`
	Peers []string `cbor:"peers"`
}

type recordsResponse struct {
	V       uint     `cbor:"v"`
	Records [][]byte `cbor:"records"`
}

var recordsDec, _ = cbor.DecOptions{
	DupMapKey: cbor.DupMapKeyEnforcedAPF, ExtraReturnErrors: cbor.ExtraDecErrorUnknownField,
	MaxArrayElements: recordsBatch, MaxNestedLevels: 4,
}.DecMode()

// recordRates are the serving budgets.
type recordRates struct{ peers, networks, all *budgets }

func newRecordRates() *recordRates {
	return &recordRates{
		peers:    newBudgets(recordsPeerRate, recordsPeerBurst, syncRateKeys),
		networks: newBudgets(recordsNetworkRate, recordsNetworkBurst, syncRateKeys),
		all:      newBudgets(recordsAllRate, recordsAllBurst, 1),
	}
}

var errRecordsRate = errors.New("records: too many requests")

// ServeRecords answers one RecordsProto request with the records this
// node holds of the providers asked for: its own, and the checked record
// of each provider it vouches for (backed). Providers it holds no record
// of are left out of the answer.
func (t *Trust) ServeRecords(_ context.Context, from peer.ID, req []byte) ([]byte, error) {
	now := t.now()
	switch {
	case !t.recordRates.peers.take(now, string(from)), !t.recordRates.networks.take(now, t.p2p.Subnet(from)):
		t.p2p.Guard().Charge(from, AbuseRecordsRate, recordsRatePoints)
		return nil, errRecordsRate
	case !t.recordRates.all.take(now, "all"):
		return nil, errRecordsRate
	}
	var r recordsRequest
	if err := recordsDec.Unmarshal(req, &r); err != nil || r.V != recordsVersion || len(r.Peers) == 0 {
		return nil, fmt.Errorf("records request: %w", errors.Join(p2p.ErrMalformed, err))
	}
	out := recordsResponse{V: recordsVersion, Records: [][]byte{}}
	for _, s := range r.Peers {
		id, err := peer.Decode(s)
		if err != nil || id.String() != s {
			return nil, fmt.Errorf("records request: %w: %q is not a peer ID", p2p.ErrMalformed, s)
		}
		if raw := t.servable(id, now); raw != nil {
			out.Records = append(out.Records, raw)
		}
	}
	return syncEnc.Marshal(out)
}

// servable is the record of id this node serves: its own, or a backed
// provider's cached one.
func (t *Trust) servable(id peer.ID, now time.Time) []byte {
	if id == t.self {
		if t.ownRecord == nil {
			return nil
		}
		return t.ownRecord()
	}
	if !t.ev.of(id.String()).Backed(now) {
		return nil
	}
	if c, ok := t.market.cached(id, now); ok {
		return c.raw
	}
	return nil
}

// askRecords asks src for the records of want and returns those that open,
// are signed by a provider asked for and are current; each is cached (the
// record checks read it from there, and this node serves it on). src is
// asked only while connected, serving the protocol and not charged
// lately; an answer no honest server sends is charged to it.
func (t *Trust) askRecords(ctx context.Context, src peer.ID, want []peer.ID) (map[peer.ID]*auction.Capacity, error) {
	if len(want) == 0 || src == "" || src == t.self {
		return nil, nil
	}
	if !t.servesRecords(src) {
		return nil, errNotAsked
	}
	raw, err := syncEnc.Marshal(recordsRequest{V: recordsVersion, Peers: peerStrings(want)})
	if err != nil {
		return nil, err
	}
	resp, err := t.p2p.Request(ctx, src, RecordsProto, raw, RecordsLimits)
	if err != nil {
		t.log.Debug("records ask", "peer", src, "err", err)
		return nil, fmt.Errorf("records from %s: %w", src, err)
	}
	var r recordsResponse
	if err := recordsDec.Unmarshal(resp, &r); err != nil || r.V != recordsVersion || len(r.Records) > len(want) {
		t.p2p.Guard().Charge(src, AbuseRecordsAnswer, recordsAnswerPoints)
		return nil, fmt.Errorf("records from %s: %w", src, errBadAnswer)
	}
	asked := make(map[peer.ID]bool, len(want))
	for _, p := range want {
		asked[p] = true
	}
	now := t.now()
	got := map[peer.ID]*auction.Capacity{}
	for _, raw := range r.Records {
		rec, signer, err := auction.OpenCapacity(raw)
		if err != nil || !asked[signer] || got[signer] != nil || rec.Peer != signer.String() {
			t.p2p.Guard().Charge(src, AbuseRecordsAnswer, recordsAnswerPoints)
			return nil, fmt.Errorf("records from %s: %w", src, errBadAnswer)
		}
		if rec.CheckTime(now) != nil {
			continue
		}
		got[signer] = t.market.keep(signer, rec, raw, now)
	}
	return got, nil
}

var (
	errNotAsked  = errors.New("not connected, not serving records, or charged lately")
	errBadAnswer = errors.New("an answer no honest server sends")
)

// servesRecords reports whether p can be asked for records now.
func (t *Trust) servesRecords(p peer.ID) bool {
	h := t.p2p.Host()
	if h.Network().Connectedness(p) != network.Connected || t.p2p.Guard().Points(p) >= syncCutoffPoints {
		return false
	}
	ok, err := h.Peerstore().SupportsProtocols(p, RecordsProto)
	return err == nil && len(ok) > 0
}

func peerStrings(ps []peer.ID) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.String()
	}
	return out
}
