package cli

import (
	"io"
	"testing"
)

func TestInFlagTerms(t *testing.T) {
	cmd := newJobSubmitCmd(&globals{stdout: io.Discard, stderr: io.Discard})
	if err := cmd.Flags().Parse([]string{"--max-price", "-1", "--gpu", "h100"}); err != nil {
		t.Fatal(err)
	}
	in := "invalid job spec: line 7: max_price: must be more than 0; gpu[0]: bad; duration: required"
	want := "invalid job spec: --max-price: must be more than 0; --gpu[0]: bad; --duration: required"
	unknown := `invalid job spec: line 1: unknown field "duraton" (did you mean "duration"?)`
	if got, want := inFlagTerms(unknown, cmd.Flags(), "job.yaml"), `invalid job spec: unknown field "duraton" (did you mean "duration"?) (in job.yaml)`; got != want {
		t.Errorf("unknown field:\n got %q\nwant %q", got, want)
	}
	if got := inFlagTerms(in, cmd.Flags(), ""); got != want {
		t.Errorf("flags only:\n got %q\nwant %q", got, want)
	}
	want = "invalid job spec: --max-price: must be more than 0; --gpu[0]: bad; duration (in job.yaml): required"
	if got := inFlagTerms(in, cmd.Flags(), "job.yaml"); got != want {
		t.Errorf("file and flags:\n got %q\nwant %q", got, want)
	}
}
