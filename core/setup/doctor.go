package setup

import (
	"fmt"
	"io"

	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/storage"
)

// WriteDiagnosis says what doctor found of a ledger: healthy and what it
// holds, or each problem; and its backup, with what to do when that is
// damaged.
func WriteDiagnosis(out io.Writer, d storage.Diagnosis) {
	switch {
	case !d.Exists && d.Healthy:
		fmt.Fprintf(out, "Ledger %s: not created yet (nothing to check).\n", d.Path)
	case d.Healthy:
		fmt.Fprintf(out, "Ledger %s: healthy. %d bookings (%d live), %d events, %d claims; schema %d.\n", d.Path, d.Partitions, d.Live, d.Events, d.Claims, d.Schema)
	default:
		fmt.Fprintf(out, "Ledger %s: %d problem(s):\n", d.Path, len(d.Problems))
		for _, p := range d.Problems {
			fmt.Fprintln(out, "  -", human.Printable(p))
		}
	}
	fmt.Fprintln(out, "Backup:", d.Backup)
	if d.BackupDamaged {
		whole := ""
		if d.Healthy {
			whole = "; the ledger itself is healthy"
		}
		fmt.Fprintf(out, "The backup is damaged%s. The first write 10 minutes after the backup last changed replaces it; "+
			"remove it to have the next write make a fresh one.\n", whole)
	}
}
