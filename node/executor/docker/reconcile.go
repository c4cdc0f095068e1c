package docker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"

	"github.com/idlegrid/idlegrid/node/executor"
)

// Reconcile implements executor.Reattacher. It looks only at containers
// labelled with this executor's Instance, so daemons sharing an engine
// never remove each other's work. Call it before the first Prepare: it
// also removes work directories under Dir that belong to no container of
// this instance, and a Prepare in flight has one of those.
func (e *Executor) Reconcile(ctx context.Context, tracked []executor.Handle) ([]executor.Handle, error) {
	ctx, cancel := e.opCtx(ctx)
	defer cancel()
	missing, err := e.reconcile(ctx, tracked)
	if err != nil {
		return missing, fmt.Errorf("docker.Reconcile: %w", e.closedErr(err))
	}
	return missing, nil
}

func (e *Executor) reconcile(ctx context.Context, tracked []executor.Handle) ([]executor.Handle, error) {
	want := make(map[executor.Handle]bool, len(tracked))
	for _, h := range tracked {
		want[h] = true
	}
	list, err := e.cli.ContainerList(ctx, container.ListOptions{
		All: true,
		Filters: filters.NewArgs(
			filters.Arg("label", labelManaged+"=true"),
			filters.Arg("label", labelInstance+"="+e.cfg.Instance),
		),
	})
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", err)
	}
	var errs []error
	seen := make(map[executor.Handle]bool) // handles with a container of ours
	for _, c := range list {
		if c.Labels[labelInstance] != e.cfg.Instance || len(c.Names) == 0 {
			continue // the filter should have excluded it; be sure
		}
		h := executor.Handle(strings.TrimPrefix(c.Names[0], "/"))
		if !validHandle(string(h)) {
			continue // labelled as ours but not named by us: leave it alone
		}
		seen[h] = true
		if e.workloads.Has(h) {
			continue
		}
		if want[h] {
			if err := e.reattach(ctx, h, c.ID); err != nil {
				errs = append(errs, err)
			}
			continue
		}
		w := newWorkload(h, e.workDir(h))
		w.id = c.ID
		if err := e.destroy(ctx, w); err != nil {
			errs = append(errs, err)
			continue
		}
		e.log.Info("removed untracked container", "handle", h, "job", c.Labels[labelJob],
			"lease", c.Labels[labelLease], "state", c.State)
	}
	var missing []executor.Handle
	for _, h := range tracked {
		if !seen[h] {
			missing = append(missing, h)
		}
	}
	// Work directories without a container: a crash between creating one
	// and creating the container, or a container removed behind our back.
	entries, err := os.ReadDir(e.cfg.Dir)
	if err != nil {
		errs = append(errs, err)
	}
	for _, ent := range entries {
		h := executor.Handle(ent.Name())
		if !validHandle(ent.Name()) || seen[h] || e.workloads.Has(h) {
			continue
		}
		if err := os.RemoveAll(e.workDir(h)); err != nil {
			errs = append(errs, err)
		}
	}
	return missing, errors.Join(errs...)
}

// reattach rebuilds the workload of container id from its labels and work
// directory, registers it and re-arms its deadline if it runs.
func (e *Executor) reattach(ctx context.Context, h executor.Handle, id string) error {
	ins, err := e.cli.ContainerInspect(ctx, id)
	if err != nil {
		return fmt.Errorf("inspect %s: %w", h, err)
	}
	w := newWorkload(h, e.workDir(h))
	w.id = ins.ID
	var labels map[string]string
	if ins.Config != nil {
		labels = ins.Config.Labels
	}
	w.maxDuration = time.Duration(labelInt(labels, labelMaxDuration)) * time.Millisecond
	if w.maxDuration <= 0 {
		w.maxDuration = e.cfg.DefaultMaxDuration
	}
	if w.diskBytes = labelInt(labels, labelDiskBytes); w.diskBytes <= 0 {
		w.diskBytes = e.cfg.DefaultDiskMiB << 20
	}
	if err := e.workloads.Add(h, w); err != nil {
		return err
	}
	st := ins.State
	if st == nil {
		st = &container.State{}
	}
	switch st.Status {
	case container.StateCreated, container.StateExited, container.StateDead:
	default:
		// The deadline runs from the engine's start time: the time the
		// daemon was down counts against the workload, as it ran.
		started := parseTime(st.StartedAt)
		if started.IsZero() {
			started = time.Now()
		}
		e.arm(w, started.Add(w.maxDuration))
	}
	e.log.Info("reattached", "handle", h, "state", st.Status, "job", labels[labelJob], "lease", labels[labelLease])
	return nil
}
