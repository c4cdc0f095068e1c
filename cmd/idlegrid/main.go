// Command idlegrid is the one binary of the idlegrid GPU market: a
// provider or renter daemon, a bootstrap peer, a local devnet, and the
// client commands that talk to a running daemon.
package main

import (
	"os"

	"github.com/idlegrid/idlegrid/cmd/idlegrid/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr))
}
