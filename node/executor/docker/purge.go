package docker

import (
	"context"
	"errors"
	"fmt"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"
)

// PurgeInstance removes every container of instance (running or not) and
// its service network: what an executor leaves behind on purpose, so that
// a restarted daemon reattaches. For a home that will not come back (a
// devnet's, removed on exit) nothing will.
func PurgeInstance(ctx context.Context, cli *client.Client, instance string) error {
	list, err := cli.ContainerList(ctx, container.ListOptions{All: true,
		Filters: filters.NewArgs(filters.Arg("label", labelInstance+"="+instance))})
	if err != nil {
		return fmt.Errorf("docker.PurgeInstance: %w", err)
	}
	var errs []error
	for _, c := range list {
		if c.Labels[labelInstance] != instance {
			continue
		}
		if err := cli.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true}); err != nil && !cerrdefs.IsNotFound(err) {
			errs = append(errs, err)
		}
	}
	if err := cli.NetworkRemove(ctx, "idlegrid-svc-"+instance); err != nil && !cerrdefs.IsNotFound(err) {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("docker.PurgeInstance: %w", err)
	}
	return nil
}

// Dial connects to the engine at host (empty: $DOCKER_HOST or the local
// socket) and pings it; it fails with ErrNoEngine when none answers.
func Dial(ctx context.Context, host string) (*client.Client, error) {
	opts := []client.Opt{client.WithHostFromEnv(), client.WithAPIVersionNegotiation()}
	if host != "" {
		opts = append(opts, client.WithHost(host))
	}
	cli, err := client.NewClientWithOpts(opts...)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoEngine, err)
	}
	if _, err := cli.Ping(ctx); err != nil {
		cli.Close()
		return nil, fmt.Errorf("%w at %s: %v", ErrNoEngine, cli.DaemonHost(), err)
	}
	return cli, nil
}
