package auction

import (
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"slices"
	"time"
)

// Bounded bids without a coordinator (docs/protocol.md §3.5). Every
// provider on a shard runs SelectBidders over its view of the shard's
// digests and bids only if the rule picks it; the renter runs the same
// rule over its own view to know whom to expect. The cheapest offers
// always bid, so the auction's price is set as if everyone had; the rest
// bid at random, just enough to bring the expected count to the RFQ's
// want_bids, whatever the shard's size.
//
// want_bids is per shard: a renter that publishes one RFQ on n shards
// sets it to ceil(total / n), since a provider sees only its own shards'
// digests and each shard's selection is made apart.
//
// Only providers that can take the job now take part: a digest says when
// its host's calendar closes, and one closed, or closing before the job
// would end, would refuse the RFQ. Were it in the view, cheap hosts about
// to close would fill the cheapest prefix and refuse, and the rest would
// bid with a chance computed for a shard that large: an RFQ would draw
// far fewer bids than it wants.
//
// want_bids at its maximum (EveryoneBids) sets the rule aside: every
// feasible provider bids. A renter whose expected bidders stayed silent
// asks for it on its next round: providers that never bid may fill the
// cheapest prefix of the providers' views, which the renter cannot see.

// BidSelectInput is one shard's view of one RFQ.
type BidSelectInput struct {
	RFQ   *RFQ
	RFQID string // record ID of the RFQ: it seeds the coins
	Shard Shard  // the shard the RFQ came on; only its models count
	// Digests are the shard's providers, one per peer
	// (DigestBook.Digests(shard, now)); a deciding provider puts its own
	// current digest in place of the book's.
	Digests []*Digest
	// Newcomers are providers outside Digests that will decide over
	// Digests plus themselves: those the caller holds evidence of (a
	// matching capacity record) but has never seen bid. The caller's
	// Digests hold the proven providers only, since a peer nobody saw bid
	// must not fill the cheapest prefix (it may be a fresh key that never
	// bids), and each newcomer's own view is the same proven set plus
	// itself. SelectBidders reports the newcomers that will bid (the
	// cheapest MaxNewcomers are considered); ShouldBid ignores them.
	Newcomers []*Digest
	// Reliability holds optional public reliability hints, permille by
	// peer (absent: unknown, no penalty). Renter and provider agree only
	// if they use the same hints, so leave it nil unless both sides have
	// them from the same public source.
	Reliability map[string]uint32
	// Now is the decider's clock: a provider whose digest says its
	// calendar will not let it take the job now (Digest.TakesNow) would
	// refuse it, so it takes no part. The zero time checks only that a
	// digest was issued open.
	Now time.Time
}

// BidSelection is the rule's outcome for one shard.
type BidSelection struct {
	Want int // the RFQ's WantedBids
	// Feasible are the providers whose digest fits the RFQ on the shard
	// and whose calendar lets them take it now: those that would bid.
	// Closing are those that fit but whose calendar is closed, or closes
	// before the job would end: they would refuse, so they neither fill
	// the cheapest prefix nor dilute the others' chance.
	Feasible int
	Closing  int
	// Always is the cheapest feasible prefix, cheapest first: it holds at
	// least half the wanted bids and twice the job's GPUs (or, when that
	// would take more than twice the wanted bids, the job's GPUs once).
	Always []string
	// Probability is the chance each other feasible provider bids.
	Probability float64
	// Sampled are the other feasible providers whose coin came up, by
	// rank (SelectBidders only; ShouldBid leaves it empty).
	Sampled []string
	// Expected is the expected number of bids:
	// len(Always) + (Feasible - len(Always)) * Probability.
	Expected float64
	// Newcomers are the input's newcomers that select themselves, by
	// effective price (SelectBidders only).
	Newcomers []string
}

// EveryoneBids is the want_bids at which every feasible provider bids.
const EveryoneBids = MaxWantBids

// MaxNewcomers bounds the newcomers SelectBidders considers, cheapest
// first: each costs one run of the rule.
const MaxNewcomers = 32

