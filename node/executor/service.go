package executor

import "context"

// Endpointer is implemented by executors that run services (Spec.Ports):
// the workload has no outside network, and the daemon reaches its ports
// at the addresses Endpoint returns, on the provider's host only.
type Endpointer interface {
	// Endpoint returns host:port at which the daemon reaches port of the
	// running workload h. It fails with ErrState when h is not running or
	// port is not one of its Spec.Ports.
	Endpoint(ctx context.Context, h Handle, port uint16) (string, error)
}
