// Package verifiertest builds numcmp, the test output verifier of
// replicated jobs (job spec `verifier:`): a Go program compiled to WASI
// preview 1 that compares the numbers in two outputs within a tolerance.
package verifiertest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
)

var (
	once   sync.Once
	module []byte
	err    error
)

// Module returns numcmp's WASM bytes, built once per process with the go
// tool that runs the tests (GOOS=wasip1 GOARCH=wasm).
func Module() ([]byte, error) {
	once.Do(func() { module, err = build() })
	return module, err
}

func build() ([]byte, error) {
	_, self, _, ok := runtime.Caller(0)
	if !ok {
		return nil, fmt.Errorf("verifiertest: no source path")
	}
	tmp, err := os.MkdirTemp("", "numcmp-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	bin := filepath.Join(tmp, "numcmp.wasm")
	// The toolchain go test runs under (it sets GOROOT for the test
	// binary's children when it has one), else the one on PATH.
	goBin := filepath.Join(os.Getenv("GOROOT"), "bin", "go")
	if _, err := os.Stat(goBin); os.Getenv("GOROOT") == "" || err != nil {
		goBin = "go"
	}
	cmd := exec.Command(goBin, "build", "-trimpath", "-o", bin, "./testdata/numcmp")
	cmd.Dir = filepath.Dir(self)
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("verifiertest: go build: %v\n%s", err, out)
	}
	return os.ReadFile(bin)
}
