package executor

import (
	"errors"
	"testing"
	"time"
)

func TestSpecValidate(t *testing.T) {
	ok := Spec{Runtime: "wasm", Limits: Limits{Network: NetworkEgress, MaxDuration: time.Second}}
	if err := ok.Validate(); err != nil {
		t.Fatalf("Validate(ok) = %v", err)
	}
	cases := []struct {
		name string
		mod  func(*Spec)
	}{
		{"NoRuntime", func(s *Spec) { s.Runtime = "" }},
		{"Network", func(s *Spec) { s.Limits.Network = "host" }},
		{"NegativeMemory", func(s *Spec) { s.Limits.MemoryMiB = -1 }},
		{"NegativeDuration", func(s *Spec) { s.Limits.MaxDuration = -time.Second }},
		{"EnvEquals", func(s *Spec) { s.Env = map[string]string{"A=B": "c"} }},
		{"EnvEmpty", func(s *Spec) { s.Env = map[string]string{"": "c"} }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := ok
			c.mod(&s)
			if err := s.Validate(); !errors.Is(err, ErrInvalidSpec) {
				t.Fatalf("Validate = %v, want ErrInvalidSpec", err)
			}
		})
	}
}
