package lease

// Health verdicts of a service lease (store.Lease.Health, the job
// protocol's Status.Health); batch leases have none.
const (
	// HealthStarting: no check has passed yet.
	HealthStarting = "starting"
	// HealthHealthy: the last check passed (or the spec has none).
	HealthHealthy = "healthy"
	// HealthUnhealthy: the check failed its threshold of times in a row.
	HealthUnhealthy = "unhealthy"
)
