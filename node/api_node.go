package node

import (
	"net/http"

	"github.com/idlegrid/idlegrid/node/api"
)

var (
	_ api.ArtifactBackend = apiBackend{}
	_ api.ConfigBackend   = apiBackend{}
)

// Artifacts implements api.ArtifactBackend: the modules this renter serves.
func (b apiBackend) Artifacts() ([]api.Artifact, error) {
	if b.n.renter == nil {
		return nil, api.Errorf(http.StatusBadRequest, api.CodeBadRequest, "this node is a %s; artifacts live on the renter node", b.n.cfg.Role)
	}
	list, err := b.n.artifacts.List()
	if err != nil {
		return nil, err
	}
	out := make([]api.Artifact, len(list))
	for i, a := range list {
		out[i] = api.Artifact{CID: a.CID, Bytes: a.Bytes, AddedAt: a.AddedAt.UTC()}
	}
	return out, nil
}

// EffectiveConfig implements api.ConfigBackend: the config the node runs
// with (file, environment and flags, and what reloads applied).
func (b apiBackend) EffectiveConfig() ([]byte, error) {
	b.n.reload.Lock()
	cfg := b.n.fileCfg
	b.n.reload.Unlock()
	return cfg.Encode()
}
