package api

import (
	"fmt"
	"net/http"
	"strings"
)

// minShortID is the fewest characters a partial ID may have: every job and
// lease ID starts with "bafyrei" or "bafkrei", so shorter prefixes would
// match everything.
const minShortID = 4

// ResolveID turns what a user typed for a job or lease ID into the full ID
// among ids, the way docker accepts partial container IDs: the full ID, a
// unique prefix, a unique suffix, or the short form that logs, events, the
// CLI and the dashboard print (lease.Short: "bafyre…ujpunlre", also with
// "..."). kind ("job",
// "lease") and list (the command that lists them) name things in the
// user's terms. An unknown ID is a 404 and an ambiguous one a 409, each
// saying what to do.
func ResolveID(kind, list, typed string, ids []string) (string, error) {
	typed = strings.TrimSpace(typed)
	if typed == "" {
		return "", Errorf(http.StatusBadRequest, CodeBadRequest, "no %s ID given (%s lists them)", kind, list)
	}
	head, tail, short := strings.Cut(typed, "…")
	if !short {
		head, tail, short = strings.Cut(typed, "...")
	}
	var matches []string
	for _, id := range ids {
		switch {
		case id == typed:
			return id, nil
		case short:
			if strings.HasPrefix(id, head) && strings.HasSuffix(id, tail) && len(id) >= len(head)+len(tail) {
				matches = append(matches, id)
			}
		case len(typed) >= minShortID && (strings.HasPrefix(id, typed) || strings.HasSuffix(id, typed)):
			matches = append(matches, id)
		}
	}
	switch len(matches) {
	case 1:
		return matches[0], nil
	case 0:
		if !short && len(typed) < minShortID {
			return "", Errorf(http.StatusNotFound, CodeNotFound, "no %s %q here: give at least %d characters of its ID (%s lists them)", kind, typed, minShortID, list)
		}
		return "", Errorf(http.StatusNotFound, CodeNotFound, "no %s %q on this node (%s lists them)", kind, typed, list)
	}
	shown := matches
	if len(shown) > 3 {
		shown = shown[:3]
	}
	more := ""
	if len(matches) > len(shown) {
		more = fmt.Sprintf(" and %d more", len(matches)-len(shown))
	}
	return "", Errorf(http.StatusConflict, "ambiguous", "%s ID %q matches %d %ss (%s%s): give more characters",
		kind, typed, len(matches), kind, strings.Join(shown, ", "), more)
}
