// Command jobprog is the workload of the Docker end-to-end tests
// (e2e_docker_test.go). It is built static and packed FROM scratch, so it
// needs nothing but the kernel; its mode is chosen by argv:
//
//	jobprog write N      writes N deterministic bytes to /out/data.bin and a
//	                     summary to /out/summary.txt, printing progress
//	jobprog sleep SECS   prints "sleeping", sleeps, then writes /out/done.txt
//	jobprog serve PORT   serves HTTP on PORT (serve.go), for service jobs
package main

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

const outDir = "/out"

// Pattern is byte i of data.bin; the test computes the same bytes.
func Pattern(i int) byte { return byte(i*7 + i/251) }

func main() {
	if len(os.Args) != 3 {
		fail("usage: jobprog write N | jobprog sleep SECONDS")
	}
	n, err := strconv.Atoi(os.Args[2])
	if err != nil || n < 0 {
		fail("bad number %q", os.Args[2])
	}
	switch os.Args[1] {
	case "write":
		write(n)
	case "sleep":
		sleep(n)
	case "serve":
		serve(n)
	default:
		fail("unknown mode %q", os.Args[1])
	}
}

func write(n int) {
	data := make([]byte, n)
	for i := range data {
		data[i] = Pattern(i)
	}
	f, err := os.Create(filepath.Join(outDir, "data.bin"))
	if err != nil {
		fail("%v", err)
	}
	const parts = 4
	for p := range parts {
		lo, hi := n*p/parts, n*(p+1)/parts
		if _, err := f.Write(data[lo:hi]); err != nil {
			fail("%v", err)
		}
		fmt.Printf("progress %d/%d: %d bytes\n", p+1, parts, hi)
	}
	if err := f.Close(); err != nil {
		fail("%v", err)
	}
	sum := fmt.Sprintf("bytes=%d sha256=%x\n", n, sha256.Sum256(data))
	if err := os.WriteFile(filepath.Join(outDir, "summary.txt"), []byte(sum), 0o644); err != nil {
		fail("%v", err)
	}
	fmt.Print("wrote ", sum)
}

func sleep(secs int) {
	fmt.Println("sleeping")
	// Short sleeps in a loop: a goroutine blocked forever (select{}) would
	// be reported as a deadlock by the runtime.
	end := time.Now().Add(time.Duration(secs) * time.Second)
	for time.Now().Before(end) {
		time.Sleep(100 * time.Millisecond)
	}
	if err := os.WriteFile(filepath.Join(outDir, "done.txt"), []byte("done\n"), 0o644); err != nil {
		fail("%v", err)
	}
	fmt.Println("done")
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "jobprog: "+format+"\n", args...)
	os.Exit(1)
}
