// Command prog is the docker executor's test workload, built static and
// packed FROM scratch by the tests. argv[1] picks what it does: the
// conformance suite's programs, and probes of the container's hardening.
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fail("usage: prog hello|exit N|hang|echo|probe|oom MiB|trap")
	}
	switch os.Args[1] {
	case "hello":
		fmt.Println("hello from idlegrid")
		check(os.WriteFile("/out/hello.txt", []byte("hello\n"), 0o644))
	case "exit":
		n, err := strconv.Atoi(os.Args[2])
		check(err)
		os.Exit(n)
	case "hang":
		fmt.Println("hanging")
		for { // not select{}: with nothing else to run, Go calls that a deadlock
			time.Sleep(time.Hour)
		}
	case "echo":
		_, err := io.Copy(os.Stdout, os.Stdin)
		check(err)
		fmt.Println(os.Getenv("IDLEGRID_TEST"))
	case "probe":
		probe()
	case "oom":
		n, err := strconv.Atoi(os.Args[2])
		check(err)
		oom(n)
	case "trap":
		trap()
	default:
		fail("unknown program " + os.Args[1])
	}
}

// Probe is what probe reports, one JSON line on stdout.
type Probe struct {
	UID, GID   int
	Dial       string // error dialing out, "" if it connected
	WriteRoot  string // error writing to /, "" if it could
	WriteTmp   string
	WriteOut   string
	Chown      string // error chowning a file in /tmp to another user
	CapEff     string
	CapBnd     string
	NoNewPrivs string
	Ifaces     []string // network interfaces
}

func probe() {
	p := Probe{UID: os.Getuid(), GID: os.Getgid()}
	c, err := net.DialTimeout("tcp", "1.1.1.1:80", 3*time.Second)
	if err == nil {
		c.Close()
	}
	p.Dial = errString(err)
	ifaces, err := net.Interfaces()
	check(err)
	for _, i := range ifaces {
		p.Ifaces = append(p.Ifaces, i.Name)
	}
	p.WriteRoot = errString(os.WriteFile("/probe", []byte("x"), 0o644))
	p.WriteTmp = errString(os.WriteFile("/tmp/probe", []byte("x"), 0o644))
	p.WriteOut = errString(os.WriteFile("/out/probe", []byte("x"), 0o644))
	p.Chown = errString(os.Chown("/tmp/probe", 1234, 1234))
	status, err := os.ReadFile("/proc/self/status")
	check(err)
	for line := range strings.Lines(string(status)) {
		k, v, _ := strings.Cut(line, ":")
		v = strings.TrimSpace(v)
		switch k {
		case "CapEff":
			p.CapEff = v
		case "CapBnd":
			p.CapBnd = v
		case "NoNewPrivs":
			p.NoNewPrivs = v
		}
	}
	b, err := json.Marshal(p)
	check(err)
	fmt.Printf("PROBE %s\n", b)
}

// oom allocates and touches n MiB, holding on to all of it.
func oom(n int) {
	var keep [][]byte
	for i := range n {
		b := make([]byte, 1<<20)
		for j := 0; j < len(b); j += 4096 {
			b[j] = byte(i)
		}
		keep = append(keep, b)
	}
	fmt.Println("allocated", len(keep), "MiB")
}

// trap waits for SIGTERM, then saves a checkpoint to /out and exits, as a
// preemptible workload would.
func trap() {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM)
	fmt.Println("ready")
	<-sig
	check(os.WriteFile("/out/checkpoint.txt", []byte("step 42\n"), 0o644))
	fmt.Println("checkpointed")
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func check(err error) {
	if err != nil {
		fail(err.Error())
	}
}

func fail(msg string) {
	fmt.Fprintln(os.Stderr, msg)
	os.Exit(1)
}
