//go:build wasip1

// Command testprog is the wasm executor's test workload. Build it with
// GOOS=wasip1 GOARCH=wasm; the tests do so once per run. argv[1] picks the
// behaviour.
package main

import (
	"crypto/rand"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"
)

var sink [][]byte

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: testprog MODE [ARG...]")
		os.Exit(64)
	}
	switch mode, args := os.Args[1], os.Args[2:]; mode {
	case "hello":
		fmt.Println("hello from idlegrid")
		if err := os.WriteFile("/out/hello.txt", []byte("hello\n"), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		if err := os.MkdirAll("/out/sub/dir", 0o755); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.WriteFile("/out/sub/dir/data.bin", []byte{0, 1, 2, 3}, 0o644)
	case "exit":
		n, _ := strconv.Atoi(args[0])
		os.Exit(n)
	case "hang":
		fmt.Println("hanging")
		spin()
	case "sleep":
		// Blocks in poll_oneoff, a host call, rather than spinning.
		fmt.Println("sleeping")
		time.Sleep(time.Hour)
	case "echo":
		io.Copy(os.Stdout, os.Stdin)
		fmt.Println(os.Getenv("IDLEGRID_TEST"))
		for i, a := range os.Args {
			fmt.Printf("arg%d=%s\n", i, a)
		}
	case "panic":
		panic("testprog panics")
	case "alloc":
		// Allocate MiB in 1 MiB chunks, touching each so none is elided.
		n, _ := strconv.Atoi(args[0])
		for i := range n {
			b := make([]byte, 1<<20)
			b[i%len(b)] = 1
			sink = append(sink, b)
		}
		fmt.Println("allocated", n, "MiB")
	case "entropy":
		// Write what the host's clocks and randomness gave.
		buf := make([]byte, 16)
		_, _ = rand.Read(buf)
		t0 := time.Now()
		if err := os.WriteFile("/out/entropy.txt", fmt.Appendf(nil, "%d %x %d\n", t0.UnixNano(), buf, time.Since(t0)), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	case "write":
		// Write MiB to /out/big in 64 KiB chunks.
		n, _ := strconv.Atoi(args[0])
		f, err := os.Create("/out/big")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		chunk := make([]byte, 64<<10)
		for range n * 16 {
			if _, err := f.Write(chunk); err != nil {
				fmt.Fprintln(os.Stderr, "write:", err)
				os.Exit(3)
			}
		}
		f.Close()
	case "mounted":
		// Copy /in/x.txt to /out; writing to /in must fail (read-only).
		data, err := os.ReadFile("/in/x.txt")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		if err := os.WriteFile("/out/copy.txt", data, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		if err := os.WriteFile("/in/y.txt", data, 0o644); err == nil {
			fmt.Println("wrote to a read-only mount")
			os.Exit(2)
		}
	case "escape":
		// Each of these must fail: the guest sees /out and nothing else.
		code := 0
		for _, p := range []string{"/etc/passwd", "/out/../../../../etc/passwd", "../etc/passwd"} {
			if _, err := os.ReadFile(p); err == nil {
				fmt.Println("read", p)
				code = 1
			}
		}
		if err := os.Symlink("/etc", "/out/etc"); err == nil {
			fmt.Println("symlinked /etc")
			code = 1
		}
		os.Exit(code)
	default:
		fmt.Fprintln(os.Stderr, "unknown mode", mode)
		os.Exit(64)
	}
}

//go:noinline
func spin() {
	x := 0
	for {
		x++
	}
}
