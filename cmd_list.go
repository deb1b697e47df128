package main

import (
	"fmt"
	"io"
	"slices"

	"github.com/spf13/cobra"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/tui"
)

func listCmd(g *globals) *cobra.Command {
	var all, asJSON bool
	var host string
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List bookings (live ones; --all for history)",
		Args:  args(noArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			return listBookings(cmd.OutOrStdout(), c, all, asJSON, host)
		},
	}
	cmd.Flags().StringVar(&host, "host", "", "only the bookings of this host's GPUs")
	cmd.Flags().BoolVar(&all, "all", false, "include released and expired bookings")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON (fields documented in the README)")
	return cmd
}

func listBookings(w io.Writer, c *core.Client, all, asJSON bool, host string) error {
	parts, err := c.List(all)
	if err != nil {
		return err
	}
	if host != "" {
		parts = slices.DeleteFunc(parts, func(p core.Partition) bool { return c.HostOf(p.Partition) != host })
	}
	pol, err := c.Policy()
	if err != nil {
		return err
	}
	now := c.Now()
	if len(parts) == 0 && !all && !asJSON {
		// Nothing live: say whether there is history to see.
		if ended, err := c.List(true); err == nil && len(ended) > 0 {
			_, err = fmt.Fprintf(w, "No live bookings; %d ended (chronos list --all shows them).\n", len(ended))
			return err
		}
	}
	if asJSON {
		out := make([]core.PartitionJSON, 0, len(parts))
		for _, p := range parts {
			out = append(out, p.JSON(now, pol.WarnLead))
		}
		return printJSON(w, out)
	}
	return writeBuffered(w, func(w io.Writer) error { return tui.WriteBookings(w, parts, now, pol.WarnLead) })
}
