package attest

import (
	"errors"
	"strings"
	"testing"
)

// withRun makes the segment's finished event record what ran (entry
// version RunEntryVersion) and returns the segment resealed.
func withRun(t *testing.T, s *segment, artifact string, run RunSettings) [][]byte {
	t.Helper()
	fin := s.entries[len(s.entries)-1]
	fin.V, fin.Job.Artifact, fin.Job.Run = RunEntryVersion, artifact, &run
	return reseal(t, s.key, s.entries)
}

var (
	moduleCID = fakeID("the job's module")
	wasmRun   = RunSettings{Runtime: "wasm", MemoryMiB: 512, Network: "none"}
)

// A finished event that records the module and settings the job asks is
// a completion; one that ran another module, more memory or with network
// is refused, with the difference in words.
func TestVerifyCompletionChecksWhatRan(t *testing.T) {
	wanted := RunWanted{Artifact: moduleCID, Runtime: "wasm", MemoryMiB: 512}
	cases := []struct {
		name     string
		artifact string
		run      RunSettings
		msg      string // "" for a completion
	}{
		{"as asked", moduleCID, wasmRun, ""},
		{"other module", fakeID("another module"), wasmRun, "the job's module is"},
		{"other memory", moduleCID, RunSettings{Runtime: "wasm", MemoryMiB: 4096, Network: "none"}, "4096 MiB memory limit, the job asks 512 MiB"},
		{"network", moduleCID, RunSettings{Runtime: "wasm", MemoryMiB: 512, Network: "egress"}, `network "egress"`},
		{"other runtime", moduleCID, RunSettings{Runtime: "docker", MemoryMiB: 512, Network: "none"}, "runtime docker"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := honestSegment(t)
			raws := withRun(t, s, c.artifact, c.run)
			want := s.completion(t)
			want.Ran = wanted
			fin, err := VerifyCompletion(raws, want, s.opts())
			if c.msg == "" {
				if err != nil || fin.Artifact != moduleCID || *fin.Run != wasmRun {
					t.Fatalf("fin %+v, err %v", fin, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("err %v, want one containing %q", err, c.msg)
			}
		})
	}
}

// A provider whose release records nothing of the run (version 1) is
// still verified by what it does record.
func TestVerifyCompletionWithoutRunRecord(t *testing.T) {
	s := honestSegment(t)
	want := s.completion(t)
	want.Ran = RunWanted{Artifact: moduleCID, Runtime: "wasm"}
	if _, err := VerifyCompletion(s.raws, want, s.opts()); err != nil {
		t.Fatal(err)
	}
}

// Version and body agree: version 2 is for job events recording what ran,
// and version 1 cannot carry it. Chain.Append picks the version.
func TestRunEntryVersion(t *testing.T) {
	s := honestSegment(t)
	fin := s.entries[len(s.entries)-1]
	fin.Job.Artifact, fin.Job.Run = moduleCID, &wasmRun
	if err := fin.Validate(); err == nil || !strings.Contains(err.Error(), "need entry version 2") {
		t.Fatalf("v1 with a run record: %v", err)
	}
	fin.V = RunEntryVersion
	if err := fin.Validate(); err != nil {
		t.Fatal(err)
	}
	fin.Job.Artifact = "sha256:XYZ"
	if err := fin.Validate(); err == nil || !strings.Contains(err.Error(), "job.artifact") {
		t.Fatalf("bad artifact: %v", err)
	}
	fin.Job.Artifact, fin.Job.Run = "", nil
	if err := fin.Validate(); err == nil || !strings.Contains(err.Error(), "version 2 is for job events") {
		t.Fatalf("v2 without a run record: %v", err)
	}
	fin.V = 3
	if err := fin.Validate(); err == nil {
		t.Fatal("v3 validated")
	}

	key := testKey(t, providerSeed)
	c, err := NewChain(key, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Append(1000, s.entries[0].Fingerprint); err != nil {
		t.Fatal(err)
	}
	image := "sha256:" + strings.Repeat("ab", 32)
	raw, e, err := c.Append(2000, &JobEvent{Lease: leaseL1, Renter: s.lease.Renter, Job: jobCID, Event: JobStarted,
		Artifact: image, Run: &RunSettings{Runtime: "docker", CPUMilli: 2000, Network: "none"}})
	if err != nil || e.V != RunEntryVersion {
		t.Fatalf("append: v %d, err %v", e.V, err)
	}
	got, err := OpenEntry(raw)
	if err != nil || got.Job.Artifact != image || got.Job.Run.CPUMilli != 2000 {
		t.Fatalf("open: %+v, %v", got, err)
	}
	_, e, err = c.Append(3000, &JobEvent{Lease: leaseL1, Renter: s.lease.Renter, Job: jobCID, Event: JobCancelled})
	if err != nil || e.V != RecordsVersion {
		t.Fatalf("append without a run record: %+v, %v", e, err)
	}
	// An entry of a version no release defined is another release's, not
	// malformed (docs/protocol.md §5.1).
	later, err := Reseal(raw, key, func(m map[string]any) { m["v"] = uint64(99) })
	if err != nil {
		t.Fatal(err)
	}
	if _, err := OpenEntry(later); !errors.Is(err, ErrOtherVersion) {
		t.Fatalf("v99: %v", err)
	}
}
