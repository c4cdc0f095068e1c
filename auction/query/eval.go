package query

import (
	"math"
	"math/bits"
	"strings"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/ipfs/go-cid"
)

// Offer is what a query is evaluated against: a provider's validated
// capacity record plus what the renter knows locally about it.
type Offer struct {
	Capacity *auction.Capacity
	// Reliability is the renter's local reputation score, 0..1 (records
	// never carry one).
	Reliability float64
}

// evalCtx carries per-offer state that depends on the whole query.
type evalCtx struct {
	q *Query
	// full is the set of the offer's free GPUs (bit i = GPUs[i]) that pass
	// every GPU clause of the query; "gpus" counts it and sorting by vram
	// or cc reads it.
	full uint64
}

// maxGPUBits: records hold at most auction.MaxGPUs (64) GPUs; any beyond
// the 64th in an unvalidated record are ignored.
const maxGPUBits = 64

func freeMask(c *auction.Capacity) uint64 {
	var m uint64
	for i := range min(len(c.GPUs), maxGPUBits) {
		if c.GPUs[i].Free {
			m |= 1 << i
		}
	}
	return m
}

// Match reports whether o satisfies every clause. An offer without a
// capacity record never matches.
func (q *Query) Match(o Offer) bool {
	return q.firstFail(o) < 0
}

// firstFail returns the index of the first clause o fails, in query order,
// or -1. GPU clauses narrow the set of candidate free GPUs in turn and fail
// when none is left; other clauses are tested on their own.
func (q *Query) firstFail(o Offer) int {
	c := o.Capacity
	if c == nil {
		return 0
	}
	e := evalCtx{q: q, full: freeMask(c)}
	if q.hasGPU {
		for i := range q.Clauses {
			if cl := &q.Clauses[i]; cl.f.perGPU {
				e.full = cl.narrow(c, e.full)
			}
		}
	}
	cand := freeMask(c)
	for i := range q.Clauses {
		cl := &q.Clauses[i]
		if cl.f.perGPU {
			if cand = cl.narrow(c, cand); cand == 0 {
				return i
			}
			continue
		}
		if !cl.test(o, e) {
			return i
		}
	}
	return -1
}

// narrow keeps the GPUs in mask that satisfy the clause.
func (cl *Clause) narrow(c *auction.Capacity, mask uint64) uint64 {
	out := mask
	for m := mask; m != 0; m &= m - 1 {
		i := bits.TrailingZeros64(m)
		g := &c.GPUs[i]
		var ok bool
		if cl.f.gpuStr != nil {
			ok = cl.matchModel(cl.f.gpuStr(g))
		} else {
			ok = cmpInt(cl.Op, cl.f.gpuNum(g), cl.vals)
		}
		if !ok {
			out &^= 1 << i
		}
	}
	return out
}

// matchModel: a query value matches a model slug equal to it or extending
// it by whole '-' segments, so "h100" matches "h100-80gb" and
// "h100-nvl-94gb" but not "h1000"; "h100-80gb" matches only itself.
func (cl *Clause) matchModel(model string) bool {
	hit := false
	for _, v := range cl.vals {
		if model == v.s || strings.HasPrefix(model, v.s+"-") {
			hit = true
			break
		}
	}
	if cl.Op == OpNe || cl.Op == OpNotIn {
		return !hit
	}
	return hit
}

func (cl *Clause) test(o Offer, e evalCtx) bool {
	c := o.Capacity
	f := cl.f
	switch f.kind {
	case kindCount, kindSize, kindPrice:
		x, ok := f.num(o, e)
		return ok && cmpInt(cl.Op, x, cl.vals)
	case kindRatio:
		r := f.ratio(o)
		return !math.IsNaN(r) && cmpFloat(cl.Op, r, cl.vals)
	case kindEnum:
		return cmpStr(cl.Op, f.str(c), cl.vals)
	case kindBool:
		return (f.flag(c) == (cl.vals[0].i == 1)) == (cl.Op == OpEq)
	case kindChoice:
		// The offer must provide at least one value every clause so far on
		// this field admits (tier!=bronze: the offer sells gold or silver).
		var have uint64
		for _, s := range f.set(c) {
			for i, d := range f.domain {
				if s == d {
					have |= 1 << i
				}
			}
		}
		return have&cl.prefix != 0
	case kindHolds:
		held := false
		for _, s := range f.set(c) {
			k, err := cid.Decode(s)
			if err != nil {
				continue
			}
			for _, v := range cl.vals {
				if k.KeyString() == v.s {
					held = true
				}
			}
		}
		if cl.Op == OpNe || cl.Op == OpNotIn {
			return !held
		}
		return held
	}
	return false
}

func cmpInt(op Op, x int64, vals []value) bool {
	switch op {
	case OpEq:
		return x == vals[0].i
	case OpNe:
		return x != vals[0].i
	case OpLt:
		return x < vals[0].i
	case OpLe:
		return x <= vals[0].i
	case OpGt:
		return x > vals[0].i
	case OpGe:
		return x >= vals[0].i
	}
	in := false
	for _, v := range vals {
		in = in || x == v.i
	}
	return in == (op == OpIn)
}

func cmpFloat(op Op, x float64, vals []value) bool {
	switch op {
	case OpEq:
		return x == vals[0].r
	case OpNe:
		return x != vals[0].r
	case OpLt:
		return x < vals[0].r
	case OpLe:
		return x <= vals[0].r
	case OpGt:
		return x > vals[0].r
	case OpGe:
		return x >= vals[0].r
	}
	in := false
	for _, v := range vals {
		in = in || x == v.r
	}
	return in == (op == OpIn)
}

func cmpStr(op Op, x string, vals []value) bool {
	in := false
	for _, v := range vals {
		in = in || x == v.s
	}
	return in == (op == OpEq || op == OpIn)
}

// ClauseStat is one line of --explain.
type ClauseStat struct {
	Clause    string // canonical clause text
	Pos       int    // byte offset of the clause in the query
	Removed   int    // offers this clause removed (they passed every earlier clause)
	Remaining int    // offers left after this clause
}

// Explain applies the clauses in query order and reports how many offers
// each one removed. The last Remaining equals the number of matches.
func Explain(q *Query, offers []Offer) []ClauseStat {
	stats := make([]ClauseStat, len(q.Clauses))
	for i := range q.Clauses {
		stats[i] = ClauseStat{Clause: q.Clauses[i].String(), Pos: q.Clauses[i].Pos}
	}
	for i := range offers {
		if k := q.firstFail(offers[i]); k >= 0 && k < len(stats) {
			stats[k].Removed++
		}
	}
	left := len(offers)
	for i := range stats {
		left -= stats[i].Removed
		stats[i].Remaining = left
	}
	return stats
}
