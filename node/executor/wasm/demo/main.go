//go:build wasip1

// Command demo is a small GPU-job-shaped WASI workload for the devnet: it
// multiplies two deterministic N×N matrices (N from argv[1], default 128),
// prints progress to stdout and writes result.json to /out. Its output is
// the same on every host, so two providers' output CIDs can be compared.
//
// Build it (from the repository root) with:
//
//	GOOS=wasip1 GOARCH=wasm go build -trimpath -o demo.wasm ./node/executor/wasm/demo
//
// or run `go generate ./node/executor/wasm`, which writes demo/demo.wasm.
// The binary is not committed; the wasm package's tests build and run it.
package main

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"os"
	"strconv"
)

type result struct {
	N        int     `json:"n"`
	Trace    float64 `json:"trace"`
	Checksum string  `json:"checksum"` // FNV-64a of the product's float64 bits
	FLOPs    int64   `json:"flops"`
}

func main() {
	n := 128
	if len(os.Args) > 1 {
		v, err := strconv.Atoi(os.Args[1])
		if err != nil || v < 1 || v > 2048 {
			fmt.Fprintln(os.Stderr, "demo: N must be 1..2048")
			os.Exit(64)
		}
		n = v
	}
	a, b := fill(n, 1), fill(n, 2)
	c := make([]float64, n*n)
	for i := range n {
		for k := range n {
			aik := a[i*n+k]
			for j := range n {
				c[i*n+j] += aik * b[k*n+j]
			}
		}
		if (i+1)%max(1, n/4) == 0 || i == n-1 {
			fmt.Printf("progress %d/%d rows\n", i+1, n)
		}
	}
	h := fnv.New64a()
	var trace float64
	for i, v := range c {
		bits := math.Float64bits(v)
		h.Write([]byte{byte(bits), byte(bits >> 8), byte(bits >> 16), byte(bits >> 24),
			byte(bits >> 32), byte(bits >> 40), byte(bits >> 48), byte(bits >> 56)})
		if i/n == i%n {
			trace += v
		}
	}
	res := result{N: n, Trace: trace, Checksum: fmt.Sprintf("%016x", h.Sum64()), FLOPs: 2 * int64(n) * int64(n) * int64(n)}
	out, _ := json.MarshalIndent(res, "", "  ")
	if err := os.WriteFile("/out/result.json", append(out, '\n'), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
	fmt.Printf("done: n=%d trace=%g checksum=%s\n", n, trace, res.Checksum)
}

// fill returns a deterministic matrix with entries in [-1, 1).
func fill(n int, seed uint64) []float64 {
	m := make([]float64, n*n)
	x := seed*0x9E3779B97F4A7C15 + 1
	for i := range m {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		m[i] = float64(x>>11)/float64(1<<53)*2 - 1
	}
	return m
}
