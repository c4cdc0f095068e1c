package cli

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/idlegrid/idlegrid/node/api"
	"github.com/idlegrid/idlegrid/node/lease"
)

// printReplicas sums up a replicated batch job (`replicas: N`, whose
// award left `replica` events): its leases grouped by output CID, so a
// disagreement shows at a glance. Other jobs print nothing.
func printReplicas(w io.Writer, j api.Job) {
	if !slices.ContainsFunc(j.Events, func(ev api.JobEvent) bool { return ev.Kind == "replica" }) {
		return
	}
	var outputs []string
	by := map[string][]string{}
	pending := 0
	for _, l := range j.Leases {
		if l.OutputCID == "" {
			pending++
			continue
		}
		if by[l.OutputCID] == nil {
			outputs = append(outputs, l.OutputCID)
		}
		by[l.OutputCID] = append(by[l.OutputCID], fmt.Sprintf("%s (%s)", lease.Short(l.Provider), l.State))
	}
	parts := make([]string, 0, len(outputs)+1)
	for _, o := range outputs {
		parts = append(parts, fmt.Sprintf("%s from %s", lease.Short(o), strings.Join(by[o], ", ")))
	}
	if pending > 0 {
		parts = append(parts, fmt.Sprintf("%d without an output yet", pending))
	}
	fmt.Fprintf(w, "replicas %d leases on independent providers: %s\n", len(j.Leases), strings.Join(parts, "; "))
}