// WantBidsFor is how many bids a renter whose market.want_bids is base
// wants for a job of gpus GPUs: base for one GPU (or a CPU-only job),
// and two more for each further GPU, at most MaxWantBids. A job split
// over hosts needs a winner for each part, and a spare for each in case
// one refuses or is outbid; with base 16, 4 GPUs ask 22 bids, 16 GPUs 46,
// and 25 or more 64. The always-bid prefix already holds twice the job's
// GPUs where the hosts allow; this adds the bids by lot that set the
// price beyond it.
func WantBidsFor(base int, gpus uint32) int {
	if gpus > MaxWantBids {
		return MaxWantBids
	}
	return max(1, min(base+2*(max(int(gpus), 1)-1), MaxWantBids))
}

// RFQWantBids is the want_bids of an RFQ for replicas copies of a job of
// gpus GPUs (each needs bids of its own, from independent hosts),
// published on shards shards: WantBidsFor(base, gpus) times replicas,
// split over the shards (each shard's providers see only its digests),
// 1..MaxWantBids.
func RFQWantBids(base int, gpus uint32, replicas, shards int) uint32 {
	want := WantBidsFor(base, gpus) * max(replicas, 1)
	shards = max(shards, 1)
	return uint32(max(1, min((want+shards-1)/shards, MaxWantBids)))
}

// Includes reports whether peerID is expected to bid.
func (s *BidSelection) Includes(peerID string) bool {
	return slices.Contains(s.Always, peerID) || slices.Contains(s.Sampled, peerID) || slices.Contains(s.Newcomers, peerID)
}

// SelectBidders runs the rule for every provider in the view: the
// renter's list of expected bidders (Always, then Sampled).
func SelectBidders(in BidSelectInput) BidSelection {
	sel, cands := planBids(in)
	var sampled []bidCandidate
	for _, c := range cands {
		if !c.always && coinBids(c.coin, sel.Probability) {
			sampled = append(sampled, c)
		}
	}
	slices.SortFunc(sampled, compareBidCandidates)
	for _, c := range sampled {
		sel.Sampled = append(sel.Sampled, c.peer)
	}
	sel.Newcomers = selectNewcomers(in)
	return sel
}

// selectNewcomers runs each of the cheapest feasible newcomers' own
// decision: over the input's digests plus itself.
func selectNewcomers(in BidSelectInput) []string {
	if len(in.Newcomers) == 0 {
		return nil
	}
	probe := in
	probe.Digests, probe.Reliability = in.Newcomers, nil
	_, cands := planBids(probe)
	top := cheapest(cands, MaxNewcomers)
	var out []string
	view := make([]*Digest, 0, len(in.Digests)+1)
	for _, i := range top {
		n := in.Newcomers[slices.IndexFunc(in.Newcomers, func(d *Digest) bool { return d != nil && d.Peer == cands[i].peer })]
		view = append(view[:0], n)
		for _, d := range in.Digests {
			if d != nil && d.Peer != n.Peer {
				view = append(view, d)
			}
		}
		own := in
		own.Digests, own.Newcomers = view, nil
		if ok, _ := ShouldBid(own, n.Peer); ok {
			out = append(out, n.Peer)
		}
	}
	return out
}

// ShouldBid is a provider's decision: whether self is in the cheapest
// prefix or its coin came up. A provider absent from the view, whose
// digest does not fit the RFQ on the shard, or whose calendar will not
// let it take the job now, does not bid. It agrees with
// SelectBidders(in).Includes(self) on the same view.
func ShouldBid(in BidSelectInput, self string) (bool, BidSelection) {
	sel, cands := planBids(in)
	for _, c := range cands {
		if c.peer == self {
			return c.always || coinBids(c.coin, sel.Probability), sel
		}
	}
	return false, sel
}

type bidCandidate struct {
	peer   string
	eff    uint64 // effective price: floor / reliability
	gpus   int
	coin   uint64
	always bool
}

// compareBidCandidates ranks by effective price; ties go by coin, so equal
// offers share the prefix across RFQs instead of the same peers always
// winning it.
func compareBidCandidates(a, b bidCandidate) int {
	return cmp.Or(cmp.Compare(a.eff, b.eff), cmp.Compare(a.coin, b.coin), cmp.Compare(a.peer, b.peer))
}

