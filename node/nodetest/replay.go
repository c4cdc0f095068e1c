package nodetest

import (
	"github.com/idlegrid/idlegrid/node/executor"
	"github.com/idlegrid/idlegrid/node/executor/executortest"
	"github.com/idlegrid/idlegrid/node/executor/wasm"
)

// FakeReplay is a node.ReplayExecutor for clusters whose providers run
// the scripted fake as "wasm": an honest fake, so a re-run gives the
// output an honest provider's fake gives.
func FakeReplay(dir string, _ executor.Artifacts, _ wasm.Entropy) (executor.Executor, error) {
	f := executortest.NewFake(dir, nil)
	f.Runtime = "wasm"
	return f, nil
}
