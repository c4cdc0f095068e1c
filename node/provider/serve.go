package provider

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/idlegrid/idlegrid/node/executor"
	"github.com/idlegrid/idlegrid/node/jobproto"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/store"
)

// jobServer serves the job protocol to the renters of this provider's
// leases: status (long-polled), logs (followed), the output tar (from an
// offset, so an interrupted download resumes), cancellation, the lease's
// attestations, vouchers in and the receipt out. Only the lease's renter
// is served.
type jobServer struct {
	jobServerDeps
}

// jobServerDeps are what the job server reads and whom it hands requests
// that change a lease.
type jobServerDeps struct {
	db   *store.DB
	book *lease.Book
	ex   *executors
	// cancel stops a lease's work and waits (bounded) for its recorded
	// end (the lease runner).
	cancel func(ctx context.Context, l *store.Lease) (*store.Lease, error)
	// acceptVoucher records a renter's voucher (the cashier).
	acceptVoucher func(from peer.ID, l *store.Lease, raw []byte) (*store.Lease, error)
	// serveAttest streams the lease's attestations (the attestor).
	serveAttest func(ctx context.Context, l *store.Lease, req *jobproto.Request, send func([]byte) error) error
}

func newJobServer(d jobServerDeps) *jobServer { return &jobServer{jobServerDeps: d} }

// serve answers one request of a renter about one of its leases.
func (s *jobServer) serve(ctx context.Context, from peer.ID, req *jobproto.Request, send func([]byte) error) error {
	l, err := s.db.GetLease(req.Lease)
	if err != nil || l.Side != lease.SideProvider {
		return lease.Refuse(send, jobproto.CodeNotFound, "no lease %s on this provider", req.Lease)
	}
	if l.Renter != from.String() {
		return lease.Refuse(send, jobproto.CodeForbidden, "lease %s belongs to another renter", req.Lease)
	}
	switch req.Op {
	case jobproto.OpStatus:
		wctx, cancel := context.WithTimeout(ctx, time.Duration(req.WaitMs)*time.Millisecond)
		defer cancel()
		if l, err = s.book.Wait(wctx, l.ID, req.After); err != nil {
			return lease.Refuse(send, jobproto.CodeInternal, "read lease: %v", err)
		}
		return lease.SendHeader(send, &jobproto.Header{Status: leaseStatus(l)})
	case jobproto.OpCancel:
		l, err := s.cancel(ctx, l)
		if err != nil {
			return lease.Refuse(send, jobproto.CodeInternal, "cancel: %v", err)
		}
		return lease.SendHeader(send, &jobproto.Header{Status: leaseStatus(l)})
	case jobproto.OpLogs:
		return s.serveLogs(ctx, l, req, send)
	case jobproto.OpResult:
		return s.serveResult(ctx, l, req, send)
	case jobproto.OpAttest:
		return s.serveAttest(ctx, l, req, send)
	case jobproto.OpVoucher:
		l, err := s.acceptVoucher(from, l, req.Voucher)
		if err != nil {
			return lease.Refuse(send, jobproto.CodeInvalid, "voucher: %v", err)
		}
		return lease.SendHeader(send, &jobproto.Header{Status: leaseStatus(l)})
	case jobproto.OpReceipt:
		if len(l.Receipt) == 0 {
			return lease.Refuse(send, jobproto.CodeNotReady, "lease %s has no receipt (yet): it is %s", l.ID, l.State)
		}
		return lease.SendHeader(send, &jobproto.Header{Receipt: l.Receipt})
	}
	return lease.Refuse(send, jobproto.CodeInvalid, "op %q is not served by a provider", req.Op)
}

// leaseStatus is the wire view of a provider's lease.
func leaseStatus(l *store.Lease) *jobproto.Status {
	return &jobproto.Status{
		Version: l.Version, State: l.State, Reason: l.Reason, ExitCode: l.ExitCode,
		StartedMs: l.WorkStartedMs, FinishedMs: l.WorkFinishedMs,
		OutputCID: l.OutputCID, OutputSize: l.OutputSize, LogBytes: l.LogBytes, Health: l.Health,
	}
}

