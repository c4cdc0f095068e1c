package sim

import (
	"cmp"
	"container/heap"
	"fmt"
	"slices"
	"time"

	"github.com/idlegrid/idlegrid/attest/reputation"
)

// Take is one provider's part of a placement: which of its GPUs (indices
// into its capacity record) at what price, uUSD per GPU-hour.
type Take struct {
	Prov       int
	GPUs       []int
	PriceMicro uint64
}

// policy places a waiting job now, or returns nil to keep it waiting.
type policy interface {
	place(w *World, j *jobState) ([]Take, error)
}

// event kinds; at equal times, ends come first so freed GPUs are seen.
// evOpen is the top of each hour while idle-time calendars
// (Config.ClosingCalendars) open then: waiting jobs get another try.
const (
	evEnd = iota
	evArrive
	evOpen
)

type event struct {
	at   int64
	kind int
	seq  int
	job  *jobState
	run  []*lease
}

type events []event

func (e events) Len() int { return len(e) }
func (e events) Less(i, j int) bool {
	return cmp.Or(cmp.Compare(e[i].at, e[j].at), cmp.Compare(e[i].kind, e[j].kind), cmp.Compare(e[i].seq, e[j].seq)) < 0
}
func (e events) Swap(i, j int) { e[i], e[j] = e[j], e[i] }
func (e *events) Push(x any)   { *e = append(*e, x.(event)) }
func (e *events) Pop() any {
	old := *e
	x := old[len(old)-1]
	*e = old[:len(old)-1]
	return x
}

// replay is one policy on one world.
type replay struct {
	w      *World
	pol    policy
	jobs   []*jobState
	queue  []*jobState // waiting, by arrival
	ev     events
	seq    int
	leases []*lease
	// canaries are the canary runs started (cheat.go); deterministic
	// counts the renter's completed jobs that could be canaried.
	canaries      []*jobState
	deterministic uint64
	// firstWait is how long a new job (or canary) waits for a plan and
	// rerunWait how long failed work does, in seconds (-1: a failed run
	// fails its job); both Config.MaxWait unless the policy sets them.
	firstWait, rerunWait int64
	// avoidFailed: failed work avoids the provider that failed it (the
	// node's re-auction).
	avoidFailed bool
}

// runReplay replays cfg's jobs under pol for one seed.
func runReplay(cfg *Config, seed uint64, pol policy) (*replay, error) {
	wait := int64(cfg.MaxWait / time.Second)
	r := &replay{w: newWorld(cfg, seed), pol: pol, firstWait: wait, rerunWait: wait}
	r.jobs = r.w.newJobs()
	if s, ok := pol.(interface{ setup(*replay) }); ok {
		s.setup(r)
	}
	for _, j := range r.jobs {
		r.push(event{at: j.arrival, kind: evArrive, job: j})
	}
	if cfg.ClosingCalendars > 0 {
		r.push(event{at: 3600, kind: evOpen})
	}
	for r.ev.Len() > 0 {
		e := heap.Pop(&r.ev).(event)
		r.w.now = e.at
		switch e.kind {
		case evArrive:
			r.enqueue(e.job)
		case evEnd:
			r.end(e.run)
		case evOpen:
			if r.ev.Len() > 0 || len(r.queue) > 0 {
				r.push(event{at: e.at + 3600, kind: evOpen})
			}
		}
		// Drain every event at this instant before matching, so that a
		// burst of arrivals queues in trace order.
		if r.ev.Len() > 0 && r.ev[0].at == e.at {
			continue
		}
		if err := r.dispatch(); err != nil {
			return nil, err
		}
	}
	for _, j := range r.queue {
		j.dropped = true
	}
	return r, nil
}

func (r *replay) push(e event) {
	e.seq = r.seq
	r.seq++
	heap.Push(&r.ev, e)
}

// enqueue adds j to the waiting queue in arrival order.
func (r *replay) enqueue(j *jobState) {
	i, _ := slices.BinarySearchFunc(r.queue, j, func(a, b *jobState) int {
		return cmp.Or(cmp.Compare(a.arrival, b.arrival), cmp.Compare(a.ID, b.ID))
	})
	r.queue = slices.Insert(r.queue, i, j)
}

// dispatch offers the free GPUs to the waiting jobs, oldest first; a job
// that cannot be placed keeps waiting (later jobs may still fit), one past
// its deadline is dropped.
func (r *replay) dispatch() error {
	kept := r.queue[:0]
	for k, j := range r.queue {
		if r.w.now > j.deadline {
			j.dropped = true
			continue
		}
		if r.w.freeFor(j) < j.GPUs {
			kept = append(kept, j)
			continue
		}
		takes, err := r.pol.place(r.w, j)
		if err != nil {
			r.queue = append(kept, r.queue[k:]...)
			return err
		}
		if takes == nil {
			kept = append(kept, j)
			continue
		}
		if err := r.start(j, takes); err != nil {
			return err
		}
	}
	clear(r.queue[len(kept):])
	r.queue = kept
	return nil
}

