package monitor

import (
	"time"

	"github.com/chronos-gpu/chronos/storage"
)

// On a ledger whose writers wait their turn in line (etcd), a monitor's
// pass that writes goes ahead of everyone waiting (storage.UpdateUrgent).
// Under contention a turn costs hundreds of milliseconds, and a pass for
// each deadline and each warning — several a second, with bookings of
// seconds — left the lab's own writers a third of the line, and with
// three monitors a sixth: soak-etcd's sixteen processes booking one GPU
// gave up busy. So a pass that writes comes no sooner after the last
// one ended than gapFactor times what that one took, at most maxGap:
// the monitor keeps at most about a fifth of the line's time, and one
// pass records every expiry and warning that came due meanwhile. (A
// second at most put the 3 hosts × 8 writers soak's p99 from deadline
// to record at 2.2 s, over issue 24's 2 s; half a second is the bound.) On a
// quiet ledger a write takes milliseconds and so does the gap. Only the
// records wait: the deadline watch sends each SIGTERM at its deadline
// (see watchDeadlines), and admission counts a booking past its deadline
// as ended whether or not it is recorded.
const (
	gapFactor      = 4
	maxGap         = 500 * time.Millisecond
	forestalledGap = time.Second
)

// A pass that meant to expire or warn and found it all done (another
// monitor of the host got there first: each open app keeps a monitor)
// waits forestalledGap before its next: the monitors of a host settle on
// one that writes, and the others look again only once its records are
// overdue, instead of each taking a turn ahead of the lab to find nothing
// to do.

// writeSpacing spaces the writing passes of a monitor on a ledger with a
// writers' line; the zero value, on any other ledger, spaces nothing.
type writeSpacing struct {
	on        bool
	lastEnded time.Time
	gap       time.Duration
}

func newWriteSpacing(l storage.Store) writeSpacing {
	_, line := l.(storage.Urgent)
	return writeSpacing{on: line}
}

// wait reports whether a pass at now must not write yet, and when it may.
func (w *writeSpacing) wait(now time.Time) (time.Time, bool) {
	at := w.lastEnded.Add(w.gap)
	return at, w.on && now.Before(at)
}

// wrote notes a writing pass's transaction, from began to ended (the
// monitor's clock); forestalled says it found the expiries and warnings
// it came for done by another.
func (w *writeSpacing) wrote(began, ended time.Time, forestalled bool) {
	w.lastEnded = ended
	w.gap = min(maxGap, max(0, ended.Sub(began))*gapFactor)
	if forestalled {
		w.gap = forestalledGap
	}
}
