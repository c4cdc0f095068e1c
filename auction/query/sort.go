package query

import (
	"cmp"
	"fmt"
	"math/bits"
	"slices"
	"strings"

	"github.com/idlegrid/idlegrid/auction"
)

// SortKey orders search results by one numeric field.
type SortKey struct {
	Field string
	Desc  bool
	f     *field
}

// sortable lists the fields a search can be ordered by.
var sortable = []string{"price", "price.gold", "price.silver", "price.bronze", "reliability",
	"gpus", "vram", "cc", "cpu", "ram", "cpu.free", "ram.free", "price.cpu", "disk"}

// ParseSort parses "price" (ascending), "+price" or "-price" (descending).
// The empty string means no ordering beyond the deterministic tie-break.
func ParseSort(s string) (SortKey, error) {
	if s == "" {
		return SortKey{}, nil
	}
	k := SortKey{}
	name := s
	switch s[0] {
	case '-':
		k.Desc, name = true, s[1:]
	case '+':
		name = s[1:]
	}
	name = strings.ToLower(name)
	if !slices.Contains(sortable, name) {
		msg := fmt.Sprintf("cannot sort by %q; sortable: %s", s, strings.Join(sortable, ", "))
		if sug, ok := auction.Closest(name, sortable); ok {
			msg += fmt.Sprintf(" (did you mean %q?)", sug)
		}
		return SortKey{}, &Error{Pos: -1, Msg: msg, op: "query.ParseSort"}
	}
	k.Field, k.f = name, lookupField(name)
	return k, nil
}

// sortValue is an offer's value for a sort field; ok is false when the
// offer has none (price of a tier it does not sell, vram with no free GPU).
func sortValue(q *Query, o Offer, f *field) (v float64, ok bool) {
	e := evalCtx{q: q, full: freeMask(o.Capacity)}
	for i := range q.Clauses {
		if cl := &q.Clauses[i]; cl.f.perGPU {
			e.full = cl.narrow(o.Capacity, e.full)
		}
	}
	switch {
	case f.kind == kindRatio:
		return f.ratio(o), true
	case f.perGPU:
		// Best qualifying GPU: the largest VRAM, the newest architecture.
		best, found := int64(0), false
		for m := e.full; m != 0; m &= m - 1 {
			x := f.gpuNum(&o.Capacity.GPUs[bits.TrailingZeros64(m)])
			if !found || x > best {
				best, found = x, true
			}
		}
		return float64(best), found
	default:
		x, ok := f.num(o, e)
		return float64(x), ok
	}
}

// Search returns the offers that match q, ordered by key, at most limit of
// them (limit <= 0: all). Offers without a value for the key come last;
// ties are broken by peer ID, then higher Seq, so the order is stable
// across runs. offers is not modified.
func Search(q *Query, offers []Offer, key SortKey, limit int) []Offer {
	type row struct {
		o   Offer
		v   float64
		has bool
	}
	var rows []row
	for _, o := range offers {
		if !q.Match(o) {
			continue
		}
		r := row{o: o}
		if key.f != nil {
			r.v, r.has = sortValue(q, o, key.f)
		}
		rows = append(rows, r)
	}
	slices.SortFunc(rows, func(a, b row) int {
		if a.has != b.has {
			if a.has {
				return -1
			}
			return 1
		}
		if c := cmp.Compare(a.v, b.v); c != 0 {
			if key.Desc {
				return -c
			}
			return c
		}
		return tieBreak(a.o.Capacity, b.o.Capacity)
	})
	if limit > 0 && len(rows) > limit {
		rows = rows[:limit]
	}
	out := make([]Offer, len(rows))
	for i, r := range rows {
		out[i] = r.o
	}
	return out
}

func tieBreak(a, b *auction.Capacity) int {
	if c := strings.Compare(a.Peer, b.Peer); c != 0 {
		return c
	}
	return cmp.Compare(b.Seq, a.Seq)
}
