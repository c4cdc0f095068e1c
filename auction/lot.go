package auction

import (
	"crypto/sha256"
	"encoding/binary"
)

// Lots split a large shard by a hash of the peer ID, so each provider
// hears only its lot's streams (docs/protocol.md §3.6, planned). The
// replay measures what they would cost renters (auction/sim,
// idlegrid-lots) before any node uses them.
const lotDomain = "idlegrid-lot/1"

// Lot is the lot, of lots (a power of two), that provider peer (its peer
// ID text) is in: the first 8 bytes, big-endian, of
// SHA-256("idlegrid-lot/1" ‖ 0x00 ‖ peer) modulo lots. Doubling lots
// splits lot i into lots i and i + lots, so a change of the count moves
// no provider between unrelated lots. lots below 2 is one lot, 0.
func Lot(peer string, lots int) int {
	if lots < 2 {
		return 0
	}
	h := sha256.New()
	h.Write([]byte(lotDomain))
	h.Write([]byte{0})
	h.Write([]byte(peer))
	return int(binary.BigEndian.Uint64(h.Sum(nil)[:8]) % uint64(lots))
}
