// Package ledger is what the booking service and the monitor both do to
// the ledger inside a transaction: read the policy in force, end a
// booking and charge its owner, store the GPUs' readings and make their
// inventory record, and read the snapshot admission decides on. It needs
// no client, so the monitor uses it without core making it public.
package ledger

import (
	"sync"

	"encoding/json"
	"time"

	"github.com/chronos-gpu/chronos/core/admission"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/policy"
	"github.com/chronos-gpu/chronos/gpu"
	"github.com/chronos-gpu/chronos/storage"
)

// PolicyOnce reads the policy in tx when first asked, and gives the same
// after: a pass that ends many bookings charges each under it, read and
// decoded once.
func PolicyOnce(tx *storage.Tx) func() (domain.Policy, error) {
	return sync.OnceValues(func() (domain.Policy, error) { return Policy(tx) })
}

// Policy is the policy in force in tx: the stored one with every unset
// setting at its default, or the default policy when none is stored.
func Policy(tx *storage.Tx) (domain.Policy, error) {
	p, ok, err := tx.Policy()
	if err != nil || !ok {
		return policy.Default(), err
	}
	return policy.WithDefaults(p), nil
}

// ChargeWrites is the most charge writes: the owner's usage, the interval
// held, and the old intervals it lets go of.
const ChargeWrites = 2 + storage.HeldDropMax

// charge adds what a booking held until end to its owner's usage, in the
// transaction that ends it, and keeps the interval it held for hours
// quotas and usage reports (letting go of those no window or report
// reaches any more).
func charge(tx *storage.Tx, p domain.Partition, end time.Time, pol domain.Policy) error {
	held := admission.HeldSeconds(p, end)
	if held == 0 {
		return nil
	}
	u, ok, err := tx.UserUsage(p.UID)
	if err != nil {
		return err
	}
	if !ok {
		u = domain.UserUsage{UID: p.UID, User: p.User, At: end}
	}
	at := admission.Later(u.At, end)
	u.GPUSeconds = admission.Decay(u.GPUSeconds, u.At, at, pol.HalfLife) + held
	u.At, u.User = at, p.User
	if err := tx.PutUserUsage(u); err != nil {
		return err
	}
	if err := tx.AddHeld(p.UID, domain.Held{Partition: p.ID, Start: p.Start, End: admission.Earlier(end, p.Expires), SharePPM: p.TotalPPM()}); err != nil {
		return err
	}
	return tx.DropHeld(p.UID, end.Add(-max(admission.UsageMonth, admission.LongestWindow(pol))))
}

// BackendInventory is the ledger's form of backend b's GPUs (devs, as it
// listed them) and how they are linked, as seen on this host.
func BackendInventory(b gpu.Backend, devs []gpu.Device, now time.Time) domain.Inventory {
	return WithTopology(InventoryOf(b.Name(), devs, now), gpu.TopologyOf(b))
}

// WithTopology is inv with the links t knows of its GPUs.
func WithTopology(inv domain.Inventory, t gpu.Topology) domain.Inventory {
	if t.Known() {
		inv.Topology, _ = json.Marshal(t) // a topology always marshals
	}
	return inv
}

// InventoryOf is the ledger's form of a backend's device list, as seen on
// this host.
func InventoryOf(backend string, devs []gpu.Device, now time.Time) domain.Inventory {
	inv := domain.Inventory{Backend: backend, Host: hostname(), Updated: now}
	for _, d := range devs {
		inv.Devices = append(inv.Devices, domain.Device{Index: d.Index, UUID: d.UUID, Name: d.Name, MemoryTotal: d.MemoryTotal})
	}
	return inv
}

// EndBooking ends p (released or expired) at ended and charges its owner's
// fair-share usage for the time it held, under the ledger's policy, in the
// transaction that ends it.
func EndBooking(tx *storage.Tx, p *domain.Partition, state domain.State, ended time.Time, policy func() (domain.Policy, error)) error {
	pol, err := policy()
	if err != nil {
		return err
	}
	p.State, p.Ended = state, ended
	if err := tx.PutPartition(p); err != nil {
		return err
	}
	return charge(tx, *p, ended, pol)
}
