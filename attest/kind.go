package attest

import (
	"fmt"
	"slices"
	"sync"
)

// DefaultMaxSize is the size limit [Open] applies when neither the caller
// nor the kind names one. It is far below the 4 MiB a DHT RPC may carry.
const DefaultMaxSize = 64 << 10

// Kind describes one record kind: how it is signed and which payload
// versions this build reads and writes.
type Kind struct {
	// Name is a short human name ("capacity") used in error messages.
	Name string
	// Domain is the libp2p envelope signature domain ("idlegrid-capacity").
	// Signing under a per-kind domain means a signature over one kind can
	// never verify as another.
	Domain string
	// PayloadType is the envelope payload type ("/idlegrid/capacity/1").
	PayloadType []byte
	// Versions lists the payload versions (the "v" field) this build
	// understands. Seal refuses to write, and Open refuses to read, others.
	Versions []uint
	// MaxSize is the default size limit in bytes for Open when the caller
	// passes 0; 0 here means DefaultMaxSize.
	MaxSize int

	// prefix is signedPrefix's value, set by Register.
	prefix []byte
}

// Payload is implemented by every record payload type. RecordKind must work
// on the zero value (Open calls it before decoding).
type Payload interface {
	RecordKind() *Kind
}

var registry = struct {
	sync.Mutex
	byDomain map[string]*Kind
	byType   map[string]*Kind
}{byDomain: map[string]*Kind{}, byType: map[string]*Kind{}}

// Register records a kind and returns it. It is meant for package-level
// variable initialisation, so a bad or duplicate kind is a programming error
// and panics at start-up rather than failing later on the wire.
func Register(k Kind) *Kind {
	if k.Name == "" || k.Domain == "" || len(k.PayloadType) == 0 || len(k.Versions) == 0 {
		panic(fmt.Sprintf("attest.Register: incomplete kind %+v", k))
	}
	if slices.Contains(k.Versions, 0) {
		panic(fmt.Sprintf("attest.Register: kind %q: version 0 is reserved for \"absent\"", k.Name))
	}
	if k.MaxSize < 0 {
		panic(fmt.Sprintf("attest.Register: kind %q: negative MaxSize", k.Name))
	}
	registry.Lock()
	defer registry.Unlock()
	if other, ok := registry.byDomain[k.Domain]; ok {
		panic(fmt.Sprintf("attest.Register: kind %q: domain %q already used by %q", k.Name, k.Domain, other.Name))
	}
	if other, ok := registry.byType[string(k.PayloadType)]; ok {
		panic(fmt.Sprintf("attest.Register: kind %q: payload type %q already used by %q", k.Name, k.PayloadType, other.Name))
	}
	kc := k
	kc.PayloadType = slices.Clone(k.PayloadType)
	kc.Versions = slices.Clone(k.Versions)
	kc.prefix = makeSignedPrefix(kc.Domain, kc.PayloadType)
	registry.byDomain[kc.Domain] = &kc
	registry.byType[string(kc.PayloadType)] = &kc
	return &kc
}

// KindByPayloadType returns the registered kind with that payload type.
func KindByPayloadType(payloadType []byte) (*Kind, bool) {
	registry.Lock()
	defer registry.Unlock()
	k, ok := registry.byType[string(payloadType)]
	return k, ok
}

func (k *Kind) supports(v uint) bool { return slices.Contains(k.Versions, v) }

func (k *Kind) maxSize(callerMax int) int {
	switch {
	case callerMax > 0:
		return callerMax
	case k.MaxSize > 0:
		return k.MaxSize
	default:
		return DefaultMaxSize
	}
}
