package attest

import (
	"bytes"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
)

// opened is one entry that passed the signature check.
type opened struct {
	index int
	raw   []byte
	id    string
	e     *Entry
}

// verifier holds one Verify run's state.
type verifier struct {
	opts     VerifyOptions
	provider string
	entries  []opened
	// fps holds every fingerprint known by record ID: the segment's and
	// opts.Fingerprints'.
	fps        map[string]*opened
	extras     []*opened // opts.Fingerprints that opened, in order
	findings   []Finding
	sigFails   []Finding // the signature check runs while opening
	sigDropped int

	cur     string    // the check running
	fails   []Finding // its failures so far
	dropped int       // failures beyond maxFindingsPerCheck
}

func newVerifier(raws [][]byte, opts VerifyOptions) *verifier {
	v := &verifier{opts: opts, provider: opts.Provider, fps: map[string]*opened{}}
	v.cur = CheckSignature
	// Signatures and decoding dominate Verify and each entry's are
	// independent: open them all concurrently, then record the outcomes in
	// input order, exactly as opening them one by one would.
	res := openAll(raws)
	for i, raw := range raws {
		if o, ok := v.open(i, raw, res[i], func() string { return fmt.Sprintf("entry %d", i) }); ok {
			v.entries = append(v.entries, o)
		}
	}
	for i := range v.entries {
		if v.entries[i].e.Kind == KindFingerprint {
			v.fps[v.entries[i].id] = &v.entries[i]
		}
	}
	fpRes := openAll(opts.Fingerprints)
	for i, raw := range opts.Fingerprints {
		o, ok := v.open(-1, raw, fpRes[i], func() string { return fmt.Sprintf("opts.Fingerprints[%d]", i) })
		switch {
		case !ok:
		case o.e.Kind != KindFingerprint:
			v.failf(-1, o.e.Seq, "opts.Fingerprints[%d] is a %s entry, not a fingerprint", i, o.e.Kind)
		default:
			v.fps[o.id] = &o
			v.extras = append(v.extras, &o)
		}
	}
	v.sigFails, v.sigDropped = v.fails, v.dropped
	return v
}

// openResult is OpenEntry's outcome for one raw entry, with its record ID.
type openResult struct {
	e   *Entry
	err error
	id  string
}

// minParallelOpen is the segment length from which openAll spreads the
// work over goroutines; below it the hand-off costs more than it saves.
const minParallelOpen = 4

// openAll runs OpenEntry (and RecordID) on every raw entry, over up to
// GOMAXPROCS goroutines. Each result depends on its own input only.
func openAll(raws [][]byte) []openResult {
	res := make([]openResult, len(raws))
	one := func(i int) {
		r := &res[i]
		if r.e, r.err = OpenEntry(raws[i]); r.err == nil {
			r.id = RecordID(raws[i]).String()
		}
	}
	workers := min(runtime.GOMAXPROCS(0), len(raws))
	if len(raws) < minParallelOpen || workers < 2 {
		for i := range raws {
			one(i)
		}
		return res
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < len(raws); i = int(next.Add(1) - 1) {
				one(i)
			}
		})
	}
	wg.Wait()
	return res
}

// open runs the signature check on one raw entry, given what OpenEntry
// made of it. what names the entry in failures.
func (v *verifier) open(index int, raw []byte, r openResult, what func() string) (opened, bool) {
	e, err := r.e, r.err
	if err != nil {
		v.failf(index, 0, "%s: %v", what(), err)
		return opened{}, false
	}
	if v.provider == "" {
		v.provider = e.Provider
	}
	if e.Provider != v.provider {
		v.failf(index, e.Seq, "%s is provider %s's entry, the segment is %s's", what(), e.Provider, v.provider)
		return opened{}, false
	}
	return opened{index: index, raw: raw, id: r.id, e: e}, true
}

// run runs one check and records its findings: its failures, or one OK.
func (v *verifier) run(check string, fn func()) {
	v.cur, v.fails, v.dropped = check, nil, 0
	if check == CheckSignature {
		v.fails, v.dropped = v.sigFails, v.sigDropped
	}
	fn()
	if len(v.fails) == 0 {
		v.findings = append(v.findings, Finding{Check: check, OK: true, Index: -1,
			Message: fmt.Sprintf("%d entries checked", len(v.entries))})
		return
	}
	v.findings = append(v.findings, v.fails...)
	if v.dropped > 0 {
		v.findings = append(v.findings, Finding{Check: check, Index: -1,
			Message: fmt.Sprintf("%d more failures not listed", v.dropped)})
	}
}

