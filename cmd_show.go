package main

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/core/view"
)

// showCmd is `chronos show ID`: everything about one booking.
func showCmd(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "show ID",
		Short:   "Everything about one booking: its state, usage, processes and events",
		Example: "  chronos show 7\n  chronos show 7 --json",
		Args:    args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			id, err := human.ParseID(a[0])
			if err != nil {
				return err
			}
			c, err := g.client()
			if err != nil {
				return err
			}
			p, err := c.Get(id)
			if err != nil {
				return err
			}
			if p.Usage, err = c.BookingUsage(id); err != nil {
				return err
			}
			pol, err := c.Policy()
			if err != nil {
				return err
			}
			evs, err := c.FindEvents(core.EventFilter{Booking: id}, 0)
			if err != nil {
				return err
			}
			procs, note := view.BookingProcesses(c, g.backendKind(), id)
			now := c.Now()
			if asJSON {
				return view.PrintJSON(cmd.OutOrStdout(), view.BookingJSON{PartitionJSON: view.Booking(*p, now, pol.WarnLead), Processes: procs, Events: view.Events(evs)})
			}
			return view.WriteBuffered(cmd.OutOrStdout(), func(w io.Writer) error {
				return view.WriteBooking(w, *p, procs, note, evs, now, pol.WarnLead)
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON: the booking as list --json has it, with processes and events")
	return cmd
}
