package executortest

import (
	"testing"

	"github.com/idlegrid/idlegrid/node/executor"
)

func TestFakeSuite(t *testing.T) {
	Suite{
		New: func(t *testing.T) executor.Executor {
			f := NewFake(t.TempDir(), nil)
			t.Cleanup(func() { f.Close() })
			return f
		},
		Spec: func(t *testing.T, p Program) executor.Spec {
			spec := executor.Spec{Runtime: "fake", JobID: "job", LeaseID: "lease"}
			switch p {
			case Hello:
				spec.Args = []string{"print:" + HelloText, "write:" + HelloFile + "=" + HelloFileData}
			case Exit3:
				spec.Args = []string{"exit:3"}
			case Hang:
				spec.Args = []string{"print:" + HangText, "hang"}
			case Echo:
				spec.Args = []string{"stdin", "env:" + EchoEnv}
			}
			return spec
		},
	}.Run(t)
}