func (v *verifier) skip(check, why string) {
	v.findings = append(v.findings, Finding{Check: check, OK: true, Index: -1, Message: why})
}

// failf records a failure of the running check.
func (v *verifier) failf(index int, seq uint64, format string, args ...any) {
	if len(v.fails) >= maxFindingsPerCheck {
		v.dropped++
		return
	}
	v.fails = append(v.fails, Finding{Check: v.cur, Index: index, Seq: seq, Message: fmt.Sprintf(format, args...)})
}

func (v *verifier) failAt(o *opened, format string, args ...any) {
	v.failf(o.index, o.e.Seq, format, args...)
}

// fact returns the fingerprint fact of uuid in the fingerprint a
// telemetry window names, if that fingerprint is known.
func (v *verifier) fact(t *Telemetry, uuid string) (GPUFact, bool) {
	fp := v.fps[t.Fingerprint]
	if fp == nil {
		return GPUFact{}, false
	}
	return fp.e.Fingerprint.GPU(uuid)
}

// eachGPU adapts a per-GPU check to run over every telemetry GPU.
func (v *verifier) eachGPU(check func(o *opened, t *Telemetry, g *GPUTelemetry)) func() {
	return func() {
		for i := range v.entries {
			o := &v.entries[i]
			if t := o.e.Telemetry; t != nil {
				for j := range t.GPUs {
					check(o, t, &t.GPUs[j])
				}
			}
		}
	}
}

func (v *verifier) checkContinuity() {
	for i := 1; i < len(v.entries); i++ {
		a, b := &v.entries[i-1], &v.entries[i]
		switch {
		case b.e.Seq == a.e.Seq && bytes.Equal(a.raw, b.raw):
			v.failAt(b, "seq %d appears twice (duplicate entry)", b.e.Seq)
		case b.e.Seq == a.e.Seq:
			v.failAt(b, "fork: two different entries with seq %d (%s and %s): equivocation", b.e.Seq, a.id, b.id)
		case b.e.Seq < a.e.Seq:
			v.failAt(b, "seq goes back from %d to %d (out of order, or a fork)", a.e.Seq, b.e.Seq)
		case b.e.Seq > a.e.Seq+1:
			v.failAt(b, "gap: seq jumps from %d to %d (%d entries missing)", a.e.Seq, b.e.Seq, b.e.Seq-a.e.Seq-1)
		case b.e.Prev != a.id:
			v.failAt(b, "broken link: prev is %s, but seq %d's ID is %s (a fork)", b.e.Prev, a.e.Seq, a.id)
		}
	}
}

func (v *verifier) checkTime() {
	var lastTel *opened
	for i := range v.entries {
		o := &v.entries[i]
		e := o.e
		if i > 0 && e.AtMs < v.entries[i-1].e.AtMs {
			v.failAt(o, "at_ms goes back from %d to %d", v.entries[i-1].e.AtMs, e.AtMs)
		}
		if v.opts.NowMs > 0 && e.AtMs > v.opts.NowMs+v.opts.MaxSkewMs {
			v.failAt(o, "at_ms %d is %d ms in the future (skew limit %d ms)", e.AtMs, e.AtMs-v.opts.NowMs, v.opts.MaxSkewMs)
		}
		t := e.Telemetry
		if t == nil {
			continue
		}
		if t.EndMs > e.AtMs {
			v.failAt(o, "window ends at %d, after the entry's at_ms %d", t.EndMs, e.AtMs)
		}
		if lastTel != nil && t.StartMs < lastTel.e.Telemetry.EndMs {
			v.failAt(o, "window [%d, %d] overlaps seq %d's window ending at %d",
				t.StartMs, t.EndMs, lastTel.e.Seq, lastTel.e.Telemetry.EndMs)
		}
		lastTel = o
		for _, g := range t.GPUs {
			for _, x := range g.XIDs {
				if x.AtMs < t.StartMs || x.AtMs > t.EndMs {
					v.failAt(o, "GPU %s: XID %d at %d is outside the window [%d, %d]", g.UUID, x.Code, x.AtMs, t.StartMs, t.EndMs)
				}
			}
		}
	}
}

