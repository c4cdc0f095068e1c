package node

import (
	"github.com/idlegrid/idlegrid/node/api"
)

// jobID resolves a job ID as the user typed it (full, a unique prefix or
// suffix, or the CLI's short form) against this node's jobs, so every
// command that takes a job accepts what the CLI prints.
func (b apiBackend) jobID(typed string) (string, error) {
	// A full ID (what scripts and the dashboard send) needs no scan.
	if _, err := b.n.db.GetJob(typed); err == nil {
		return typed, nil
	}
	jobs, err := b.n.db.Jobs()
	if err != nil {
		return "", err
	}
	ids := make([]string, 0, len(jobs))
	for _, j := range jobs {
		ids = append(ids, j.ID)
	}
	return api.ResolveID("job", "idlegrid job ls", typed, ids)
}

// leaseID is jobID for leases. An empty lease stays empty: it means "the
// job's latest lease" wherever a lease is optional.
func (b apiBackend) leaseID(typed string) (string, error) {
	if typed == "" {
		return "", nil
	}
	if _, err := b.n.db.GetLease(typed); err == nil {
		return typed, nil
	}
	leases, err := b.n.db.Leases()
	if err != nil {
		return "", err
	}
	ids := make([]string, 0, len(leases))
	for _, l := range leases {
		ids = append(ids, l.ID)
	}
	return api.ResolveID("lease", "idlegrid leases", typed, ids)
}

// jobAndLease resolves both IDs of a job request.
func (b apiBackend) jobAndLease(job, lease string) (string, string, error) {
	job, err := b.jobID(job)
	if err != nil {
		return "", "", err
	}
	lease, err = b.leaseID(lease)
	return job, lease, err
}
