package auction

import "strings"

// ImageAllowed reports whether a docker image reference "REF@sha256:<hex>"
// passes an allow list: an entry "sha256:<hex prefix>" matches the digest,
// any other entry is a pattern for the reference in which '*' matches any
// run of characters, '/' included, tried against the reference with and
// without its tag ("ghcr.io/acme/*" allows "ghcr.io/acme/train:v2@sha256:…").
func ImageAllowed(allowed []string, image string) bool {
	ref, digest, _ := strings.Cut(image, "@")
	repo := ref
	if i := strings.LastIndexByte(ref, ':'); i > strings.LastIndexByte(ref, '/') {
		repo = ref[:i]
	}
	for _, p := range allowed {
		if strings.HasPrefix(p, "sha256:") {
			if digest != "" && strings.HasPrefix(digest, p) {
				return true
			}
			continue
		}
		if globMatch(p, ref) || globMatch(p, repo) {
			return true
		}
	}
	return false
}

// globMatch matches s against a pattern whose only wildcard is '*'.
func globMatch(pattern, s string) bool {
	// Greedy matching with backtracking to the last star: linear for the
	// short patterns policies hold.
	p, i, star, mark := 0, 0, -1, 0
	for i < len(s) {
		switch {
		case p < len(pattern) && pattern[p] == '*':
			star, mark = p, i
			p++
		case p < len(pattern) && pattern[p] == s[i]:
			p++
			i++
		case star >= 0:
			p = star + 1
			mark++
			i = mark
		default:
			return false
		}
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}
