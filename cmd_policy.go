package main

import (
	"github.com/spf13/cobra"

	"github.com/chronos-gpu/chronos/core/view"
)

func policyCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "policy",
		Short: "Show or set the policy: enforcement at expiry and on misuse, idle reclaim, quotas and fair share",
		Long: `Show every policy knob with its value, its default and what it does, then each
user's or group's own settings. The policy decides what monitors do at a
booking's end and on misuse (expiry, overbudget, unbooked, grace, warn), what
admission counts (admit), when idle bookings are reclaimed (reclaim, idle…),
and fair sharing: quotas (user-gpus, user-hours, ahead, max; per user or group
with for=; group-gpus, group-hours for a group's members together), and the waiting line's order (halflife, age-weight, max-age,
share). Root changes it with 'chronos policy set'.`,
		Args: args(noArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			p, err := c.Policy()
			if err != nil {
				return err
			}
			return view.WritePolicy(cmd.OutOrStdout(), p)
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
  reclaim=off|when-waiting|always  release bookings idle for idle= (off until root turns it on;
                                 when-waiting: only when someone waits in line for the GPU)
  idle=2h                        idle time after which a booking is reclaimed
  idle-warn=1h,1h45m             when its owner is warned first (none: never)
  idle-sm=5%                     mean SM activity under which a minute counts as idle
  idle-start=15m                 a booking with no GPU process yet is not idle before this
  hold-max=4h                    longest 'chronos hold'
  notify-url=https://…|off       Slack-compatible webhook that gets every notice, posted by a
                                 monitor running as root; kept in /etc/chronos/notify, not the ledger
  mps-user-dirs=/run/mps-alice   MPS pipe directories where a user's own daemon is trusted for
                                 their bookings (none: only root's daemon)
  user-gpus=1.5|0|none           GPU-equivalents one user may hold at once (50% of a GPU is 0.5;
                                 0: no GPU at all; none: no limit)
  user-hours=200/7d|0|none       share-weighted GPU-hours one user may book in any rolling window
                                 (0: none at all; none: no limit)
  group-gpus=4 for=@GROUP        GPU-equivalents a group's members may hold at once together
                                 (user-gpus for=@GROUP gives each member their own)
  group-hours=500/7d for=@GROUP  share-weighted GPU-hours a group's members may book together
                                 in any rolling window
  ahead=14d                      how far ahead a booking may start (--at)
  halflife=7d                    half-life of the usage that orders the waiting line
  age-weight=1  max-age=1d       priority for time waited: the full weight after max-age
With for=NAME or for=@GROUP the settings apply to that user or group only
(user-gpus, user-hours, ahead, max, and share=N, their fair-share weight, and
exempt=yes, no quotas: root is not exempt unless set); group-gpus and
group-hours only with for=@GROUP. VALUE default undoes one.`,
		Example: "  sudo chronos policy set expiry=terminate overbudget=warn unbooked=warn grace=30s\n" +
			"  sudo chronos policy set user-gpus=1.5 user-hours=200/7d ahead=14d max=2d\n" +
			"  sudo chronos policy set user-gpus=4 for=alice\n  sudo chronos policy set share=2 for=@students\n" +
			"  sudo chronos policy set group-gpus=4 group-hours=500/7d for=@students",
		Args: args(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			p, err := c.SetPolicy(a)
			if err != nil {
				return err
			}
			return view.WritePolicy(cmd.OutOrStdout(), p)
		},
	})
	return cmd
}
