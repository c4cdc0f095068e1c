package node

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/idlegrid/idlegrid/node/executor"
)

// workDir is where a node keeps executor state, artifacts and results:
// the home, or a temporary directory the node removes on Close.
func workDir(cfg Config, deps Deps) (dir string, cleanup func() error, err error) {
	switch {
	case deps.WorkDir != "":
		return deps.WorkDir, func() error { return nil }, nil
	case cfg.Home != "":
		return cfg.Home, func() error { return nil }, nil
	}
	dir, err = os.MkdirTemp("", "idlegrid-node-")
	if err != nil {
		return "", nil, err
	}
	return dir, func() error { return os.RemoveAll(dir) }, nil
}

// openArtifacts opens the node's artifact store (modules a renter serves
// to its providers, modules a provider fetched).
func openArtifacts(dir string) (*executor.DirArtifacts, error) {
	a, err := executor.NewDirArtifacts(filepath.Join(dir, "artifacts"))
	if err != nil {
		return nil, fmt.Errorf("open artifact store: %w", err)
	}
	return a, nil
}
