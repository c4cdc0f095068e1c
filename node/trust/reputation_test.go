package trust

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/idlegrid/idlegrid/attest/reputation"
	"github.com/idlegrid/idlegrid/node/roomtest"
)

// TestReputationFoldsOffTheReadersPath: a reader takes the last fold
// while evidence that need not be waited for comes in (Refresh), and the
// background folds it in; after an outcome (Invalidate) no reader gets a
// fold from before it.
func TestReputationFoldsOffTheReadersPath(t *testing.T) {
	peers := roomtest.Peers(t, 1)
	tr := newTrust(t, peers[0])
	rep := tr.Reputation()
	same := func(a, b map[string]reputation.Result) bool {
		return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
	}
	first := rep.All()
	rep.Refresh()
	if !same(rep.All(), first) {
		t.Fatal("a read after Refresh folded on the reader's path")
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { rep.runFolds(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	deadline := time.Now().Add(30 * time.Second)
	for same(rep.All(), first) {
		if time.Now().After(deadline) {
			t.Fatal("the background never folded in what came after Refresh")
		}
		time.Sleep(10 * time.Millisecond)
	}
	background := rep.All()
	rep.Invalidate()
	if same(rep.All(), background) {
		t.Fatal("a read after Invalidate was served the fold from before it")
	}
}
