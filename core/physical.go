package core

import (
	"fmt"

	"github.com/chronos-gpu/chronos/core/admission"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/core/ledger"
	"github.com/chronos-gpu/chronos/storage"
)

// saveReading stores fresh readings of the GPUs the inventory lists when
// readingDue says so; the stored ones are read first, so that an unchanged
// reading costs no write (which would wake every watcher of the ledger).
func (c *Client) saveReading(rs []domain.DeviceReading) error {
	if len(rs) == 0 || c.host != "" {
		return nil // a ledger many hosts share keeps no readings (see Monitor.tick)
	}
	due := false
	err := c.ledger.View(c.ctx, func(tx *storage.Tx) error {
		inv, _, err := tx.Inventory()
		if err != nil || inv.Backend != rs[0].Backend {
			return err
		}
		stored, err := tx.DeviceReadings()
		due = err != nil || admission.ReadingDue(stored, rs)
		return nil
	})
	if err != nil || !due {
		return err
	}
	return c.ledger.Update(c.ctx, func(tx *storage.Tx) error { return ledger.PutReadingIfDue(tx, rs) })
}

// Room is what the GPU has room for: the share still bookable, and next to
// it the memory physically free. Create fills it in as it was before the
// booking; the app's form shows it for each GPU.
func (a Availability) Room() string {
	return fmt.Sprintf("%s (%s) bookable, %s", human.FormatPercentDown(a.FreePPM), human.FormatBytesDown(a.FreeBytes), a.Physical)
}

// Warning says when a booking of bytes is more than the GPU physically
// has free, and who holds the rest; empty when it fits or nothing is known.
func (a Availability) Warning(bytes uint64) string {
	return a.Physical.Shortfall(a.Device.Index, bytes)
}
