package auction

import "strings"

// A replicated batch job's verifier (`verifier:`): a program the renter
// runs on two replicas' outputs when their bytes differ, to judge whether
// they are equivalent anyway (numbers within a tolerance, an unordered
// listing). It is a WASM module the renter holds (a CID) or a container
// image pinned by digest (REF@sha256:<64 hex>) the renter's Docker engine
// runs. Like `replicas`, it is the renter's business: it is not in the
// canonical spec, so naming a verifier changes neither the spec CID nor
// what providers run.

// resolveVerifier checks `verifier`: a module CID or an image pinned by
// digest, on a batch job with replicas to compare. It adds nothing to the
// canonical spec.
func (s *JobSpec) resolveVerifier(sp *specProblems) {
	if s.Verifier == "" {
		return
	}
	if strings.Contains(s.Verifier, "@") || strings.Contains(s.Verifier, "/") || strings.Contains(s.Verifier, ":") {
		if err := checkImageDigestRef(s.Verifier); err != nil {
			sp.add("verifier", "%v (a verifier image runs on this renter's Docker engine)", err)
		}
	} else if _, err := jobCanonicalCID(s.Verifier); err != nil {
		sp.add("verifier", "%v (the CID of a WASM module this renter holds: `idlegrid artifact add FILE` prints it, or an image REF@sha256:<64 hex>)", err)
	}
	switch {
	case strings.EqualFold(s.Kind, KindService):
		sp.add("verifier", "judges a batch job's replica outputs; a service's replicas are not compared")
	case s.ReplicaCount() < 2:
		sp.add("verifier", "judges the outputs of replicas that differ; set replicas: 2 or more")
	}
}

// VerifierModule is the verifier's module CID in canonical form (how
// artifacts are stored), or "" when the spec names none, names an image,
// or it does not parse (Validate reports that).
func (s *JobSpec) VerifierModule() string {
	if s.Verifier == "" || s.VerifierImage() != "" {
		return ""
	}
	m, err := jobCanonicalCID(s.Verifier)
	if err != nil {
		return ""
	}
	return m
}

// VerifierImage is the verifier's image reference (REF@sha256:<64 hex>),
// or "" when the spec names none, names a module, or the reference is not
// pinned by digest.
func (s *JobSpec) VerifierImage() string {
	if s.Verifier == "" || checkImageDigestRef(s.Verifier) != nil {
		return ""
	}
	return s.Verifier
}
