package query

// levenshtein is the edit distance between a and b (bytes; field names and
// enum values are ASCII).
func levenshtein(a, b string) int {
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

// closest returns the candidate nearest to s and whether it is near enough
// to be a plausible typo (at most a third of the longer word, minimum 2).
// Ties go to the earlier candidate, so suggestions are deterministic.
func closest(s string, candidates []string) (string, bool) {
	best, bestD := "", -1
	for _, c := range candidates {
		if d := levenshtein(s, c); bestD < 0 || d < bestD {
			best, bestD = c, d
		}
	}
	limit := max(2, max(len(s), len(best))/3)
	return best, bestD >= 0 && bestD <= limit
}
