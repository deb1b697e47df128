package metrics

import (
	"time"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/report"
	"github.com/chronos-gpu/chronos/storage"
)

// ledgerSnapshot is what a metrics scrape shows of the ledger, read in one
// transaction: its figures agree with each other, and on etcd a scrape
// costs one transaction's round trips rather than one per figure.
type ledgerSnapshot struct {
	// Now is the time the snapshot is of.
	Now time.Time
	// Inventory is this host's GPUs, as Inventory gives them.
	Inventory domain.Inventory
	// Live is the live and upcoming bookings, as List(false) gives them.
	Live []core.Partition
	// Waiting counts the requests waiting in line for this host's GPUs
	// (past their --timeout left out), by GPU index; AnyDevice counts
	// those for any of its GPUs.
	Waiting map[int]int
	// Totals is each user's figures since the ledger began, as
	// totals.Read gives them.
	Totals []report.Row
}

// snapshot reads a ledgerSnapshot, the users' totals through totals.
func snapshot(c *core.Client, totals *report.UserTotals) (ledgerSnapshot, error) {
	s := ledgerSnapshot{Now: c.Now()}
	cached := false
	rows, err := totals.ReadAlong(c, s.Now, func(tx *storage.Tx) error {
		var err error
		if s.Inventory, cached, err = tx.HostInventory(c.Host()); err != nil {
			return err
		}
		if s.Live, err = c.ListIn(tx, false, s.Now); err != nil {
			return err
		}
		s.Waiting, err = c.WaitingIn(tx, s.Now)
		return err
	})
	if err != nil {
		return ledgerSnapshot{}, err
	}
	s.Totals = rows
	if !cached { // asked of the GPUs once, and cached for the next scrape
		s.Inventory, err = c.Inventory()
	}
	return s, err
}
