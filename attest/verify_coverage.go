package attest

// covWindow is one telemetry window that attributes a GPU to the lease.
type covWindow struct {
	o          *opened
	start, end int64
}

// checkCoverage checks that, for every GPU of opts.Lease, telemetry
// attributes the GPU to the lease from the lease's start to its end with
// no hole longer than MaxGapMs (an ended lease no longer than MaxGapMs
// needs no window), that windows inside the lease do not give
// the GPU to another lease, and that they name the lease's renter.
func (v *verifier) checkCoverage() {
	l := v.opts.Lease
	gap := v.opts.MaxGapMs
	for _, uuid := range l.GPUs {
		var ws []covWindow
		for i := range v.entries {
			o := &v.entries[i]
			t := o.e.Telemetry
			if t == nil {
				continue
			}
			for _, g := range t.GPUs {
				switch {
				case g.UUID != uuid:
				case g.Lease == l.ID:
					if l.Renter != "" && g.Renter != l.Renter {
						v.failAt(o, "GPU %s: window names renter %s for lease %s, want %s", uuid, g.Renter, l.ID, l.Renter)
					}
					ws = append(ws, covWindow{o, t.StartMs, t.EndMs})
				case g.Lease != "" && t.EndMs > l.StartMs && (l.EndMs == 0 || t.StartMs < l.EndMs):
					v.failAt(o, "GPU %s: window [%d, %d] gives the GPU to lease %s during lease %s", uuid, t.StartMs, t.EndMs, g.Lease, l.ID)
				}
			}
		}
		if len(ws) == 0 && l.EndMs != 0 && l.EndMs-l.StartMs <= gap {
			// The whole lease fits in one allowed gap: a run shorter than
			// a sample leaves no window, and none is owed.
			continue
		}
		if len(ws) == 0 {
			v.failf(-1, 0, "GPU %s: no telemetry attributes it to lease %s", uuid, l.ID)
			continue
		}
		if d := ws[0].start - l.StartMs; d > gap {
			v.failAt(ws[0].o, "GPU %s: first window starts %d ms after the lease started (max gap %d ms)", uuid, d, gap)
		}
		for i := 1; i < len(ws); i++ {
			if d := ws[i].start - ws[i-1].end; d > gap {
				v.failAt(ws[i].o, "GPU %s: %d ms without telemetry for the lease after seq %d (max gap %d ms)", uuid, d, ws[i-1].o.e.Seq, gap)
			}
		}
		last := ws[len(ws)-1]
		if d := l.EndMs - last.end; l.EndMs != 0 && d > gap {
			v.failAt(last.o, "GPU %s: last window ends %d ms before the lease ended (max gap %d ms)", uuid, d, gap)
		}
	}
}
