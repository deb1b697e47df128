package core

import (
	"time"

	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/storage"
)

// LedgerSnapshot is what a metrics scrape shows of the ledger, read in one
// transaction: its figures agree with each other, and on etcd a scrape
// costs one transaction's round trips rather than one per figure.
type LedgerSnapshot struct {
	// Now is the time the snapshot is of.
	Now time.Time
	// Inventory is this host's GPUs, as Inventory gives them.
	Inventory domain.Inventory
	// Live is the live and upcoming bookings, as List(false) gives them.
	Live []Partition
	// Waiting counts the requests waiting in line for this host's GPUs
	// (past their --timeout left out), by GPU index; AnyDevice counts
	// those for any of its GPUs.
	Waiting map[int]int
	// Totals is each user's figures since the ledger began, as
	// totals.Read gives them.
	Totals []ReportRow
}

// Snapshot reads a LedgerSnapshot, the users' totals through totals.
func (c *Client) Snapshot(totals *UserTotals) (LedgerSnapshot, error) {
	s := LedgerSnapshot{Now: c.now()}
	cached := false
	rows, err := totals.readAlong(c, s.Now, func(tx *storage.Tx) error {
		var err error
		if s.Inventory, cached, err = tx.HostInventory(c.host); err != nil {
			return err
		}
		if s.Live, err = c.listIn(tx, false, s.Now); err != nil {
			return err
		}
		s.Waiting, err = c.waitingIn(tx, s.Now)
		return err
	})
	if err != nil {
		return LedgerSnapshot{}, err
	}
	s.Totals = rows
	if !cached { // asked of the GPUs once, and cached for the next scrape
		s.Inventory, err = c.Inventory()
	}
	return s, err
}