func (v *verifier) checkFingerprint() {
	var cur *opened // the fingerprint in force, once known
	for i := range v.entries {
		o := &v.entries[i]
		switch e := o.e; e.Kind {
		case KindFingerprint:
			if cur != nil {
				v.compareFingerprints(cur, o)
			}
			cur = o
		case KindTelemetry:
			t := e.Telemetry
			named := v.fps[t.Fingerprint]
			switch {
			case cur != nil && t.Fingerprint != cur.id:
				v.failAt(o, "telemetry names fingerprint %s, but the one in force is %s (seq %d)", t.Fingerprint, cur.id, cur.e.Seq)
			case named == nil:
				v.failAt(o, "telemetry names fingerprint %s, which is neither in the segment nor in opts.Fingerprints", t.Fingerprint)
			case cur == nil:
				cur = named
			}
			if named == nil {
				continue
			}
			for _, g := range t.GPUs {
				if _, ok := named.e.Fingerprint.GPU(g.UUID); !ok {
					v.failAt(o, "GPU %s is not in fingerprint %s", g.UUID, named.id)
				}
			}
		case KindJob:
			if cur == nil {
				continue
			}
			for _, u := range e.Job.GPUs {
				if _, ok := cur.e.Fingerprint.GPU(u); !ok {
					v.failAt(o, "job %s names GPU %s, which is not in fingerprint %s", e.Job.Event, u, cur.id)
				}
			}
		}
	}
}

// compareFingerprints fails when a UUID kept across a fingerprint change
// now names other hardware (another serial, bus, model): a swapped or
// cloned UUID. Driver, VBIOS and limit changes are announced changes.
func (v *verifier) compareFingerprints(old, cur *opened) {
	for _, g := range cur.e.Fingerprint.GPUs {
		was, ok := old.e.Fingerprint.GPU(g.UUID)
		if !ok {
			continue
		}
		var diffs []string
		if was.Serial != "" && g.Serial != "" && was.Serial != g.Serial {
			diffs = append(diffs, fmt.Sprintf("serial %q -> %q", was.Serial, g.Serial))
		}
		if was.PCIBusID != "" && g.PCIBusID != "" && was.PCIBusID != g.PCIBusID {
			diffs = append(diffs, fmt.Sprintf("pci bus %s -> %s", was.PCIBusID, g.PCIBusID))
		}
		if was.Name != g.Name || was.PCIDeviceID != g.PCIDeviceID || was.MemoryMiB != g.MemoryMiB {
			diffs = append(diffs, fmt.Sprintf("model %q/%#x/%d MiB -> %q/%#x/%d MiB",
				was.Name, was.PCIDeviceID, was.MemoryMiB, g.Name, g.PCIDeviceID, g.MemoryMiB))
		}
		if len(diffs) > 0 {
			v.failAt(cur, "GPU %s moved to other hardware since fingerprint seq %d: %v (swapped or cloned UUID)",
				g.UUID, old.e.Seq, diffs)
		}
	}
}

func (v *verifier) checkUUIDClash() {
	if len(v.opts.KnownUUIDs) == 0 {
		return
	}
	reported := map[string]bool{}
	clash := func(o *opened, uuid string) {
		owner, ok := v.opts.KnownUUIDs[uuid]
		if ok && owner != v.provider && !reported[uuid] {
			reported[uuid] = true
			v.failf(o.index, o.e.Seq, "GPU %s is also claimed by provider %s", uuid, owner)
		}
	}
	visit := func(o *opened) {
		switch e := o.e; {
		case e.Fingerprint != nil:
			for _, g := range e.Fingerprint.GPUs {
				clash(o, g.UUID)
			}
		case e.Telemetry != nil:
			for _, g := range e.Telemetry.GPUs {
				clash(o, g.UUID)
			}
		case e.Job != nil:
			for _, u := range e.Job.GPUs {
				clash(o, u)
			}
		}
	}
	for _, fp := range v.extras {
		visit(fp)
	}
	for i := range v.entries {
		visit(&v.entries[i])
	}
}
