package provider

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/idlegrid/idlegrid/node/executor"
	"github.com/idlegrid/idlegrid/node/executor/docker"
)

// openDocker opens the Docker runtime. A host without a reachable engine
// does not offer it (errRuntimeUnavailable): the provider still runs, and
// says why at start rather than failing jobs later.
func openDocker(cfg Config, dir, instance string, log *slog.Logger) (executor.Executor, func() error, error) {
	ex, err := docker.New(docker.Config{
		Host: cfg.Executor.DockerHost, Dir: dir, Instance: instance,
		MaxLogBytes: int64(cfg.Executor.MaxLogMiB) << 20,
		AllowRoot:   cfg.Executor.DockerAllowRoot, Pull: cfg.Executor.DockerPull,
	}, log)
	if errors.Is(err, docker.ErrNoEngine) {
		return nil, nil, fmt.Errorf("%w: %w", errRuntimeUnavailable, err)
	}
	if err != nil {
		return nil, nil, err
	}
	return ex, ex.Close, nil
}
