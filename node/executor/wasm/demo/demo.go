// Package demo is the devnet's demo workload: a small, deterministic,
// GPU-job-shaped WASI preview1 command module, embedded so that any build
// of idlegrid can post it without a toolchain or a download.
//
// The module (demo.wat, assembled into the committed demo.wasm) multiplies
// two pseudo-random N×N u32 matrices modulo 2^32, N from its one argument
// (default DefaultN, at most MaxN). It prints "start: n=<N>", four progress
// lines ("progress 1/4" .. "progress 4/4") and "done: n=<N>
// checksum=<sum>" to stdout, and writes "n=<N> checksum=<sum>\n" to
// ResultFile in its /out directory. A bad N exits ExitUsage. Its output is
// the same on every host, so two providers' output CIDs can be compared.
//
// To change it, edit demo.wat, run scripts/build-demo-wasm.sh (it needs
// node and npm) and update CID and, if the output changed, ExpectedResult;
// the package's tests fail until both match.
package demo

import (
	"bytes"
	_ "embed"
	"strconv"
)

//go:embed demo.wasm
var module []byte

// Module returns a copy of the module's bytes.
func Module() []byte { return bytes.Clone(module) }

// CID is the module's CIDv1 (raw codec, sha2-256), its Spec.ModuleCID.
const CID = "bafkreiaaqnolddjgbdfmfg4bbeeakvz2o7fvk5bdkgfmz7cllt5wajlf3i"

const (
	// DefaultN is the matrix size without an argument.
	DefaultN = 160
	// MaxN is the largest N the module accepts; its three matrices then
	// take 48 MiB.
	MaxN = 2048
	// ExitUsage is the exit code for a bad N or extra arguments.
	ExitUsage = 64
)

// ResultFile is the file the module writes to its output directory.
const ResultFile = "result.txt"

// ExpectedResult is ResultFile's content after a run with DefaultN.
const ExpectedResult = "n=160 checksum=3306940650\n"

// Args returns the module arguments that run it with matrix size n.
func Args(n int) []string { return []string{strconv.Itoa(n)} }
