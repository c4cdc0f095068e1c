package node

import (
	"runtime/debug"
	"strings"
)

// Version is the release version; release builds set it with
// -ldflags "-X github.com/idlegrid/idlegrid/node.Version=v1.2.3".
var Version = "0.1.0-dev"

// FullVersion is Version plus the VCS revision the binary was built from.
// A Version that already carries build metadata ("0.1.0-dev+g1a2b3c4d5e6f",
// as make build and make package set it) is returned as is, so the
// revision is not named twice.
func FullVersion() string {
	if strings.Contains(Version, "+") {
		return Version
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return Version
	}
	rev, dirty := "", false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return Version
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if dirty {
		rev += "-dirty"
	}
	return Version + "+" + rev
}
