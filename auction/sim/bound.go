package sim

import (
	"cmp"
	"container/heap"
	"math"
	"slices"

	"github.com/idlegrid/idlegrid/auction"
)

// The offline lower bound: a time-indexed relaxation of the assignment,
// solved exactly as a min-cost flow. Time is cut into at most
// MaxBoundSlots slots; each provider class (a model's providers split into
// BoundFloorBuckets floor buckets, priced at the bucket's lowest reachable
// price) offers its GPUs × slot length of GPU-hours per slot. A job's
// GPU-hours may be split across classes it accepts and across any slots
// from the one it arrived in: no host boundaries, no contiguity, no
// failures. Any schedule a policy ran is a feasible flow of this network,
// and it paid at least these prices, so its cost is at least the bound.
// Coarser slots or buckets only loosen it.

// Size limits of the relaxation.
const (
	MaxBoundSlots     = 96
	BoundFloorBuckets = 3
)

// class is a set of providers of one model priced as the cheapest of them.
type class struct {
	model   string
	gpus    int
	usdGPUh float64 // lowest silver price reachable in the class
}

func (w *World) classes() []class {
	var out []class
	for _, m := range w.models {
		ps := slices.Clone(w.byModel[m])
		slices.SortFunc(ps, func(a, b int) int {
			return cmp.Compare(w.provs[a].floor(auction.TierSilver), w.provs[b].floor(auction.TierSilver))
		})
		per := (len(ps) + BoundFloorBuckets - 1) / BoundFloorBuckets
		for k := 0; k < len(ps); k += per {
			c := class{model: m, usdGPUh: math.Inf(1)}
			for _, i := range ps[k:min(k+per, len(ps))] {
				p := w.provs[i]
				c.gpus += len(p.cap.GPUs)
				c.usdGPUh = min(c.usdGPUh, float64(p.floor(auction.TierSilver))*p.minPriceFactor/1e6)
			}
			out = append(out, c)
		}
	}
	return out
}

// LowerBound is the relaxation's cost, in USD, of serving jobs (every
// GPU-hour of each) on w's providers, with time running to horizonSec.
func (w *World) lowerBound(jobs []*jobState, horizonSec int64) float64 {
	if len(jobs) == 0 {
		return 0
	}
	for _, j := range jobs {
		horizonSec = max(horizonSec, j.arrival+j.DurationSec)
	}
	slots := int64(MaxBoundSlots)
	slotSec := max((horizonSec+slots-1)/slots, 1)
	slots = horizonSec/slotSec + 1
	cls := w.classes()

	g := newFlowGraph()
	src, sink := g.node(), g.node()
	// (class, slot) nodes, chained forward in time.
	cs := make([][]int, len(cls))
	for c := range cls {
		cs[c] = make([]int, slots)
		for s := range slots {
			cs[c][s] = g.node()
			g.edge(cs[c][s], sink, float64(cls[c].gpus)*float64(slotSec)/3600, 0)
			if s > 0 {
				g.edge(cs[c][s-1], cs[c][s], math.Inf(1), 0)
			}
		}
	}
	type key struct {
		models string
		tier   string
		slot   int64
	}
	groups := map[key]int{}
	need := 0.0
	for _, j := range jobs {
		k := key{models: join(j.allowed), tier: string(j.Tier), slot: j.arrival / slotSec}
		gpuh := float64(j.GPUs) * float64(j.DurationSec) / 3600
		need += gpuh
		n, ok := groups[k]
		if !ok {
			n = g.node()
			groups[k] = n
			for c, cl := range cls {
				if slices.Contains(j.allowed, cl.model) {
					g.edge(n, cs[c][k.slot], math.Inf(1), cl.usdGPUh*tierFactor[j.Tier])
				}
			}
			g.edge(src, n, 0, 0)
		}
		g.addCap(src, n, gpuh)
	}
	// Every job a policy completed fits (its schedule is a feasible
	// flow); should rounding leave a sliver unrouted, it is priced at
	// nothing, which keeps this a lower bound.
	_, cost := g.minCostFlow(src, sink, need)
	return cost
}

func join(xs []string) string {
	n := ""
	for _, x := range xs {
		n += x + "|"
	}
	return n
}

