package migrate

import (
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/chronos-gpu/chronos/storage"
)

// WriteReport says what a migration copied, and which bookings have new
// ids.
func WriteReport(out io.Writer, rep Report, src, dst storage.Store) {
	fmt.Fprintf(out, "Copied %d bookings (%d live) and %d events of host %s from %s to %s.\n", rep.Bookings, rep.Live, rep.Events, rep.Host, src, dst)
	fmt.Fprintf(out, "Also: %d bookings' holds and usage, %d ended intervals for hours quotas, %d users' fair-share usage, %d GPU minutes, %d past requests.\n",
		rep.Holds, rep.Held, rep.Users, rep.Minutes, rep.Requests)
	fmt.Fprintf(out, "Policy: %s. GPU inventory: %s. Read back and checked.\n", rep.Policy, map[bool]string{true: "copied", false: "none in the source"}[rep.Inventory])
	for _, old := range slices.Sorted(maps.Keys(rep.IDs)) {
		if id := rep.IDs[old]; old != id {
			fmt.Fprintf(out, "Booking %d is now %d.\n", old, id)
		}
	}
}