// serveLogs streams a lease's log from req.Offset: from the live workload
// while it runs (following it if asked), from the kept file after.
func (s *jobServer) serveLogs(ctx context.Context, l *store.Lease, req *jobproto.Request, send func([]byte) error) error {
	for l.Handle == "" && !lease.State(l.State).Terminal() && req.Follow {
		// Not started yet: wait for the workload (or the end).
		var err error
		if l, err = s.book.Wait(ctx, l.ID, l.Version); err != nil || ctx.Err() != nil {
			return ctx.Err()
		}
	}
	var rc io.ReadCloser
	switch {
	case l.Handle != "" && !lease.State(l.State).Terminal():
		ex, err := s.ex.get(l.Runtime)
		if err != nil {
			return lease.Refuse(send, jobproto.CodeInternal, "%v", err)
		}
		if rc, err = ex.Logs(ctx, executor.Handle(l.Handle), req.Follow); err != nil {
			// The workload finished and is being removed: its log is being
			// kept, and the lease's end recorded right after.
			if l, err = s.waitEnd(ctx, l); err != nil {
				return lease.Refuse(send, jobproto.CodeInternal, "logs: %v", err)
			}
		}
	}
	if rc == nil {
		if !lease.State(l.State).Terminal() {
			// Nothing ran yet and the caller does not follow.
			return lease.SendHeader(send, &jobproto.Header{})
		}
		f, err := os.Open(s.ex.logPath(l.ID))
		if errors.Is(err, os.ErrNotExist) {
			if l.LogBytes == 0 && l.WorkStartedMs == 0 {
				return lease.SendHeader(send, &jobproto.Header{}) // never ran
			}
			return lease.Refuse(send, jobproto.CodeGone, "the log of lease %s is no longer kept", l.ID)
		}
		if err != nil {
			return lease.Refuse(send, jobproto.CodeInternal, "logs: %v", err)
		}
		rc = f
	}
	defer rc.Close()
	if req.Offset > 0 {
		if _, err := io.CopyN(io.Discard, rc, req.Offset); err != nil && !errors.Is(err, io.EOF) {
			return lease.Refuse(send, jobproto.CodeInternal, "logs: %v", err)
		}
	}
	if err := lease.SendHeader(send, &jobproto.Header{}); err != nil {
		return err
	}
	sent, rerr, err := lease.CopyToFrames(ctx, send, rc)
	if err != nil || rerr == nil || lease.State(l.State).Terminal() {
		return err
	}
	// The live log went away under us (the workload ended and was
	// removed): continue from the kept log where the live one stopped.
	if l, err = s.waitEnd(ctx, l); err != nil {
		return err
	}
	f, err := os.Open(s.ex.logPath(l.ID))
	if err != nil {
		return nil // nothing kept: the stream ends with what was sent
	}
	defer f.Close()
	if _, err := f.Seek(req.Offset+sent, io.SeekStart); err != nil {
		return err
	}
	_, _, err = lease.CopyToFrames(ctx, send, f)
	return err
}

// serveResult streams the output tar of a finished lease from req.Offset.
func (s *jobServer) serveResult(ctx context.Context, l *store.Lease, req *jobproto.Request, send func([]byte) error) error {
	if !lease.State(l.State).Terminal() {
		return lease.Refuse(send, jobproto.CodeNotReady, "lease %s is %s; its outputs exist once it ends", l.ID, l.State)
	}
	if l.OutputCID == "" {
		return lease.Refuse(send, jobproto.CodeNotFound, "lease %s ended (%s) without outputs", l.ID, l.State)
	}
	f, err := os.Open(s.ex.outputPath(l.ID))
	if errors.Is(err, os.ErrNotExist) {
		return lease.Refuse(send, jobproto.CodeGone, "the outputs of lease %s are no longer kept (executor.keep_results)", l.ID)
	}
	if err != nil {
		return lease.Refuse(send, jobproto.CodeInternal, "result: %v", err)
	}
	defer f.Close()
	if req.Offset > l.OutputSize {
		return lease.Refuse(send, jobproto.CodeInvalid, "offset %d past the output's %d bytes", req.Offset, l.OutputSize)
	}
	if _, err := f.Seek(req.Offset, io.SeekStart); err != nil {
		return lease.Refuse(send, jobproto.CodeInternal, "result: %v", err)
	}
	if err := lease.SendHeader(send, &jobproto.Header{Size: l.OutputSize - req.Offset, CID: l.OutputCID}); err != nil {
		return err
	}
	if err := lease.SendData(ctx, send, io.LimitReader(f, l.OutputSize-req.Offset)); err != nil {
		return fmt.Errorf("send result: %w", err)
	}
	return nil
}

// waitEnd waits (bounded) for a lease whose workload is going away to
// record its end.
func (s *jobServer) waitEnd(ctx context.Context, l *store.Lease) (*store.Lease, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for !lease.State(l.State).Terminal() {
		cur, err := s.book.Wait(ctx, l.ID, l.Version)
		if err != nil {
			return nil, err
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("lease %s: workload gone but its end not recorded", lease.Short(l.ID))
		}
		l = cur
	}
	return l, nil
}
