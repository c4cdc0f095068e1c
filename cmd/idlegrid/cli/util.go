package cli

import (
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/spf13/cobra"
)

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}

// quietFlag adds -q to a list command: only the IDs, one a line, for
// scripts (JOB=$(idlegrid job ls -q | head -1)).
func quietFlag(cmd *cobra.Command, quiet *bool, what string) {
	cmd.Flags().BoolVarP(quiet, "quiet", "q", false, "print only the "+what+", one a line")
}

// printIDs writes one ID a line.
func printIDs[T any](w io.Writer, items []T, id func(T) string) error {
	for _, it := range items {
		if _, err := fmt.Fprintln(w, id(it)); err != nil {
			return err
		}
	}
	return nil
}
