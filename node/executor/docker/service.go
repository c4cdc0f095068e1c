package docker

import (
	"context"
	"fmt"
	"net"
	"strconv"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/go-connections/nat"

	"github.com/idlegrid/idlegrid/node/executor"
)

var _ executor.Endpointer = (*Executor)(nil)

// serviceNetwork returns the executor's internal network for services,
// creating it the first time. Internal: the engine gives it no gateway
// out, so a service cannot reach the network, while the host (the
// daemon) reaches each container at its address on the bridge.
func (e *Executor) serviceNetwork(ctx context.Context) (string, error) {
	name := "idlegrid-svc-" + e.cfg.Instance
	if _, err := e.cli.NetworkInspect(ctx, name, network.InspectOptions{}); err == nil {
		return name, nil
	}
	_, err := e.cli.NetworkCreate(ctx, name, network.CreateOptions{
		Driver: "bridge", Internal: true,
		Labels: map[string]string{labelManaged: "true", labelInstance: e.cfg.Instance},
	})
	if err != nil && !cerrdefs.IsConflict(err) {
		return "", fmt.Errorf("create service network %s: %w", name, err)
	}
	return name, nil
}

// Endpoint implements executor.Endpointer: the container's address on
// its internal network, and port if the spec exposed it.
func (e *Executor) Endpoint(ctx context.Context, h executor.Handle, port uint16) (string, error) {
	w, err := e.workloads.Get(h)
	if err != nil {
		return "", fmt.Errorf("docker.Endpoint: %w", err)
	}
	ins, err := e.cli.ContainerInspect(ctx, w.id)
	if err != nil {
		return "", fmt.Errorf("docker.Endpoint: inspect %s: %w", h, e.closedErr(err))
	}
	if ins.State == nil || !ins.State.Running {
		return "", fmt.Errorf("docker.Endpoint: %w: %s is not running", executor.ErrState, h)
	}
	if _, ok := ins.Config.ExposedPorts[nat.Port(strconv.Itoa(int(port))+"/tcp")]; !ok {
		return "", fmt.Errorf("docker.Endpoint: %w: port %d is not a service port of %s", executor.ErrState, port, h)
	}
	if ins.NetworkSettings != nil {
		for _, n := range ins.NetworkSettings.Networks {
			if n != nil && n.IPAddress != "" {
				return net.JoinHostPort(n.IPAddress, strconv.Itoa(int(port))), nil
			}
		}
	}
	return "", fmt.Errorf("docker.Endpoint: %w: %s has no network address", executor.ErrState, h)
}
