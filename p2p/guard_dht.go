package p2p

import (
	"bytes"
	"context"
	"errors"

	dhtpb "github.com/libp2p/go-libp2p-kad-dht/pb"
	"github.com/libp2p/go-libp2p/core/network"
)

// dhtRequestHook charges the senders of bad DHT record PUTs.
//
// go-libp2p-kad-dht validates a PUT_VALUE inside its value store, where
// the record validator sees only the key and value, never the sender. Its
// OnRequestHook, though, runs on every inbound DHT message before the
// handler, with the stream (so the authenticated sender). Here we check
// the PUT's record with the DHT's own validator; a PUT that fails, or one
// over the sender's rate, or one from a banned peer, is charged and
// defused by clearing its record, which makes the handler refuse it ("nil
// record") and reset the stream without touching the store. A record the
// validator cannot judge because another protocol release wrote it
// (errors.ErrUnsupported) is defused the same way but never charged.
func (n *Node) dhtRequestHook(_ context.Context, s network.Stream, req *dhtpb.Message) {
	if req.GetType() != dhtpb.Message_PUT_VALUE {
		return
	}
	from := s.Conn().RemotePeer()
	switch {
	case n.blocklist.Has(from):
		n.metrics.dhtPut("banned")
	case !n.guard.AllowDHTPut(from):
		n.metrics.dhtPut("throttled")
	default:
		err := n.checkDHTPut(req)
		switch {
		case err == nil:
			n.metrics.dhtPut("valid")
			return
		case errors.Is(err, errors.ErrUnsupported):
			// A record of another protocol release: not stored, since
			// this build cannot check it, and not charged.
			n.metrics.dhtPut("other_version")
		default:
			n.metrics.dhtPut("invalid")
			n.guard.Charge(from, AbuseDHTRecord, 0)
		}
	}
	req.Record = nil
}

func (n *Node) checkDHTPut(req *dhtpb.Message) error {
	rec := req.GetRecord()
	if rec == nil || len(req.GetKey()) == 0 || !bytes.Equal(req.GetKey(), rec.GetKey()) {
		return errors.New("put without a record for its key")
	}
	v := n.dht.Validator
	if v == nil {
		return nil
	}
	return v.Validate(string(rec.GetKey()), rec.GetValue())
}
