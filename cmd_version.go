package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/chronos-gpu/chronos/storage"
)

func versionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  args(noArgs),
		Run: func(cmd *cobra.Command, _ []string) {
			fmt.Fprintf(cmd.OutOrStdout(), "chronos %s (ledger schema %d)\n", version, storage.SchemaVersion)
		},
	}
}