// planBids finds the feasible providers (those whose calendar lets them
// take the job now among them), cuts the always-bid prefix
// (marking it in the returned candidates) and sets the probability for
// the rest. It ranks only the cheapest max(2·want, GPUs) providers: every
// feasible provider offers at least one GPU, so the prefix never needs
// more, and a decision costs O(n) for a shard of n providers.
func planBids(in BidSelectInput) (BidSelection, []bidCandidate) {
	sel := BidSelection{}
	r := in.RFQ
	if r == nil {
		return sel, nil
	}
	sel.Want = r.WantedBids()
	key := coinKey(in.RFQID)
	cands := make([]bidCandidate, 0, len(in.Digests))
	for _, d := range in.Digests {
		if d == nil {
			continue
		}
		price, gpus, ok := DigestFitsOn(r, d, in.Shard)
		if !ok {
			continue
		}
		if !d.TakesNow(r, in.Now) {
			sel.Closing++
			continue
		}
		eff := price
		if rel, known := in.Reliability[d.Peer]; known {
			if rel < r.MinReliabilityPermille {
				continue
			}
			eff = price * 1000 / max(uint64(min(rel, 1000)), 1) // price <= 1e10: no overflow
		}
		cands = append(cands, bidCandidate{peer: d.Peer, eff: eff, gpus: gpus, coin: bidCoin(key, d.Peer)})
	}
	sel.Feasible = len(cands)
	if sel.Want >= EveryoneBids {
		order := make([]int, len(cands))
		for i := range order {
			order[i] = i
		}
		slices.SortFunc(order, func(a, b int) int { return compareBidCandidates(cands[a], cands[b]) })
		for _, i := range order {
			cands[i].always = true
			sel.Always = append(sel.Always, cands[i].peer)
		}
		sel.Expected = float64(len(cands))
		return sel, cands
	}
	need := int(r.Resources.GPUs)
	top := cheapest(cands, max(2*sel.Want, need))
	half := (sel.Want + 1) / 2
	n, gpus := 0, 0
	for n < len(top) {
		if n >= half && gpus >= 2*need || n >= 2*sel.Want && gpus >= need {
			break
		}
		gpus += cands[top[n]].gpus
		cands[top[n]].always = true
		sel.Always = append(sel.Always, cands[top[n]].peer)
		n++
	}
	if extra, rest := sel.Want-n, len(cands)-n; extra > 0 && rest > 0 {
		sel.Probability = min(1, float64(extra)/float64(rest))
	}
	sel.Expected = float64(n) + float64(len(cands)-n)*sel.Probability
	return sel, cands
}

// cheapest returns the indices of the k best-ranked candidates, best
// first, keeping a sorted window of k so most candidates cost one
// comparison.
func cheapest(cands []bidCandidate, k int) []int {
	top := make([]int, 0, min(k, len(cands))+1)
	for i := range cands {
		if len(top) == k && compareBidCandidates(cands[i], cands[top[k-1]]) >= 0 {
			continue
		}
		at, _ := slices.BinarySearchFunc(top, i, func(j, i int) int { return compareBidCandidates(cands[j], cands[i]) })
		top = slices.Insert(top, at, i)
		if len(top) > k {
			top = top[:k]
		}
	}
	return top
}

// coinKey and bidCoin are the provider's deterministic coin for an RFQ:
// key = the first 8 bytes of SHA-256("idlegrid-bidselect/1" 0x00 rfqID),
// coin = splitmix64(key XOR fnv1a64(peerID)). Anyone with the RFQ ID and
// the peer ID computes the same value, a fresh RFQ draws fresh coins for
// everyone, and one SHA-256 per RFQ keeps a 100,000-provider shard cheap.
func coinKey(rfqID string) uint64 {
	h := sha256.New()
	h.Write([]byte("idlegrid-bidselect/1\x00"))
	h.Write([]byte(rfqID))
	return binary.BigEndian.Uint64(h.Sum(nil)[:8])
}

