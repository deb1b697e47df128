package view

import (
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/core/admission"
	"github.com/chronos-gpu/chronos/core/human"
)

// WriteQueue prints the waiting line as a table for `chronos queue`: each
// request's place, what it asks, how long it has waited, its priority,
// when and where it should start, and why it waits.
func WriteQueue(w io.Writer, c *core.Client, line []admission.QueueEntry) error {
	now := c.Now()
	if len(line) == 0 {
		_, err := fmt.Fprintln(w, "Nobody is waiting.")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "POS\tREQUEST\tOWNER\tGPU\tSHARE\tFOR\tWAITED\tPRIORITY\tETA\tWHY")
	for _, e := range line {
		pos, eta := "-", "-"
		if e.Position > 0 {
			pos = strconv.Itoa(e.Position)
		}
		if !e.ETA.IsZero() {
			eta = human.FormatTime(e.ETA, now) + " (GPU " + human.Printable(c.GPUsName(e.Host, e.ETAGPUs())) + ")"
		}
		gpu := human.Printable(admission.AskedGPUs(c.Host(), e.Request))
		share := human.FormatPercent(e.SharePPM)
		if e.Bytes > 0 {
			share = human.FormatBytes(e.Bytes)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%.3f\t%s\t%s\n", pos, e.ID, human.Printable(e.User), gpu, share,
			human.FormatDuration(e.Duration), human.FormatDuration(now.Sub(e.Created)), e.Priority, eta, human.Printable(e.Reason))
	}
	return tw.Flush()
}

// WaitingLine is what a waiter says when its place in line changes.
func WaitingLine(c *core.Client, e admission.QueueEntry) string {
	return fmt.Sprintf("request %d waits at position %d; should start at %s on GPU %s (%s)", e.ID, e.Position,
		human.FormatTime(e.ETA, c.Now()), human.Printable(c.GPUsName(e.Host, e.ETAGPUs())), human.Printable(e.Reason))
}

// BookedLine is what create prints for a booking.
func BookedLine(c *core.Client, p *core.Partition) string {
	now := c.Now()
	when := "until " + human.FormatTime(p.Expires, now)
	if p.Start.After(now) {
		when = "from " + human.FormatTime(p.Start, now) + " " + when
	}
	return fmt.Sprintf("Booked %d: %s (%s) of GPU %s for %s, %s.", p.ID, human.FormatPercent(p.SharePPM),
		human.FormatBytes(p.Bytes), human.Printable(p.GPUName()), p.User, when)
}
