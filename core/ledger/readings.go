package ledger

import (
	"time"

	"errors"
	"os"

	"github.com/chronos-gpu/chronos/core/admission"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/storage"
)

// Physical reads what dev physically holds from its stored reading, when
// it is fresh and was taken by the backend the inventory came from. A
// missing or damaged reading is only unknown: it is a hint, never a reason
// to refuse.
func Physical(tx *storage.Tx, inv domain.Inventory, dev domain.Device, now time.Time) admission.PhysicalMemory {
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

// CannotWrite says whether err means only that this process may not write
// the ledger: reading, and what does not need the cache, goes on.
func CannotWrite(err error) bool {
	return errors.Is(err, storage.ErrReadOnly) || errors.Is(err, storage.ErrUnsafeFile)
}

// hostname is this machine's name for the inventory, "" when unknown.
func hostname() string {
	h, _ := os.Hostname()
	return h
}
