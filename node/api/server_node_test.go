package api_test

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/idlegrid/idlegrid/node/api"
)

// nodeFake lists artifacts and shows its config.
type nodeFake struct{ *fakeBackend }

var added = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

func (nodeFake) Artifacts() ([]api.Artifact, error) {
	return []api.Artifact{{CID: "bafkreiexample", Bytes: 2708, AddedAt: added}}, nil
}

func (nodeFake) EffectiveConfig() ([]byte, error) { return []byte("role = \"renter\"\n"), nil }

func TestArtifactAndConfigRoutes(t *testing.T) {
	c := serveBackend(t, nodeFake{&fakeBackend{}})
	ctx := t.Context()
	list, err := c.Artifacts(ctx)
	if err != nil || len(list) != 1 || list[0].Bytes != 2708 || !list[0].AddedAt.Equal(added) {
		t.Errorf("artifacts: %+v %v", list, err)
	}
	if cfg, err := c.Config(ctx); err != nil || string(cfg) != "role = \"renter\"\n" {
		t.Errorf("config: %q %v", cfg, err)
	}
	// A backend without them answers 404.
	plain := serveBackend(t, &fakeBackend{})
	var ae *api.Error
	if _, err := plain.Artifacts(ctx); !errors.As(err, &ae) || ae.Status != http.StatusNotFound {
		t.Errorf("plain artifacts: %v", err)
	}
	if _, err := plain.Config(ctx); !errors.As(err, &ae) || ae.Status != http.StatusNotFound {
		t.Errorf("plain config: %v", err)
	}
}
