package node

import (
	"errors"
	"fmt"
	"strings"
	"syscall"

	"github.com/idlegrid/idlegrid/store"
)

// startError is a failure of New that the user can fix, said in their
// terms; the cause stays wrapped for errors.Is.
type startError struct {
	msg string
	err error
}

func (e *startError) Error() string { return e.msg }
func (e *startError) Unwrap() error { return e.err }

// storeError explains a store that does not open.
func storeError(home string, err error) error {
	if errors.Is(err, store.ErrLocked) {
		return &startError{err: err, msg: fmt.Sprintf("home %s is in use by another idlegrid daemon or devnet: stop that one first, or give this one its own --home", home)}
	}
	return fmt.Errorf("node.New: %w", err)
}

// listenError explains a listen address that is taken; what names the
// setting ("p2p.listen (--listen)", "api.listen (--api-listen)").
func listenError(what, addr string, err error) error {
	if errors.Is(err, syscall.EADDRINUSE) || strings.Contains(err.Error(), "address already in use") {
		return &startError{err: err, msg: fmt.Sprintf("%s is in use by another program (another idlegrid daemon?): stop it, or set %s to a free port (port 0 picks one)", addr, what)}
	}
	return fmt.Errorf("node.New: %w", err)
}
