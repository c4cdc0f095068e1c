package executor

import "context"

// Reattacher is implemented by executors whose workloads outlive the daemon
// (containers). The node persists every Handle it holds with its lease; on
// start it hands them back so that running work is neither lost nor
// duplicated, and work nobody remembers is not left consuming the machine.
type Reattacher interface {
	// Reconcile runs once when the daemon starts, with the handles its store
	// still tracks. It reattaches every tracked workload it finds (Wait,
	// Logs, Stop, Outputs, Remove work on it again, and its max-duration
	// deadline is enforced again), removes every workload of this executor
	// that nobody tracks (and its files), and returns the tracked handles it
	// did not find.
	Reconcile(ctx context.Context, tracked []Handle) (missing []Handle, err error)
}
