package devnet

import (
	"context"
	"fmt"
	"time"

	"github.com/idlegrid/idlegrid/node/executor/docker"
)

// The devnet's model server is a second image around the idlegrid binary:
// its hidden `devnet-model` command serves node/modelstub, an
// OpenAI-compatible server of deterministic tokens that reports usage.
// `idlegrid devnet --model` runs it as a replicated service behind one
// endpoint, so a replicated inference endpoint needs no GPU, weights,
// registry or network (issue 30).

// ModelRepo is the model server image's repository.
const ModelRepo = "idlegrid-devnet/model"

// ModelPort is the container port the model server listens on.
const ModelPort = 8080

var modelImage = selfImage{repo: ModelRepo, label: "model", command: []string{"devnet-model", "--listen", fmt.Sprintf(":%d", ModelPort)}, port: ModelPort}

// BuildModelImage builds (or finds) the model server image from the
// executable exe on the engine that answers (DOCKER_HOST, else the local
// socket) and returns its pinned reference, ModelRepo@sha256:<image ID>.
func BuildModelImage(ctx context.Context, exe string) (string, error) {
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	cli, err := docker.Dial(dctx, "")
	if err != nil {
		return "", err
	}
	defer cli.Close()
	return buildSelfImage(ctx, cli, exe, modelImage)
}

// ModelJob is the spec of the devnet's model service: image on replicas
// distinct providers, health-checked each second, any GPU the devnet
// offers.
func ModelJob(image string, replicas int) []byte {
	return fmt.Appendf(nil, `name: devnet-model
kind: service
image: %s
ports: [%d]
health: http:%d/healthz
health_interval: 1s
replicas: %d
max_price: 3.00
duration: 1h
`, image, ModelPort, ModelPort, replicas)
}
