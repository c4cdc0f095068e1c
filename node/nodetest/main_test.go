package nodetest_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if any test leaves goroutines behind: every
// node must undo everything it started on Close.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// Process-wide singletons of libp2p and badger dependencies.
		goleak.IgnoreTopFunction("github.com/ipfs/go-log/v2/writer.(*MirrorWriter).logRoutine"),
		goleak.IgnoreAnyFunction("github.com/libp2p/go-libp2p/p2p/transport/quicreuse.(*reuse).gc"),
		goleak.IgnoreTopFunction("go.opencensus.io/stats/view.(*worker).start"),
		goleak.IgnoreAnyFunction("github.com/dgraph-io/ristretto/v2.(*defaultPolicy[...]).processItems"),
		goleak.IgnoreAnyFunction("github.com/golang/glog.(*fileSink).flushDaemon"),
		// mocknet does not always tear down both ends of a stream when a
		// host closes (its deadlines are no-ops too); goroutines blocked on
		// its in-memory pipes are the mock's, not ours. Real hosts are
		// leak-checked in package p2p.
		goleak.IgnoreAnyFunction("github.com/libp2p/go-libp2p/p2p/net/mock.(*stream).transport"),
		goleak.IgnoreAnyFunction("github.com/libp2p/go-libp2p/p2p/net/mock.(*stream).Read"),
		goleak.IgnoreAnyFunction("github.com/libp2p/go-libp2p/p2p/net/mock.(*stream).Write"),
	)
}
