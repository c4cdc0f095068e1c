//go:build !linux

package store

import "os"

// allocate sizes f; off Linux (renters on macOS and Windows) the file may
// stay sparse, so the ballast reserves less than on a provider's Linux
// host. The low-space gate still refuses writes before the disk is full.
func allocate(f *os.File, size int64) error { return f.Truncate(size) }

// reserveBlocks is a no-op off Linux (no fallocate with KEEP_SIZE).
func reserveBlocks(*os.File, int64) error { return nil }
