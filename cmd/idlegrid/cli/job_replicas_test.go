package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/idlegrid/idlegrid/node/api"
)

// TestPrintReplicas: a replicated job's leases are grouped by output, so
// the odd one out shows; a job without replicas prints nothing.
func TestPrintReplicas(t *testing.T) {
	j := api.Job{
		Events: []api.JobEvent{{Kind: "replica"}, {Kind: "replica"}, {Kind: "replica"}},
		Leases: []api.Lease{
			{Provider: "12D3KooWAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", State: "unverified", OutputCID: "bafkreiwrongwrongwrongwrongwrongwrongwrongwrongwrongwrong"},
			{Provider: "12D3KooWBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB", State: "completed", OutputCID: "bafkreirightrightrightrightrightrightrightrightrightright"},
			{Provider: "12D3KooWCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCC", State: "completed", OutputCID: "bafkreirightrightrightrightrightrightrightrightrightright"},
		},
	}
	var b bytes.Buffer
	printReplicas(&b, j)
	got := b.String()
	for _, want := range []string{"replicas 3 leases", "from 12D3Ko…AAAAAAAA (unverified)", "12D3Ko…BBBBBBBB (completed), 12D3Ko…CCCCCCCC (completed)"} {
		if !strings.Contains(got, want) {
			t.Fatalf("got %q, want it to contain %q", got, want)
		}
	}
	b.Reset()
	printReplicas(&b, api.Job{Leases: j.Leases})
	if b.Len() != 0 {
		t.Fatalf("a job without replicas printed %q", b.String())
	}
}
