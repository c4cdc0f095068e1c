// Package conformance checks a running peer against docs/protocol.md from
// the outside: it dials the peer with its own libp2p host, as another
// implementation would, speaks the documented messages and reports where
// the peer departs from the spec. It uses no part of the node but the
// record codecs and the protocol IDs, so what it exercises is the wire.
package conformance

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/fxamacker/cbor/v2"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	"github.com/libp2p/go-msgio"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node/jobproto"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/node/trust"
)

// Result is the outcome of one named check.
type Result struct {
	Check  string // "identify", "digest-summary", ...
	OK     bool
	Detail string // what was seen, or where the peer departs from the spec
}

// Report is every check's result, in the order they ran.
type Report []Result

// Failed reports whether any check failed.
func (r Report) Failed() bool {
	return slices.ContainsFunc(r, func(x Result) bool { return !x.OK })
}

// everyNode are the protocol IDs (docs/protocol.md §1) every idlegrid
// node serves, whatever its role.
var everyNode = []protocol.ID{"/idlegrid/meshsub/1.2.0", trust.DigestsProto}

// errBookChanged: a page and the summary before it count different
// digests. Digests arrive and expire between two requests, so Check asks
// for both again, up to pageTries times, before it reports it.
var errBookChanged = errors.New("the digest count changed between the summary and the page")

const pageTries = 3

// Timeout bounds each exchange (§4: digest sync's own limit).
const Timeout = 10 * time.Second

// maxSyncResponse is digest sync's response limit (§6.4).
const maxSyncResponse = 772 << 10

// Check connects h to target and runs every check. It stops early only
// when the peer cannot be reached.
func Check(ctx context.Context, h host.Host, target peer.AddrInfo) Report {
	var r Report
	add := func(check string, err error, detail string) {
		if err != nil {
			r = append(r, Result{Check: check, Detail: err.Error()})
			return
		}
		r = append(r, Result{Check: check, OK: true, Detail: detail})
	}
	cctx, cancel := context.WithTimeout(ctx, Timeout)
	err := h.Connect(cctx, target)
	cancel()
	add("dial", err, fmt.Sprintf("connected to %s", target.ID))
	if err != nil {
		return r
	}
	protos, err := identified(ctx, h, target.ID)
	market := slices.Contains(protos, lease.JobProto)
	if err == nil {
		err = missing(protos, everyNode)
	}
	add("identify", err, fmt.Sprintf("idlegrid protocols %v", protos))
	count, err := checkSummary(ctx, h, target.ID)
	add("digest-summary", err, fmt.Sprintf("256 buckets, %d digests", count))
	n, err := checkPage(ctx, h, target.ID, count)
	// A live book changes: a digest that arrives or expires between the
	// summary and the page makes their counts differ, which is no fault.
	// Both are asked again, a few times, before it counts as one.
	for try := 1; errors.Is(err, errBookChanged) && try < pageTries; try++ {
		if count, err = checkSummary(ctx, h, target.ID); err == nil {
			n, err = checkPage(ctx, h, target.ID, count)
		}
	}
	add("digest-page", err, fmt.Sprintf("%d digests open, signed by their peer, in sync order", n))
	if market {
		err := checkJobRefusal(ctx, h, target.ID)
		add("job-refusal", err, "a status request for an unknown lease is answered with a not_found header")
	}
	return r
}

// identified waits for identify and returns the peer's idlegrid protocols.
func identified(ctx context.Context, h host.Host, p peer.ID) ([]protocol.ID, error) {
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		protos, err := h.Peerstore().GetProtocols(p)
		if err != nil {
			return nil, err
		}
		var ours []protocol.ID
		for _, id := range protos {
			if len(id) > 10 && id[:10] == "/idlegrid/" {
				ours = append(ours, id)
			}
		}
		if len(ours) > 0 {
			slices.Sort(ours)
			return ours, nil
		}
		select {
		case <-ctx.Done():
			return nil, errors.New("identify named no idlegrid protocol")
		case <-tick.C:
		}
	}
}

func missing(have, want []protocol.ID) error {
	var miss []protocol.ID
	for _, id := range want {
		if !slices.Contains(have, id) {
			miss = append(miss, id)
		}
	}
	if len(miss) > 0 {
		return fmt.Errorf("does not serve %v (every idlegrid node does)", miss)
	}
	return nil
}

// exchange runs one request/response exchange of §4: one frame each way,
// the request's write side closed after it.
func exchange(ctx context.Context, h host.Host, p peer.ID, proto protocol.ID, req []byte, maxResp int) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	s, err := h.NewStream(ctx, p, proto)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", proto, err)
	}
	defer s.Close()
	stop := context.AfterFunc(ctx, func() { _ = s.Reset() })
	defer stop()
	if err := msgio.NewVarintWriter(s).WriteMsg(req); err != nil {
		return nil, fmt.Errorf("%s: write: %w", proto, err)
	}
	if err := s.CloseWrite(); err != nil {
		return nil, fmt.Errorf("%s: close write: %w", proto, err)
	}
	resp, err := msgio.NewVarintReaderSize(s, maxResp).ReadMsg()
	if err != nil {
		return nil, fmt.Errorf("%s: read the response frame: %w", proto, err)
	}
	return resp, nil
}