func bidCoin(key uint64, peerID string) uint64 {
	f := uint64(14695981039346656037) // FNV-1a 64 offset basis
	for i := 0; i < len(peerID); i++ {
		f ^= uint64(peerID[i])
		f *= 1099511628211
	}
	z := key ^ f
	z += 0x9e3779b97f4a7c15 // splitmix64
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// coinBids reports whether a coin bids at probability p: coin < p·2^64.
func coinBids(coin uint64, p float64) bool {
	switch {
	case p <= 0:
		return false
	case p >= 1:
		return true
	}
	return coin < uint64(p*(1<<64))
}

// DigestFits is DigestFitsOn without a shard: any of d's models count.
func DigestFits(r *RFQ, d *Digest) (priceMicro uint64, gpus int, ok bool) {
	return DigestFitsOn(r, d, "")
}

// DigestFitsOn is the coarse, public feasibility of r on d's provider,
// counting only models of shard s ("": any): runtime, tier, price,
// region, host, duration, egress, and for a GPU job a model the RFQ
// accepts with enough VRAM and compute capability and a free GPU. It
// returns the tier's current floor and the free GPUs of the best fitting
// model (one model per bid, as Quote offers). What a digest leaves out
// (images, datasets, notice, the provider's live telemetry) is not
// checked: the provider's Quote still decides the bid itself.
//
// A firmly held GPU counts as free. A hold lasts the seconds of one
// auction (provider.firm_hold) and its end is no news worth a digest
// (DigestChangedFor), so a digest sent while one stood is read for a
// minute or more (its refresh) after the GPU is free again. Counted as
// busy, it kept its provider out of every node's always-bid prefix
// through the following auctions (a repeat renter's losing bidders hold
// GPUs, so these are the providers it trades with); a GPU leased from
// the hold instead is news, and its digest follows within a second.
func DigestFitsOn(r *RFQ, d *Digest, s Shard) (priceMicro uint64, gpus int, ok bool) {
	price := d.Floor.For(r.Tier)
	jobSec := r.MaxDurationSec
	if jobSec == 0 {
		jobSec = r.ExpectedDurationSec
	}
	res := r.Resources
	if res.GPUs == 0 && d.CPU != nil && price != 0 {
		// CPU-only work is priced on the CPU share (a digest without one
		// is from before it and keeps the GPU floor below).
		if cpuFits(res, d.CPU) != "" {
			return 0, 0, false
		}
		price = d.CPU.FloorMicro * uint64(CPUCoresOf(res))
	}
	switch {
	case price == 0 || price > r.MaxPriceMicro,
		!slices.Contains(d.Runtimes, r.Runtime),
		len(r.Regions) > 0 && !slices.Contains(r.Regions, d.Region.Country),
		res.CPUCores > d.Host.CPUCores || res.RAMMiB > d.Host.RAMMiB || res.DiskGiB > d.Host.DiskGiB,
		d.MaxDurationSec != 0 && (jobSec == 0 || jobSec > d.MaxDurationSec),
		r.Egress && !d.Egress:
		return 0, 0, false
	}
	if res.GPUs == 0 {
		return price, 0, s == "" || s == ShardCPU
	}
	fam := s.Family()
	if s != "" && fam == "" {
		return 0, 0, false
	}
	best := 0
	for _, m := range d.Models {
		free := m.Free + m.Held // within a digest's validation, at most Total
		if free == 0 || m.VRAMMiB < res.MinVRAMMiB || !ModelAccepted(res.Models, m.Model) ||
			fam != "" && GPUFamily(m.Model) != fam ||
			res.MinComputeCap != "" && !ccAtLeast(m.ComputeCap, res.MinComputeCap) {
			continue
		}
		best = max(best, int(min(free, res.GPUs)))
	}
	return price, best, best > 0
}

// ExpectedStayedSilent reports whether fewer than half of the providers
// an auction expected to bid answered it: the cheap prefix of the view
// may be held by providers that never bid (sybil digests, dead shards),
// so the renter's next round asks for EveryoneBids instead of waiting
// on them again.
func ExpectedStayedSilent(expected, answered int) bool {
	return expected > 0 && 2*answered < expected
}
