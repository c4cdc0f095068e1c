package doctor

import (
	"context"
	"fmt"
	"slices"

	"github.com/docker/docker/client"
)

// DockerProbe asks the engine at host (empty: $DOCKER_HOST or the local
// socket) for its version and runtimes.
func DockerProbe(host string) func(ctx context.Context) (DockerInfo, error) {
	return func(ctx context.Context) (DockerInfo, error) {
		opts := []client.Opt{client.WithHostFromEnv(), client.WithAPIVersionNegotiation()}
		if host != "" {
			opts = append(opts, client.WithHost(host))
		}
		cli, err := client.NewClientWithOpts(opts...)
		if err != nil {
			return DockerInfo{}, fmt.Errorf("docker client: %w", err)
		}
		defer cli.Close()
		info, err := cli.Info(ctx)
		if err != nil {
			return DockerInfo{}, fmt.Errorf("docker engine at %s does not answer: %w", cli.DaemonHost(), err)
		}
		out := DockerInfo{Host: cli.DaemonHost(), ServerVersion: info.ServerVersion, CDISpecDirs: info.CDISpecDirs}
		for name := range info.Runtimes {
			out.Runtimes = append(out.Runtimes, name)
		}
		slices.Sort(out.Runtimes)
		return out, nil
	}
}
