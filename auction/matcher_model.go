package auction

import "strings"

// ModelMatches reports whether a GPU model slug satisfies a requested model
// or family: the slug equals pattern or extends it by whole '-' segments,
// so "h100" matches "h100-80gb" and "h100-nvl-94gb" but not "h1000", and
// "h100-80gb" matches only itself. It is the rule auction/query applies to
// gpu clauses, so a search and an auction agree on what "h100" means.
func ModelMatches(pattern, slug string) bool {
	return slug == pattern || strings.HasPrefix(slug, pattern+"-")
}

// ModelAccepted reports whether slug satisfies any of patterns; an empty
// list accepts every model (Resources.Models: "empty: any model").
func ModelAccepted(patterns []string, slug string) bool {
	if len(patterns) == 0 {
		return true
	}
	for _, p := range patterns {
		if ModelMatches(p, slug) {
			return true
		}
	}
	return false
}
