package provider

import (
	"fmt"

	"github.com/idlegrid/idlegrid/p2p"
)

// malformed marks err as caused by a request no honest peer sends (it does
// not decode, or its signer is not its sender), so that the p2p layer
// charges the sender for it.
func malformed(err error) error { return fmt.Errorf("%w: %w", p2p.ErrMalformed, err) }
