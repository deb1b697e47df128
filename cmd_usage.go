package main

import (
	"github.com/spf13/cobra"

	"github.com/chronos-gpu/chronos/core/report"
	"github.com/chronos-gpu/chronos/core/view"
)

// usageCmd is `chronos usage`: per user, the GPU-hours held, what is held
// now, what the quotas leave, and the fair-share factor that orders the
// waiting line.
func usageCmd(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "usage",
		Short: "Per user: GPU-hours booked, used and idle (7 and 30 days), held now, quota left, fair share",
		Long: `Show, for everyone who booked in the last 30 days or waits in line: GPU-equivalents held now and booked ahead, what the user-gpus and
user-hours quotas leave, and the fair-share factor that orders the line: 1 for
no recent use, 0.5 at an equal share of the machine, lower above it (usage
decays with the policy's half-life).

Then the GPU-hours of the last 7 and 30 days, as chronos report counts them:
BOOKED, share-weighted GPU-hours held (50% of a GPU for an hour is 0.5; a
booking released early, the time held); USED, what the bookings' processes
used as monitors measured it; IDLE, share-weighted GPU-hours held while the
booking did no GPU work; UNBOOKED, GPU time used with no booking (by whole
days).`,
		Args: args(noArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			users, err := report.Usage(c)
			if err != nil {
				return err
			}
			if asJSON {
				if users == nil {
					users = []report.UserUsage{}
				}
				return view.PrintJSON(cmd.OutOrStdout(), users)
			}
			return view.WriteUsage(cmd.OutOrStdout(), users)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
