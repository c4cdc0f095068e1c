package jobproto

import (
	"encoding/hex"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/fxamacker/cbor/v2"

	"github.com/idlegrid/idlegrid/attest/golden"
)

// TestDocJobExample keeps the job protocol example of docs/protocol.md
// §4.2 (a status long poll and its answer) equal to what the code encodes,
// and decodes the bytes the doc shows. Rewrite it with
// go test ./node/jobproto -run TestDocJobExample -update
func TestDocJobExample(t *testing.T) {
	exit := 0
	req := &Request{Op: OpStatus, Lease: "bafkreidln3rwiaoh5lyjjhlxlplpjrbzhieihlip7iefdj6g4lr63mu7oy", After: 7, WaitMs: 20_000}
	hdr := &Header{Status: &Status{Version: 9, State: "completed", ExitCode: &exit, StartedMs: 1772452802000,
		FinishedMs: 1772452922000, OutputCID: "bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy", OutputSize: 10240, LogBytes: 512}}
	reqRaw, err := EncodeRequest(req)
	if err != nil {
		t.Fatal(err)
	}
	hdrRaw, err := EncodeHeader(hdr)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString("```\n")
	for _, m := range []struct {
		label string
		raw   []byte
	}{{"request", reqRaw}, {"header", hdrRaw}} {
		diag, err := cbor.Diagnose(m.raw)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s  %s\n", m.label, diag)
		framed := append(varint(len(m.raw)), m.raw...)
		fmt.Fprintf(&b, "frame    %s\n", hex.EncodeToString(framed))
	}
	b.WriteString("```\n")
	golden.CheckSection(t, "../../docs/protocol.md", "job-example", b.String())

	doc, err := os.ReadFile("../../docs/protocol.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(doc), "<!-- job-example:begin -->")
	section, _, _ = strings.Cut(section, "<!-- job-example:end -->")
	var frames [][]byte
	for _, line := range strings.Split(section, "\n") {
		if h, ok := strings.CutPrefix(line, "frame    "); ok {
			raw, err := hex.DecodeString(h)
			if err != nil {
				t.Fatal(err)
			}
			frames = append(frames, raw)
		}
	}
	if len(frames) != 2 {
		t.Fatalf("the doc's job example shows %d frames, want 2", len(frames))
	}
	unframe := func(f []byte) []byte {
		n, k := 0, 0
		for ; k < len(f) && f[k]&0x80 != 0; k++ {
			n |= int(f[k]&0x7f) << (7 * k)
		}
		n |= int(f[k]) << (7 * k)
		if len(f)-k-1 != n {
			t.Fatalf("frame length %d, but %d bytes follow", n, len(f)-k-1)
		}
		return f[k+1:]
	}
	gotReq, err := DecodeRequest(unframe(frames[0]))
	if err != nil || !reflect.DeepEqual(gotReq, req) {
		t.Errorf("the doc's request decodes to %+v (%v)", gotReq, err)
	}
	gotHdr, err := DecodeHeader(unframe(frames[1]))
	if err != nil || !reflect.DeepEqual(gotHdr, hdr) {
		t.Errorf("the doc's header decodes to %+v (%v)", gotHdr, err)
	}
}

func varint(n int) []byte {
	var out []byte
	for n >= 0x80 {
		out = append(out, byte(n)|0x80)
		n >>= 7
	}
	return append(out, byte(n))
}
