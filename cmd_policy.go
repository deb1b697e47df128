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
                                 or also refuse what is not physically free
  reclaim=off|always             release bookings idle for idle= (off until root turns it on;
                                 when-waiting, only when someone waits, needs the waiting line)
  idle=2h                        idle time after which a booking is reclaimed
  idle-warn=1h,1h45m             when its owner is warned first (none: never)
  idle-sm=5%                     mean SM activity under which a minute counts as idle
  idle-start=15m                 a booking with no GPU process yet is not idle before this
  hold-max=4h                    longest 'chronos hold'
  notify-url=https://…|off       Slack-compatible webhook that gets every notice`,
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
