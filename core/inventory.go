package core

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/core/ledger"
	"github.com/chronos-gpu/chronos/gpu"
	"github.com/chronos-gpu/chronos/storage"
)

// cacheInventory stores inv as the machine's inventory in tx, and records
// what changed as an event. Simulated GPUs never replace real ones, and are
// written only to a ledger that is this user's alone or by root: one
// member's CHRONOS_BACKEND=sim must not change what everyone books on.
func (c *Client) cacheInventory(tx *storage.Tx, inv domain.Inventory) error {
	old, ok, err := tx.HostInventory(c.host)
	if err != nil {
		ok = false // a record that does not decode is replaced
	}
	if ok && sameInventory(old, inv) {
		return nil
	}
	if !c.mayCache(old, ok, inv) {
		return nil
	}
	if err := tx.PutHostInventory(c.host, inv); err != nil {
		return err
	}
	if !ok {
		return nil
	}
	return tx.AddEvent(domain.Event{Time: c.now(), Kind: domain.EventInventory, UID: c.me.UID, User: c.me.User,
		Detail: domain.BoundDetail(inventoryChanges(old, inv))})
}

// mayCache says whether inv may replace the stored inventory (old, when ok).
func (c *Client) mayCache(old domain.Inventory, ok bool, inv domain.Inventory) bool {
	if inv.Backend != gpu.SimName {
		return true
	}
	if ok && old.Backend != gpu.SimName {
		return false
	}
	private, known := c.ledger.(interface{ Private() bool })
	return c.me.Root() || known && private.Private()
}

func sameInventory(a, b domain.Inventory) bool {
	return a.Backend == b.Backend && a.Host == b.Host && slices.Equal(a.Devices, b.Devices) && bytes.Equal(a.Topology, b.Topology)
}

// inventoryChanges says in words how the GPUs in b differ from those in a.
func inventoryChanges(a, b domain.Inventory) string {
	var changes []string
	if a.Backend != b.Backend || a.Host != b.Host {
		changes = append(changes, fmt.Sprintf("GPUs now from %s (was %s)", where(b), where(a)))
	}
	find := func(devs []domain.Device, d domain.Device) (domain.Device, bool) {
		i := slices.IndexFunc(devs, func(e domain.Device) bool { return sameDevice(e, d.Index, d.UUID) })
		if i < 0 {
			return domain.Device{}, false
		}
		return devs[i], true
	}
	for _, d := range a.Devices {
		if now, ok := find(b.Devices, d); !ok {
			changes = append(changes, fmt.Sprintf("GPU %d (%s) is gone", d.Index, describeDevice(d)))
		} else if now.MemoryTotal != d.MemoryTotal || now.Name != d.Name {
			changes = append(changes, fmt.Sprintf("GPU %d is now %s (was %s)", d.Index, describeDevice(now), describeDevice(d)))
		}
	}
	for _, d := range b.Devices {
		if _, ok := find(a.Devices, d); !ok {
			changes = append(changes, fmt.Sprintf("GPU %d (%s) is new", d.Index, describeDevice(d)))
		}
	}
	if !bytes.Equal(a.Topology, b.Topology) {
		changes = append(changes, "the links between the GPUs were read anew")
	}
	return strings.Join(changes, "; ")
}

func where(inv domain.Inventory) string {
	if inv.Host == "" {
		return inv.Backend
	}
	return inv.Backend + " on " + inv.Host
}

func describeDevice(d domain.Device) string {
	s := fmt.Sprintf("%s, %s", d.Name, human.FormatBytes(d.MemoryTotal))
	if d.UUID != "" {
		s += ", " + d.UUID
	}
	return s
}

// sameDevice says whether d is the GPU a booking of (index, uuid) was made
// on: the same index, and the same card when both know its UUID.
func sameDevice(d domain.Device, index int, uuid string) bool {
	return d.Index == index && (d.UUID == "" || uuid == "" || d.UUID == uuid)
}

// gpuGone says whether the booking p is on a GPU (one of its GPUs) the
// inventory no longer lists.
func gpuGone(inv domain.Inventory, ok bool, p domain.Partition) bool {
	if !ok {
		return false
	}
	for _, g := range p.GPUs() {
		on := p.On(g)
		if !slices.ContainsFunc(inv.Devices, func(d domain.Device) bool { return sameDevice(d, on.Device, on.DeviceUUID) }) {
			return true
		}
	}
	return false
}

// Inventory returns the cached device list, asking the device source (and
// caching its answer) when the ledger has none.
func (c *Client) Inventory() (domain.Inventory, error) {
	var inv domain.Inventory
	var ok bool
	err := c.ledger.View(c.ctx, func(tx *storage.Tx) error {
		var err error
		inv, ok, err = tx.HostInventory(c.host)
		return err
	})
	if err != nil || ok {
		return inv, err
	}
	if inv, err = c.fetchInventory(); err != nil {
		return inv, err
	}
	if err := c.SaveInventory(inv); err != nil && !ledger.CannotWrite(err) {
		return inv, err
	}
	return inv, nil
}

// SaveInventory caches the device list (see cacheInventory) when it differs
// from the one stored, looking first without writing, so that watchers are
// not woken by a write that changes nothing.
func (c *Client) SaveInventory(inv domain.Inventory) error {
	same := false
	err := c.ledger.View(c.ctx, func(tx *storage.Tx) error {
		old, ok, err := tx.HostInventory(c.host)
		same = err == nil && ok && (sameInventory(old, inv) || !c.mayCache(old, ok, inv))
		return nil
	})
	if err != nil || same {
		return err
	}
	return c.ledger.Update(c.ctx, func(tx *storage.Tx) error { return c.cacheInventory(tx, inv) })
}
