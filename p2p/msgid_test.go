package p2p

import (
	"encoding/hex"
	"path/filepath"
	"testing"

	pb "github.com/libp2p/go-libp2p-pubsub/pb"

	"github.com/idlegrid/idlegrid/attest/golden"
)

// TestMessageIDVectors checks the router's message ID against the
// protocol test vectors of every gossiped record kind (docs/protocol.md
// §3.1, §5.2): another implementation computing sha256(topic ‖ 0x00 ‖
// data) from the doc gets the IDs this node uses for IHAVE, IWANT and
// IDONTWANT.
func TestMessageIDVectors(t *testing.T) {
	var paths []string
	for _, dir := range []string{"../auction/testdata/vectors", "../attest/testdata/vectors"} {
		m, err := filepath.Glob(filepath.Join(dir, "*.json"))
		if err != nil {
			t.Fatal(err)
		}
		paths = append(paths, m...)
	}
	gossiped := 0
	for _, path := range paths {
		v, _, env := golden.ReadVector(t, path)
		if v.Topic == "" {
			continue
		}
		gossiped++
		got := hex.EncodeToString([]byte(contentID(&pb.Message{Topic: &v.Topic, Data: env})))
		if got != v.MessageID {
			t.Errorf("%s: message ID %s, vector says %s", filepath.Base(path), got, v.MessageID)
		}
	}
	if gossiped < 5 {
		t.Fatalf("found %d gossiped vectors in %d files; are the vector folders where this test looks?", gossiped, len(paths))
	}
}
