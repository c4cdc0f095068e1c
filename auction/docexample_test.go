package auction

import (
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idlegrid/idlegrid/attest"
	"github.com/idlegrid/idlegrid/attest/golden"
)

// TestDocEnvelopeExample keeps the worked example of docs/protocol.md §5.2
// (a sealed Decline, byte by byte) equal to its test vector, and checks
// that the bytes the doc shows open as a Decline: the doc's example is
// the code's. Rewrite it with go test ./auction -run TestDocEnvelopeExample -update
func TestDocEnvelopeExample(t *testing.T) {
	v, _, env := golden.ReadVector(t, filepath.Join("testdata", "vectors", "decline.json"))
	d, signer, err := OpenDecline(env)
	if err != nil || signer.String() != v.Signer || d.Provider != v.Signer {
		t.Fatalf("the decline vector does not open as its signer's decline: %v", err)
	}
	var b strings.Builder
	b.WriteString("```\n")
	fmt.Fprintf(&b, "seed       %s (signer %s)\n", v.KeySeed, v.Signer)
	fmt.Fprintf(&b, "payload    %s\n", v.Diagnostic)
	lines := func(label, hexText string) {
		for i := 0; i < len(hexText); i += 64 {
			fmt.Fprintf(&b, "%-10s %s\n", label, hexText[i:min(i+64, len(hexText))])
			label = ""
		}
	}
	lines("cbor", v.Payload)
	lines("signed", v.SignedBytes)
	lines("envelope", v.Envelope)
	fmt.Fprintf(&b, "record ID  %s\n", attest.RecordID(env))
	b.WriteString("```\n")
	golden.CheckSection(t, "../docs/protocol.md", "envelope-example", b.String())

	// The bytes the doc shows, read back from the doc, open too.
	doc, err := os.ReadFile("../docs/protocol.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(doc), "<!-- envelope-example:begin -->")
	section, _, _ = strings.Cut(section, "<!-- envelope-example:end -->")
	shown := strings.Join(docHexLines(t, section, "envelope"), "")
	raw, err := hex.DecodeString(shown)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := OpenDecline(raw); err != nil {
		t.Errorf("the envelope the doc shows does not open: %v", err)
	}
}

// docHexLines returns the hex of the example lines labelled label and the
// unlabelled lines that continue them.
func docHexLines(t *testing.T, text, label string) []string {
	t.Helper()
	var out []string
	in := false
	for _, line := range strings.Split(text, "\n") {
		head, rest := strings.TrimSpace(line[:min(len(line), 10)]), strings.TrimSpace(line[min(len(line), 10):])
		switch {
		case head == label:
			in = true
		case head != "":
			in = false
		}
		if in && rest != "" {
			out = append(out, rest)
		}
	}
	if len(out) == 0 {
		t.Fatalf("no %q lines in the example", label)
	}
	return out
}
