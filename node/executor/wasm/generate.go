package wasm

// The devnet's demo workload; see demo/main.go. The output is not committed.
//go:generate env GOOS=wasip1 GOARCH=wasm go build -trimpath -o demo/demo.wasm ./demo
