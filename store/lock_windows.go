package store

// tryLockDir is a no-op on Windows: badger's own directory lock there
// (a file opened for exclusive use) makes a held store fail to open, and
// classifyOpenError reports that as ErrLocked.
func tryLockDir(string) error { return nil }
