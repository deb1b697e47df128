package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/core/admission"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/core/view"
	"github.com/chronos-gpu/chronos/gpu/procfs"
)

func createCmd(g *globals) *cobra.Command {
	var forUser, compute string
	var asJSON bool
	var request uint64
	var line lineFlags
	cmd := &cobra.Command{
		Use:   "create GPU MEMORY DURATION",
		Short: "Book a share of a GPU's memory for a while",
		Long: `Book a share of one GPU's memory, or of several GPUs', for a bounded time.

GPU is an index on this host (0), or HOST:INDEX (gpu3:0) for another host's
in a ledger many hosts share; any (or HOST:any) for whichever GPU of the
host has room first. Several GPUs of one host are one booking: a list
(0,1 or 0-3) books the same share of each, all or nothing, from one start
to one end; any --gpus 4 books the four best connected GPUs with room
(NVLink first, then the same PCIe switch, then the same NUMA node).
MEMORY is a fraction (0.5), a percent (50%) or a size (40GiB).
DURATION is seconds (3600) or a duration (90m, 1h30m, 8h, 2d).
--at books ahead; --wait joins the waiting line when it cannot start now.`,
		Example: "  chronos create 0 0.5 3600\n  chronos create 1 40GiB 2h30m\n  chronos create gpu3:0 50% 2h\n  sudo chronos create 0 0.3 8h --user alice\n" +
			"  chronos create 0 50% 2h --wait --timeout 30m\n  chronos create any 50% 2h --wait\n  chronos create 0 50% 3h --at 14:00\n" +
			"  chronos create 0,1 50% 4h\n  chronos create 0-3 100% 8h\n  chronos create any 100% 8h --gpus 4 --wait",
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
			say := func(e admission.QueueEntry) { fmt.Fprintln(cmd.ErrOrStderr(), "chronos:", view.WaitingLine(c, e)) }
			var p *core.Partition
			if request > 0 {
				p, err = waitFor(ctx, cmd, c, request, req, line.wait, say)
			} else {
				p, err = writerFor(c).BookOrWait(ctx, req, wait, nil, say)
			}
			if err != nil {
				return err
			}
			if w := p.Room.Warning(p.Bytes); w != "" {
				fmt.Fprintln(cmd.ErrOrStderr(), "chronos: warning:", human.Printable(w))
			}
			if p.ComputePct > 0 {
				if note := c.ComputeCapNote(p.Partition, procfs.DetectMPS("")); note != "" {
					fmt.Fprintln(cmd.ErrOrStderr(), "chronos: note:", note)
				}
			}
			if asJSON {
				return view.PrintJSON(cmd.OutOrStdout(), view.Partition(p.Partition, c.Now(), 0))
			}
			fmt.Fprintln(cmd.OutOrStdout(), view.BookedLine(c, p))
			if p.Placement != "" {
				fmt.Fprintf(cmd.OutOrStdout(), "Placed on %s.\n", human.Printable(p.Placement))
			}
			if p.Room.FreePPM > 0 && len(p.Devices) == 0 { // read when it was booked for now, not from the line or ahead
				fmt.Fprintf(cmd.OutOrStdout(), "GPU %s had %s.\n", human.Printable(c.GPUName(p.Host, p.Device)), p.Room.Room())
			}
			return nil
		},
	}
	line.add(cmd)
	cmd.Flags().StringVar(&forUser, "user", "", "book for another user (root only)")
	cmd.Flags().StringVar(&compute, "compute", "", "cap on the share of SMs, e.g. 25% (applied through MPS where it runs)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the booking as JSON")
	cmd.Flags().Uint64Var(&request, "request", 0, "with --wait: wait for this request of yours already in line, in its place (the app hands its requests on so)")
	return cmd
}

// waitFor is create --wait --request: this process becomes the waiter of
// a request already in line, which keeps its place, and waits for it. The
// request must be the one the arguments describe.
func waitFor(ctx context.Context, cmd *cobra.Command, c *core.Client, id uint64, req core.Request, wait bool, say func(admission.QueueEntry)) (*core.Partition, error) {
	if !wait {
		return nil, usageError{errors.New("--request goes with --wait: it waits for a request already in line")}
	}
	r, err := c.LineRequest(id)
	if err != nil {
		return nil, err
	}
	asked := domain.Request{Host: r.Host, Device: req.Device, Devices: req.Devices, Count: req.Count}
	if r.Device != req.Device || !slices.Equal(r.Devices, req.Devices) || r.GPUCount() != max(1, len(req.Devices), req.Count) || r.Duration != req.Duration {
		return nil, usageError{fmt.Errorf("request %d asks for GPU %s for %s, not GPU %s for %s", id, admission.AskedGPUs(c.Host(), r),
			human.FormatDuration(r.Duration), admission.AskedGPUs(c.Host(), asked), human.FormatDuration(req.Duration))}
	}
	joined := func(admission.QueueEntry) {
		fmt.Fprintf(cmd.ErrOrStderr(), "chronos: waiting for request %d (pid %d)\n", id, os.Getpid())
	}
	return writerFor(c).WaitFor(ctx, id, joined, say) // ctx ends on SIGHUP too (see createCmd)
}
