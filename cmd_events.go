package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/core/view"
)

//nolint:funlen // the command: its flags and the filters they make, in the order the help lists them
func eventsCmd(g *globals) *cobra.Command {
	var asJSON bool
	var last int
	var booking, since, kinds string
	var f core.EventFilter
	cmd := &cobra.Command{
		Use:   "events",
		Short: "Show the audit trail (who created, extended, released; what expired)",
		Long: `Show the audit trail, newest last: who created, extended and released
bookings, what expired, what monitors signalled.

--booking ID keeps the events about one booking; --user NAME those about one
user (what they did, their processes, their bookings); --kind expired,reclaimed
those of some kinds; --since 1h those of the last hour. -n limits the output
to the newest N (50; 0 for all), and says when it left older ones out.`,
		Example: "  chronos events --booking 7\n  chronos events --user alice --since 1d -n 0\n  chronos events --kind reclaimed,expired",
		Args:    args(noArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if booking != "" {
				var err error
				if f.Booking, err = human.ParseID(booking); err != nil {
					return err
				}
			}
			if cmd.Flags().Changed("kind") {
				var err error
				if f.Kinds, err = core.ParseEventKinds(kinds); err != nil {
					return err
				}
			}
			c, err := g.client()
			if err != nil {
				return err
			}
			if since != "" {
				d, err := human.ParseDuration(since)
				if err != nil {
					return err
				}
				f.Since = c.Now().Add(-d)
			}
			limit := last
			if last > 0 {
				limit++ // one more than asked, to tell whether -n left older ones out
			}
			evs, err := c.FindEvents(f, limit)
			if err != nil {
				return err
			}
			hidden := last > 0 && len(evs) > last
			if hidden {
				evs = evs[1:]
			}
			if asJSON {
				return view.PrintJSON(cmd.OutOrStdout(), view.Events(evs))
			}
			if len(evs) == 0 {
				if f.Booking == 0 && f.User == "" && f.Since.IsZero() && len(f.Kinds) == 0 {
					fmt.Fprintf(cmd.OutOrStdout(), "No events yet in %s: creating, extending or releasing a booking records one.\n", c.Ledger())
				} else {
					fmt.Fprintln(cmd.OutOrStdout(), "No events match.")
				}
				return nil
			}
			if err := view.WriteBuffered(cmd.OutOrStdout(), func(w io.Writer) error {
				view.WriteEvents(w, evs, "")
				return nil
			}); err != nil {
				return err
			}
			if hidden {
				cmd.PrintErrf("(the newest %d; older events are left out: -n 0 shows them all, --since narrows by time)\n", last)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().IntVarP(&last, "last", "n", 50, "show only the newest N (0: all)")
	cmd.Flags().StringVar(&booking, "booking", "", "only events about booking ID")
	cmd.Flags().StringVar(&f.User, "user", "", "only events about NAME (a login name or uid): theirs, their processes', their bookings'")
	cmd.Flags().StringVar(&since, "since", "", "only events of the last DURATION, e.g. 1h or 2d")
	cmd.Flags().StringVar(&kinds, "kind", "", "only events of these kinds, comma-separated: created, expired, reclaimed, …")
	return cmd
}
