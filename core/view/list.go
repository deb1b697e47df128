package view

import (
	"fmt"
	"io"
	"slices"
	"strconv"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/core/domain"
)

// Output forms of `list -o`.
const (
	OutputTable = ""
	OutputWide  = "wide"
	OutputJSON  = "json"
	OutputIDs   = "ids"
)

// BookingFilter is which bookings a command shows or acts on: squeue's
// --me, -u and --states for chronos.
type BookingFilter struct {
	Mine   bool
	User   string
	Host   string // "": any
	GPU    int    // -1: any
	States []domain.BookingStatus
}

// Ended says whether the filter asks for ended bookings, which only the
// whole history holds.
func (f BookingFilter) Ended() bool {
	return slices.ContainsFunc(f.States, domain.BookingStatus.Ended)
}

// narrows says whether the filter leaves any booking out.
func (f BookingFilter) narrows() bool {
	return f.Mine || f.User != "" || f.Host != "" || f.GPU >= 0 || len(f.States) > 0
}

func (f BookingFilter) keeps(p core.Partition, c *core.Client, st domain.BookingStatus) bool {
	return (!f.Mine || p.UID == c.Me().UID) &&
		(f.User == "" || p.User == f.User || strconv.Itoa(p.UID) == f.User) &&
		(f.Host == "" || c.HostOf(p.Partition) == f.Host) &&
		(f.GPU < 0 || p.Holds(f.GPU)) &&
		(len(f.States) == 0 || slices.Contains(f.States, st))
}

// BookingList is one `chronos list`: which bookings, printed how.
type BookingList struct {
	Client    *core.Client
	All       bool
	Filter    BookingFilter
	Output    string
	NoHeaders bool
}

// Write prints the list: the bookings the filter keeps, in the form asked.
func (l BookingList) Write(w io.Writer) error {
	c := l.Client
	parts, err := c.List(l.All)
	if err != nil {
		return err
	}
	pol, err := c.Policy()
	if err != nil {
		return err
	}
	now := c.Now()
	kept := parts[:0]
	for _, p := range parts {
		if l.Filter.keeps(p, c, p.Status(now, pol.WarnLead)) {
			kept = append(kept, p)
		}
	}
	parts = kept
	switch l.Output {
	case OutputJSON:
		out := make([]PartitionJSON, 0, len(parts))
		for _, p := range parts {
			out = append(out, Booking(p, now, pol.WarnLead))
		}
		return PrintJSON(w, out)
	case OutputIDs:
		return WriteBuffered(w, func(w io.Writer) error {
			for _, p := range parts {
				fmt.Fprintln(w, p.ID)
			}
			return nil
		})
	}
	if len(parts) == 0 && !l.NoHeaders {
		if l.Filter.narrows() {
			_, err := fmt.Fprintln(w, "No bookings match.")
			return err
		}
		// Nothing live: say whether there is history to see.
		if !l.All {
			if ended, err := c.List(true); err == nil && len(ended) > 0 {
				_, err = fmt.Fprintf(w, "No live bookings; %d ended (chronos list --all shows them).\n", len(ended))
				return err
			}
		}
	}
	o := TableOptions{Wide: l.Output == OutputWide, NoHeaders: l.NoHeaders}
	return WriteBuffered(w, func(w io.Writer) error { return WriteBookings(w, parts, now, pol.WarnLead, o) })
}
