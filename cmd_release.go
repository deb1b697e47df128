package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/tui"
)

func releaseCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:     "release ID...",
		Short:   "End bookings now (yours; root: anyone's)",
		Example: "  chronos release 7",
		Args:    args(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			ids := make([]uint64, 0, len(a))
			for _, s := range a {
				id, err := core.ParseID(s)
				if err != nil {
					return err
				}
				ids = append(ids, id)
			}
			c, err := g.client()
			if err != nil {
				return err
			}
			// Release what can be released; report each refusal on its own.
			status := 0
			for _, id := range ids {
				if _, err := c.Release(id); err != nil {
					fmt.Fprintln(cmd.ErrOrStderr(), "chronos:", tui.Printable(err.Error()))
					status = exitError
					continue
				}
				fmt.Fprintf(cmd.OutOrStdout(), "Released %d.\n", id)
			}
			if status != 0 {
				return exitStatus{code: status}
			}
			return nil
		},
	}
}
