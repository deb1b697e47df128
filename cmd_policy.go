package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/chronos-gpu/chronos/core"
)

func policyCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "policy",
		Short: "Show or set what monitors do at expiry and on misuse",
		Args:  args(noArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			p, err := c.Policy()
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), core.FormatPolicy(p))
			return nil
		},
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "set KEY=VALUE...",
		Short: "Change the policy (root only)",
		Long: `Change the stored policy. Keys:
  expiry=terminate|notify        what happens to a booking's processes at its end
  overbudget=off|warn|terminate  processes using more memory than booked
  unbooked=off|warn|terminate    GPU processes with no booking, on a GPU that has bookings
  grace=30s                      time between SIGTERM and SIGKILL
  warn=5m                        warning lead before a booking ends
  max=7d                         longest booking (and most time left after an extension)
  admit=booked|physical          admit on booked shares only (memory in use is a warning),
                                 or also refuse what is not physically free`,
		Example: "  sudo chronos policy set expiry=terminate overbudget=warn unbooked=warn grace=30s",
		Args:    args(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			p, err := c.SetPolicy(a)
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), core.FormatPolicy(p))
			return nil
		},
	})
	return cmd
}
