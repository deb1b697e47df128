package main

import (
	"context"
	"fmt"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/gpu"
	"github.com/chronos-gpu/chronos/tui"
)

func createCmd(g *globals) *cobra.Command {
	var forUser, compute string
	var asJSON bool
	var line lineFlags
	cmd := &cobra.Command{
		Use:   "create GPU MEMORY DURATION",
		Short: "Book a share of a GPU's memory for a while",
		Long: `Book a share of one GPU's memory for a bounded time.

GPU is an index on this host (0), or HOST:INDEX (gpu3:0) for another host's
in a ledger many hosts share; any (or HOST:any) for whichever GPU of the
host has room first.
MEMORY is a fraction (0.5), a percent (50%) or a size (40GiB).
DURATION is seconds (3600) or a duration (90m, 1h30m, 8h, 2d).
--at books ahead; --wait joins the waiting line when it cannot start now.`,
		Example: "  chronos create 0 0.5 3600\n  chronos create 1 40GiB 2h30m\n  chronos create gpu3:0 50% 2h\n  sudo chronos create 0 0.3 8h --user alice\n" +
			"  chronos create 0 50% 2h --wait --timeout 30m\n  chronos create any 50% 2h --wait\n  chronos create 0 50% 3h --at 14:00",
		Args: args(cobra.ExactArgs(3)),
		RunE: func(cmd *cobra.Command, a []string) error {
			req, err := core.ParseRequest(a[0], a[1], a[2], compute)
			if err != nil {
				return err
			}
			req.For = forUser
			if err := line.apply(&req); err != nil {
				return err
			}
			c, err := g.client()
			if err != nil {
				return err
			}
			// SIGINT and SIGTERM end cmd.Context() (see main), and so take a
			// waiting request out of the line; so does a hang-up (the SSH
			// session gone), caught before the request joins the line.
			ctx, wait := cmd.Context(), line.waitOptions()
			if wait != nil {
				var stop context.CancelFunc
				ctx, stop = signalContext(ctx, syscall.SIGHUP)
				defer stop()
			}
			say := func(e core.QueueEntry) { fmt.Fprintln(cmd.ErrOrStderr(), "chronos:", waitingLine(c, e)) }
			p, err := c.BookOrWait(ctx, req, wait, nil, say)
			if err != nil {
				return err
			}
			if w := p.Room.Warning(p.Bytes); w != "" {
				fmt.Fprintln(cmd.ErrOrStderr(), "chronos: warning:", tui.Printable(w))
			}
			if p.ComputePct > 0 {
				if note := c.ComputeCapNote(p.Partition, gpu.DetectMPS("")); note != "" {
					fmt.Fprintln(cmd.ErrOrStderr(), "chronos: note:", note)
				}
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), core.JSON(p.Partition, c.Now(), 0))
			}
			fmt.Fprintln(cmd.OutOrStdout(), bookedLine(c, p))
			if p.Room.FreePPM > 0 { // read when it was booked for now, not from the line or ahead
				fmt.Fprintf(cmd.OutOrStdout(), "GPU %s had %s.\n", tui.Printable(c.GPUName(p.Host, p.Device)), p.Room.Room())
			}
			return nil
		},
	}
	line.add(cmd)
	cmd.Flags().StringVar(&forUser, "user", "", "book for another user (root only)")
	cmd.Flags().StringVar(&compute, "compute", "", "cap on the share of SMs, e.g. 25% (applied through MPS where it runs)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the booking as JSON")
	return cmd
}
