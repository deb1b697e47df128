package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/chronos-gpu/chronos/core"
)

func releaseCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:     "release ID...",
		Short:   "End bookings now (yours; root: anyone's)",
		Example: "  chronos release 7",
		Args:    args(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			// Release what can be released; report each refusal on its own.
			return eachID(cmd, g, a, func(c *core.Client, id uint64) (string, error) {
				_, err := c.Release(id)
				return fmt.Sprintf("Released %d.", id), err
			})
		},
	}
}
