package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// selfCommand is how a user in another terminal runs this very binary:
// "idlegrid" when that is what PATH finds, else the binary's full path.
// Under `go run` the binary lives in a temporary build directory, so a
// bare "idlegrid" would be "command not found" (or another version).
func selfCommand() (cmd string, goRun bool) {
	self, err := os.Executable()
	if err != nil {
		return "idlegrid", false
	}
	if r, err := filepath.EvalSymlinks(self); err == nil {
		self = r
	}
	goRun = strings.Contains(self, string(filepath.Separator)+"go-build")
	if onPath, err := exec.LookPath("idlegrid"); err == nil {
		if r, err := filepath.EvalSymlinks(onPath); err == nil && r == self {
			return "idlegrid", goRun
		}
	}
	return self, goRun
}
