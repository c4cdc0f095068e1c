package attest

import "errors"

// FromOtherVersion reports whether err, from [Open] or [Unmarshal], means
// that another release of the protocol wrote the record (ErrOtherVersion):
// a payload version this build does not read, or fields it does not know,
// under a signature that verifies.
//
// This is the compatibility rule of docs/protocol.md: such a record is
// ignored, never rejected and never charged to whoever sent it, so that
// during a rolling upgrade the honest upgraded nodes are not penalised,
// graylisted or banned by the older ones (nor older ones by newer ones
// that stopped reading an old version). Gossip validators answer it with
// p2p.Skip; p2p's DHT and stream guards recognise it through
// errors.ErrUnsupported. A record whose version field is absent, or whose
// signature or encoding is bad, is no release's: it stays malformed.
func FromOtherVersion(err error) bool { return errors.Is(err, ErrOtherVersion) }
