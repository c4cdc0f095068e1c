package attest

import (
	"strings"
	"testing"
)

func (s *segment) completion(t *testing.T) Completion {
	return Completion{Provider: peerOf(t, providerSeed), Lease: leaseL1, Renter: s.lease.Renter, Job: jobCID,
		GPUs: s.lease.GPUs, Output: outCID}
}

func TestVerifyCompletionHonest(t *testing.T) {
	s := honestSegment(t)
	fin, err := VerifyCompletion(s.raws, s.completion(t), s.opts())
	if err != nil {
		t.Fatal(err)
	}
	if fin.Event != JobFinished || fin.Output != outCID {
		t.Fatalf("finished event %+v", fin)
	}
}

func TestVerifyCompletionRefuses(t *testing.T) {
	cases := []struct {
		name string
		// mutate returns the segment and the expectation to check.
		mutate func(t *testing.T, s *segment, want *Completion) [][]byte
		msg    string
	}{
		{"no entries", func(*testing.T, *segment, *Completion) [][]byte { return nil }, "holds no entries"},
		{"fingerprint only", func(_ *testing.T, s *segment, _ *Completion) [][]byte { return s.raws[:1] }, "never ran"},
		{"no end", func(_ *testing.T, s *segment, _ *Completion) [][]byte { return s.raws[:len(s.raws)-1] }, "does not record the lease's end"},
		{"other output", func(_ *testing.T, s *segment, w *Completion) [][]byte { w.Output = fakeID("empty tar"); return s.raws }, "names output"},
		{"other job", func(_ *testing.T, s *segment, w *Completion) [][]byte { w.Job = fakeID("other job"); return s.raws }, "for job spec"},
		{"other provider", func(t *testing.T, s *segment, w *Completion) [][]byte {
			w.Provider = peerOf(t, otherSeed)
			return s.raws
		}, "not the lease's provider"},
		{"exit code", func(t *testing.T, s *segment, _ *Completion) [][]byte {
			s.entries[len(s.entries)-1].Job.ExitCode = 3
			return reseal(t, s.key, s.entries)
		}, "exit code 3"},
		{"failed, not finished", func(t *testing.T, s *segment, _ *Completion) [][]byte {
			s.entries[len(s.entries)-1].Job.Event, s.entries[len(s.entries)-1].Job.Output = JobFailed, ""
			return reseal(t, s.key, s.entries)
		}, "records the lease failed"},
		{"no telemetry", func(t *testing.T, s *segment, _ *Completion) [][]byte {
			es := append([]*Entry{s.entries[0], s.entries[1]}, s.entries[len(s.entries)-1])
			return reseal(t, s.key, es)
		}, `"coverage" check`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := honestSegment(t)
			want := s.completion(t)
			raws := c.mutate(t, s, &want)
			_, err := VerifyCompletion(raws, want, s.opts())
			if err == nil || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("err %v, want one containing %q", err, c.msg)
			}
		})
	}
}

// A run shorter than one allowed gap owes no telemetry window.
func TestVerifyCompletionShortRun(t *testing.T) {
	s := honestSegment(t)
	es := []*Entry{s.entries[0], s.entries[1], s.entries[len(s.entries)-1]}
	es[2].AtMs = es[1].AtMs + 500
	raws := reseal(t, s.key, es)
	if _, err := VerifyCompletion(raws, s.completion(t), s.opts()); err != nil {
		t.Fatal(err)
	}
}
