package auction

// Closest returns the candidate nearest to s by edit distance and whether
// it is near enough to be a plausible typo (at most a third of the longer
// word, minimum 2). Ties go to the earlier candidate, so suggestions are
// deterministic. Every "did you mean" in idlegrid (query fields, job spec
// fields, config keys, units, sort keys) comes from here.
func Closest(s string, candidates []string) (string, bool) {
	best, bestD := "", -1
	for _, c := range candidates {
		if d := editDistance(s, c); bestD < 0 || d < bestD {
			best, bestD = c, d
		}
	}
	limit := max(2, max(len(s), len(best))/3)
	return best, bestD >= 0 && bestD <= limit
}

// editDistance is the Levenshtein distance between a and b in bytes (the
// words compared are ASCII). Long inputs, which come from untrusted peers
// or files, are treated as far apart to bound the work.
func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return max(len(a), len(b))
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
