package renter

import (
	"context"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node/executor"
	"github.com/idlegrid/idlegrid/node/jobproto"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/store"
)

// jobServer answers the job protocol's requests a renter serves: a
// lease's spec and the artifacts its job names, to the lease's provider
// only.
type jobServer struct {
	db        *store.DB
	artifacts *executor.DirArtifacts
	// inflight are the awards sent and not yet countersigned: their
	// providers may ask before the lease is stored.
	inflight *inflightAwards
}

// serveJob answers a provider preparing one of this renter's leases: the
// job spec, and the artifacts (WASM modules) the job names. Only the
// lease's provider is served, and only what its job names.
func (s *jobServer) serveJob(ctx context.Context, from peer.ID, req *jobproto.Request, send func([]byte) error) error {
	jobID, ok := s.leaseJob(req.Lease, from)
	if !ok {
		return lease.Refuse(send, jobproto.CodeNotFound, "no lease %s with provider %s", req.Lease, from)
	}
	j, err := s.db.GetJob(jobID)
	if err != nil {
		return lease.Refuse(send, jobproto.CodeNotFound, "job %s: %v", jobID, err)
	}
	switch req.Op {
	case jobproto.OpSpec:
		return lease.SendHeader(send, &jobproto.Header{Spec: j.Spec})
	case jobproto.OpArtifact:
		spec, err := auction.ParseJobSpec(j.Spec)
		if err != nil {
			return lease.Refuse(send, jobproto.CodeInternal, "stored spec: %v", err)
		}
		if spec.Module != req.CID {
			return lease.Refuse(send, jobproto.CodeForbidden, "job %s does not name artifact %s", jobID, req.CID)
		}
		rc, err := s.artifacts.Get(ctx, req.CID)
		if err != nil {
			return lease.Refuse(send, jobproto.CodeNotFound, "artifact %s: %v (add it with `idlegrid artifact add`)", req.CID, err)
		}
		defer rc.Close()
		if err := lease.SendHeader(send, &jobproto.Header{CID: req.CID}); err != nil {
			return err
		}
		return lease.SendData(ctx, send, rc)
	}
	return lease.Refuse(send, jobproto.CodeInvalid, "op %q is not served by a renter", req.Op)
}

// leaseJob returns the job of a lease held with provider p, whether the
// lease is stored or its award is still in flight. In-flight awards are
// looked at first: an award leaves them only after its lease is stored,
// so the other order could miss both.
func (s *jobServer) leaseJob(leaseID string, p peer.ID) (string, bool) {
	in, ok := s.inflight.get(leaseID)
	if ok {
		return in.jobID, in.provider == p.String()
	}
	if l, err := s.db.GetLease(leaseID); err == nil {
		return l.RenterJobID(), l.Side == lease.SideRenter && l.Provider == p.String()
	}
	return "", false
}