// start commits a placement: it checks it (the conservation rules), marks
// the GPUs busy and schedules the run's end, at its first failure if a
// member fails.
func (r *replay) start(j *jobState, takes []Take) error {
	w := r.w
	total := 0
	seen := map[int]bool{}
	for _, t := range takes {
		if t.Prov < 0 || t.Prov >= len(w.provs) || seen[t.Prov] {
			return fmt.Errorf("sim: job %d: bad or repeated provider %d", j.ID, t.Prov)
		}
		seen[t.Prov] = true
		p := w.provs[t.Prov]
		if !slices.Contains(j.allowed, p.model()) {
			return fmt.Errorf("sim: job %d placed on model %s, allowed %v", j.ID, p.model(), j.allowed)
		}
		for k, g := range t.GPUs {
			if g < 0 || g >= len(p.cap.GPUs) || !p.cap.GPUs[g].Free || slices.Contains(t.GPUs[:k], g) {
				return fmt.Errorf("sim: job %d: GPU %d of %s not free", j.ID, g, p.cap.Peer)
			}
		}
		total += len(t.GPUs)
	}
	if total != j.GPUs {
		return fmt.Errorf("sim: job %d placed on %d GPUs, wants %d", j.ID, total, j.GPUs)
	}
	now := w.now
	end := now + j.DurationSec
	failAt, culprit := int64(-1), -1
	for _, t := range takes {
		if fails, frac := w.failDraw(j, w.provs[t.Prov]); fails {
			at := now + max(1, int64(frac*float64(j.DurationSec)))
			if failAt < 0 || at < failAt {
				failAt, culprit = min(at, end), t.Prov
			}
		}
	}
	run := make([]*lease, 0, len(takes))
	for _, t := range takes {
		p := w.provs[t.Prov]
		l := &lease{job: j, prov: t.Prov, gpus: t.GPUs, priceMicro: t.PriceMicro, floorMicro: p.floor(j.Tier), start: now, end: end,
			wrong: w.cheatDraw(j, p)}
		if failAt >= 0 {
			l.end, l.failed, l.culprit = failAt, true, t.Prov == culprit
		}
		for _, g := range t.GPUs {
			p.cap.GPUs[g].Free = false
		}
		p.free -= len(t.GPUs)
		w.freeByModel[p.model()] -= len(t.GPUs)
		w.busyByModel[p.model()] += len(t.GPUs)
		run = append(run, l)
		r.leases = append(r.leases, l)
	}
	if failAt < 0 {
		j.done, j.started = true, now
	}
	r.push(event{at: run[0].end, kind: evEnd, run: run})
	return nil
}

// end frees a run's GPUs, tells the renter's reputation fold how each
// lease ended, requeues the job of a failed run and hands a finished one
// to the renter's canary check.
func (r *replay) end(run []*lease) {
	w := r.w
	for _, l := range run {
		p := w.provs[l.prov]
		for _, g := range l.gpus {
			p.cap.GPUs[g].Free = true
		}
		p.free += len(l.gpus)
		w.freeByModel[p.model()] += len(l.gpus)
		w.busyByModel[p.model()] -= len(l.gpus)
		state := reputation.StateCompleted
		switch {
		case l.culprit:
			state = reputation.StateFailed
		case l.failed:
			state = reputation.StateCancelledByRenter
		}
		kind := "job"
		if l.job.canaryOf != nil {
			kind = "canary"
		}
		w.rep.Add(reputation.Outcome{
			Lease: fmt.Sprintf("%s/%d/%d/%d", kind, l.job.ID, l.job.attempt, l.prov), Provider: p.cap.Peer,
			EndedAt: epoch.Add(time.Duration(l.end) * time.Second), State: state,
			GPUHours: float64(len(l.gpus)) * float64(l.job.DurationSec) / 3600,
		})
	}
	if !run[0].failed {
		r.finished(run)
		return
	}
	j := run[0].job
	j.attempt++
	for _, l := range run {
		if l.culprit && r.avoidFailed {
			j.avoid = append(j.avoid, l.prov)
		}
	}
	if r.rerunWait < 0 {
		j.dropped = true
		return
	}
	j.deadline = w.now + r.rerunWait
	r.enqueue(j)
}

// nowTime is the replay's clock as a time.
func (w *World) nowTime() time.Time { return epoch.Add(time.Duration(w.now) * time.Second) }
