package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/idlegrid/idlegrid/node/api"
	"github.com/idlegrid/idlegrid/node/endpoint"
)

func TestPrintEndpoint(t *testing.T) {
	e := &api.Endpoint{Job: "bafkjob", Port: 8080, Listen: "127.0.0.1:8080",
		Total: api.EndpointStats{Stats: endpoint.Stats{Requests: 30, Retries: 2, PromptTokens: 100, CompletionTokens: 900, TTFTP50Ms: 12.5}, SpentUSD: 0.002, USDPerMTok: 2},
		Replicas: []api.EndpointReplica{
			{Lease: "bafkreplica0", Slot: 0, Live: true, EndpointStats: api.EndpointStats{Stats: endpoint.Stats{Requests: 20, PromptTokens: 60, CompletionTokens: 600}, USDPerMTok: 1.5}},
			{Lease: "bafkreplica1", Slot: 1, Live: false},
		}}
	var buf bytes.Buffer
	printEndpoint(&buf, e)
	out := buf.String()
	for _, want := range []string{"endpoint 127.0.0.1:8080 -> port 8080", "TTFT P50", "$/1M TOK", "1 (replaced)", "service", "$2.0000", "1000", "2 request(s) sent again"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
	if p := wordingProblems(out); len(p) > 0 {
		t.Errorf("wording: %v\n%s", p, out)
	}
}