// flowGraph is a residual graph for successive shortest paths with
// Dijkstra and potentials (costs are non-negative).
type flowGraph struct {
	head  []int
	to    []int
	next  []int
	cap   []float64
	cost  []float64
	index map[[2]int]int // (from, to) of a forward edge made by edge
}

func newFlowGraph() *flowGraph { return &flowGraph{index: map[[2]int]int{}} }

func (g *flowGraph) node() int { g.head = append(g.head, -1); return len(g.head) - 1 }

func (g *flowGraph) edge(u, v int, c, cost float64) {
	g.index[[2]int{u, v}] = len(g.to)
	for _, e := range [][4]float64{{float64(u), float64(v), c, cost}, {float64(v), float64(u), 0, -cost}} {
		from := int(e[0])
		g.to = append(g.to, int(e[1]))
		g.cap = append(g.cap, e[2])
		g.cost = append(g.cost, e[3])
		g.next = append(g.next, g.head[from])
		g.head[from] = len(g.to) - 1
	}
}

func (g *flowGraph) addCap(u, v int, c float64) { g.cap[g.index[[2]int{u, v}]] += c }

const flowEps = 1e-9

// minCostFlow sends up to want units from s to t at least cost: the
// primal-dual method. Dijkstra (with potentials) finds the shortest
// distances; a blocking flow (Dinic) then saturates every shortest path at
// once, so there are about as many phases as distinct path costs rather
// than one per augmenting path.
func (g *flowGraph) minCostFlow(s, t int, want float64) (flow, cost float64) {
	n := len(g.head)
	pot := make([]float64, n)
	dist := make([]float64, n)
	level := make([]int, n)
	iter := make([]int, n)
	for flow < want-flowEps {
		for i := range dist {
			dist[i] = math.Inf(1)
		}
		dist[s] = 0
		pq := &distHeap{{s, 0}}
		for pq.Len() > 0 {
			it := heap.Pop(pq).(distItem)
			if it.d > dist[it.n] {
				continue
			}
			for e := g.head[it.n]; e >= 0; e = g.next[e] {
				if g.cap[e] <= flowEps {
					continue
				}
				v := g.to[e]
				if nd := dist[it.n] + g.cost[e] + pot[it.n] - pot[v]; nd < dist[v]-1e-12 {
					dist[v] = nd
					heap.Push(pq, distItem{v, nd})
				}
			}
		}
		if math.IsInf(dist[t], 1) {
			break
		}
		for i := range pot {
			if !math.IsInf(dist[i], 1) {
				pot[i] += dist[i]
			}
		}
		admissible := func(e int) bool {
			return g.cap[e] > flowEps && math.Abs(g.cost[e]+pot[g.to[e^1]]-pot[g.to[e]]) < 1e-9
		}
		// Dinic on the admissible subgraph.
		for {
			for i := range level {
				level[i] = -1
			}
			level[s] = 0
			queue := []int{s}
			for len(queue) > 0 {
				u := queue[0]
				queue = queue[1:]
				for e := g.head[u]; e >= 0; e = g.next[e] {
					if v := g.to[e]; level[v] < 0 && admissible(e) {
						level[v] = level[u] + 1
						queue = append(queue, v)
					}
				}
			}
			if level[t] < 0 {
				break
			}
			copy(iter, g.head)
			var dfs func(u int, f float64) float64
			dfs = func(u int, f float64) float64 {
				if u == t {
					return f
				}
				for ; iter[u] >= 0; iter[u] = g.next[iter[u]] {
					e := iter[u]
					v := g.to[e]
					if level[v] != level[u]+1 || !admissible(e) {
						continue
					}
					if d := dfs(v, min(f, g.cap[e])); d > flowEps {
						g.cap[e] -= d
						g.cap[e^1] += d
						cost += d * g.cost[e]
						return d
					}
				}
				return 0
			}
			for flow < want-flowEps {
				d := dfs(s, want-flow)
				if d <= flowEps {
					break
				}
				flow += d
			}
			if flow >= want-flowEps {
				break
			}
		}
	}
	return flow, cost
}

type distItem struct {
	n int
	d float64
}

type distHeap []distItem

func (h distHeap) Len() int           { return len(h) }
func (h distHeap) Less(i, j int) bool { return h[i].d < h[j].d }
func (h distHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *distHeap) Push(x any)        { *h = append(*h, x.(distItem)) }
func (h *distHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
