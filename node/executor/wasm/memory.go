package wasm

import (
	"sync/atomic"

	"github.com/tetratelabs/wazero/experimental"
)

// memoryLimiter enforces a workload's memory limit in wazero's memory
// allocator hook instead of (only) RuntimeConfig.WithMemoryLimitPages: a
// grow refused by the page limit is invisible to the host — the guest just
// sees memory.grow return -1 and fails in its own way (a Go runtime "out of
// memory" exit, a Rust abort trap, a C NULL) — while a refusal here is
// recorded, so that the result can say "oom" whatever the guest did next.
type memoryLimiter struct {
	limitBytes uint64
	refused    atomic.Bool
}

// Allocate implements experimental.MemoryAllocator.
func (m *memoryLimiter) Allocate(capBytes, maxBytes uint64) experimental.LinearMemory {
	return &limitedMemory{m: m}
}

// limitedMemory backs one linear memory with a Go slice, doubling its
// capacity as it grows (up to the limit) so that a guest growing page by
// page does not copy its whole memory each time.
type limitedMemory struct {
	m   *memoryLimiter
	buf []byte
}

// Reallocate implements experimental.LinearMemory. Returning nil makes
// memory.grow fail in the guest.
func (l *limitedMemory) Reallocate(size uint64) []byte {
	if size > l.m.limitBytes {
		l.m.refused.Store(true)
		return nil
	}
	if size <= uint64(cap(l.buf)) {
		// The bytes between len and cap were never handed out (memory
		// does not shrink), so they are still zero.
		l.buf = l.buf[:size]
		return l.buf
	}
	newCap := max(size, 2*uint64(cap(l.buf)))
	newCap = min(newCap, l.m.limitBytes)
	nb := make([]byte, size, newCap)
	copy(nb, l.buf)
	l.buf = nb
	return nb
}

// Free implements experimental.LinearMemory.
func (l *limitedMemory) Free() { l.buf = nil }
