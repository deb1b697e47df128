package main

import (
	"errors"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/core/report"
	"github.com/chronos-gpu/chronos/core/view"
)

// reportCmd is `chronos report`: GPU use over a window, as Slurm's sreport
// gives it, from the ledger and what monitors measured.
func reportCmd(g *globals) *cobra.Command {
	var since, by string
	var asJSON, asCSV bool
	cmd := &cobra.Command{
		Use:   "report [--since 30d] [--by user|group|gpu] [--json|--csv]",
		Short: "GPU-hours booked, used and idle, per user, group or GPU",
		Long: `Sum GPU use over the last --since (30d; "all" for everything the ledger
holds), one row per user, group or GPU (a user counts in every group they
are in; TOTAL counts each booking once):

  BOOKED     share-weighted GPU-hours held (50% of a GPU for 2h is 1)
  USED       GPU-hours the bookings' processes used, as monitors measured them
             (a whole GPU busy for an hour is 1)
  IDLE       share-weighted GPU-hours held while the booking did no GPU work
  UNBOOKED   GPU-hours used with no booking (counted by whole days; not per GPU)
  BOOKINGS   bookings begun in the window (one made ahead counts where it
             starts); RECLAIMED, released for sitting idle; EXPIRED,
             ended at their deadline rather than released; FORCED, expired
             with processes still running, which were signalled to stop

A booking that began before the window counts the part of its used and idle
time that its time inside the window is of its whole. Usage is measured only
while a monitor runs (chronos --monitor, or an open app).`,
		Example: "  chronos report\n  chronos report --since 7d --by group\n  chronos report --since all --by gpu --csv",
		Args:    args(noArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if asJSON && asCSV {
				return usageError{errors.New("report: --json or --csv, not both")}
			}
			cut, err := report.ParseBy(by)
			if err != nil {
				return err
			}
			window := time.Duration(0)
			if since != "all" {
				if window, err = human.ParseDuration(since); err != nil {
					return err
				}
			}
			c, err := g.client()
			if err != nil {
				return err
			}
			now := c.Now()
			from := time.Time{}
			if window > 0 {
				from = now.Add(-window)
			}
			r, err := report.Read(c, from, cut)
			if err != nil {
				return err
			}
			switch {
			case asJSON:
				return view.PrintJSON(cmd.OutOrStdout(), r)
			case asCSV:
				return view.WriteReportCSV(cmd.OutOrStdout(), r)
			}
			return view.WriteBuffered(cmd.OutOrStdout(), func(w io.Writer) error { return view.WriteReport(w, r, now) })
		},
	}
	cmd.Flags().StringVar(&since, "since", "30d", `how far back: a duration (7d, 12h) or "all"`)
	cmd.Flags().StringVar(&by, "by", string(report.ByUser), "one row per user, group (every group a member is in) or gpu")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().BoolVar(&asCSV, "csv", false, "print CSV, a header line first")
	return cmd
}
