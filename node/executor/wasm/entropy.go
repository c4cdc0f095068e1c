package wasm

import (
	"encoding/binary"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/sys"
)

// Entropy replaces what a guest can read that is not its module, args,
// env and stdin: the clocks and the random source. A re-run that judges
// a wrong-result proof runs a job twice under two different Entropy
// values; when the outputs agree, the output does not depend on them and
// the job is deterministic in fact, whatever the host it ran on.
type Entropy struct {
	// Walltime is the wall clock the guest reads: fixed, it never
	// advances.
	Walltime time.Time
	// Seed seeds the random stream (ChaCha8) the guest reads.
	Seed uint64
}

// apply sets e's clocks and random source on mc. The monotonic clock
// advances one microsecond per read, so a guest timing a loop terminates.
func (e *Entropy) apply(mc wazero.ModuleConfig) wazero.ModuleConfig {
	wall := e.Walltime
	var mono atomic.Int64
	var seed [32]byte
	binary.LittleEndian.PutUint64(seed[:], e.Seed)
	return mc.
		WithWalltime(func() (int64, int32) { return wall.Unix(), int32(wall.Nanosecond()) }, sys.ClockResolution(time.Microsecond)).
		WithNanotime(func() int64 { return mono.Add(int64(time.Microsecond)) }, sys.ClockResolution(time.Microsecond)).
		WithRandSource(rand.NewChaCha8(seed))
}
