package main

import (
	"github.com/spf13/cobra"

	"github.com/chronos-gpu/chronos/core/setup"
)

// environmentCmd is the help topic `chronos help environment`.
func environmentCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "environment",
		Short: "The environment variables chronos reads, and those chronos run sets",
		Long:  setup.EnvironmentText(),
	}
}
