package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/storage"
	"github.com/chronos-gpu/chronos/tui"
)

func eventsCmd(g *globals) *cobra.Command {
	var asJSON bool
	var last int
	cmd := &cobra.Command{
		Use:   "events",
		Short: "Show the audit trail (who created, extended, released; what expired)",
		Args:  args(noArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			read := func() ([]storage.Event, error) { return c.Events(0, 0) }
			if last > 0 {
				read = func() ([]storage.Event, error) { return c.LastEvents(last) }
			}
			evs, err := read()
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), core.EventsJSON(evs))
			}
			if len(evs) == 0 {
				fmt.Fprintf(cmd.OutOrStdout(), "No events yet in %s: creating, extending or releasing a booking records one.\n", c.Ledger())
				return nil
			}
			for _, e := range evs {
				fmt.Fprintf(cmd.OutOrStdout(), "%s  %s\n", e.Time.Local().Format("2006-01-02 15:04:05.000"), tui.Printable(core.FormatEvent(e)))
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().IntVarP(&last, "last", "n", 50, "show only the newest N (0: all)")
	return cmd
}
