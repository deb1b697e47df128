package core

import (
	"fmt"

	"time"

	"github.com/chronos-gpu/chronos/core/admission"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
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
	return c.ledger.Update(c.ctx, func(tx *storage.Tx) error { return PutReadingIfDue(tx, rs) })
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

// physicalIn reads what dev physically holds from its stored reading, when
// it is fresh and was taken by the backend the inventory came from. A
// missing or damaged reading is only unknown: it is a hint, never a reason
// to refuse.
func physicalIn(tx *storage.Tx, inv domain.Inventory, dev domain.Device, now time.Time) admission.PhysicalMemory {
	r, ok, err := tx.DeviceReading(dev.Index)
	age := now.Sub(r.Time)
	if err != nil || !ok || r.Backend != inv.Backend || r.UUID != dev.UUID || r.MemoryUsed > r.MemoryTotal ||
		age > admission.ReadingFreshFor || age < -admission.ReadingFreshFor {
		return admission.PhysicalMemory{}
	}
	return admission.PhysicalMemory{Known: true, Age: max(age, 0), Total: r.MemoryTotal, Used: r.MemoryUsed,
		Free: r.MemoryTotal - r.MemoryUsed, Holders: r.Holders}
}

// PutReadingIfDue stores rs inside a write transaction, checking again
// what is stored: another process may have stored readings just now.
func PutReadingIfDue(tx *storage.Tx, rs []domain.DeviceReading) error {
	stored, err := tx.DeviceReadings()
	if err == nil && !admission.ReadingDue(stored, rs) {
		return nil
	}
	return tx.PutDeviceReadings(rs)
}