// The digest sync messages as §6.4 gives them.
type (
	syncRequest struct {
		V       uint   `cbor:"v"`
		Sum     bool   `cbor:"sum,omitempty"`
		Buckets []byte `cbor:"buckets,omitempty"`
		After   string `cbor:"after,omitempty"`
		Limit   uint32 `cbor:"limit,omitempty"`
	}
	syncSummary struct {
		V    uint       `cbor:"v"`
		Sums [][]uint64 `cbor:"sums"`
	}
	syncPage struct {
		V       uint     `cbor:"v"`
		Digests [][]byte `cbor:"digests"`
		Next    string   `cbor:"next,omitempty"`
	}
)

var (
	enc, _    = cbor.CoreDetEncOptions().EncMode()
	strict, _ = cbor.DecOptions{DupMapKey: cbor.DupMapKeyEnforcedAPF, ExtraReturnErrors: cbor.ExtraDecErrorUnknownField}.DecMode()
)

// checkSummary asks for the whole book's summary and returns how many
// digests it counts.
func checkSummary(ctx context.Context, h host.Host, p peer.ID) (int, error) {
	req, _ := enc.Marshal(syncRequest{V: 2, Sum: true})
	raw, err := exchange(ctx, h, p, trust.DigestsProto, req, maxSyncResponse)
	if err != nil {
		return 0, err
	}
	var s syncSummary
	if err := strict.Unmarshal(raw, &s); err != nil {
		return 0, fmt.Errorf("summary does not decode as {v, sums}: %w", err)
	}
	if s.V != 2 || len(s.Sums) != auction.DigestBuckets {
		return 0, fmt.Errorf("summary has v %d and %d buckets, want v 2 and %d", s.V, len(s.Sums), auction.DigestBuckets)
	}
	total := 0
	for i, pair := range s.Sums {
		if len(pair) != 2 {
			return 0, fmt.Errorf("bucket %d is %v, not [count, hash]", i, pair)
		}
		total += int(pair[0])
	}
	return total, nil
}

// checkPage asks for the first page of every bucket and checks each
// digest the way §6.4 asks a client to.
func checkPage(ctx context.Context, h host.Host, p peer.ID, summarized int) (int, error) {
	all := make([]byte, auction.DigestBuckets/8)
	for i := range all {
		all[i] = 0xff
	}
	req, _ := enc.Marshal(syncRequest{V: 2, Buckets: all, Limit: 256})
	raw, err := exchange(ctx, h, p, trust.DigestsProto, req, maxSyncResponse)
	if err != nil {
		return 0, err
	}
	var page syncPage
	if err := strict.Unmarshal(raw, &page); err != nil {
		return 0, fmt.Errorf("page does not decode as {v, digests, next}: %w", err)
	}
	if page.V != 2 || len(page.Digests) > 256 {
		return 0, fmt.Errorf("page has v %d and %d digests, want v 2 and at most 256", page.V, len(page.Digests))
	}
	last := ""
	for i, env := range page.Digests {
		d, signer, err := auction.OpenDigest(env)
		if err != nil {
			return i, fmt.Errorf("digest %d does not open: %w", i, err)
		}
		if signer.String() != d.Peer {
			return i, fmt.Errorf("digest %d of %s is signed by %s", i, d.Peer, signer)
		}
		if last != "" && !auction.SyncBefore(last, d.Peer) {
			return i, fmt.Errorf("digest %d (%s) is not after %s in sync order", i, d.Peer, last)
		}
		last = d.Peer
	}
	switch {
	case page.Next != "" && page.Next != last:
		return len(page.Digests), fmt.Errorf("next is %s, not the page's last peer %s", page.Next, last)
	case page.Next == "" && len(page.Digests) != summarized:
		return len(page.Digests), fmt.Errorf("%w: the last page holds %d digests, the summary counted %d", errBookChanged, len(page.Digests), summarized)
	}
	return len(page.Digests), nil
}

// checkJobRefusal asks for the status of a lease the peer cannot know:
// §4.2 says a refusal is a header with a code, never a reset.
func checkJobRefusal(ctx context.Context, h host.Host, p peer.ID) error {
	req, err := jobproto.EncodeRequest(&jobproto.Request{Op: jobproto.OpStatus, Lease: "conformance-unknown-lease"})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	s, err := h.NewStream(ctx, p, lease.JobProto)
	if err != nil {
		return fmt.Errorf("open %s: %w", lease.JobProto, err)
	}
	defer s.Close()
	stop := context.AfterFunc(ctx, func() { _ = s.Reset() })
	defer stop()
	if err := msgio.NewVarintWriter(s).WriteMsg(req); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	r := msgio.NewVarintReaderSize(s, jobproto.MaxFrameBytes)
	for {
		frame, err := r.ReadMsg()
		switch {
		case errors.Is(err, io.EOF):
			return errors.New("the stream ended with no header")
		case err != nil:
			return fmt.Errorf("read the header: %w (a refusal must be a header, not a reset)", err)
		case len(frame) == 0:
			continue // a keepalive
		}
		hdr, err := jobproto.DecodeHeader(frame)
		if err != nil {
			return fmt.Errorf("header: %w", err)
		}
		if hdr.Code != jobproto.CodeNotFound && hdr.Code != jobproto.CodeForbidden {
			return fmt.Errorf("header code %q (error %q), want %q", hdr.Code, hdr.Error, jobproto.CodeNotFound)
		}
		return nil
	}
}
