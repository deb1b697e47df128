// Package servicetest holds what the tests of the packages above core
// share: clients of the test GPUs, and a waiting process to play. It
// imports core, so core's own internal tests cannot use it (they keep
// small builders of their own); its external tests and every package
// above core may. Only tests import it (a depguard rule says so).
package servicetest

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/core/clock"
	"github.com/chronos-gpu/chronos/core/coretest"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/core/ledger"
	"github.com/chronos-gpu/chronos/core/proc"
	"github.com/chronos-gpu/chronos/gpu"
	"github.com/chronos-gpu/chronos/storage"
	"github.com/chronos-gpu/chronos/storage/bolt"
)

// Devices is a DeviceSource of two 80 GiB GPUs.
func Devices() (core.Listing, error) {
	return core.Listing{Backend: coretest.TestBackend, Devices: []gpu.Device{
		{Index: 0, UUID: "GPU-0", Name: "Test GPU", MemoryTotal: coretest.TestGPUMemory},
		{Index: 1, UUID: "GPU-1", Name: "Test GPU", MemoryTotal: coretest.TestGPUMemory},
	}}, nil
}

// NewClient is who's client of the test GPUs on a ledger file of its own.
func NewClient(t *testing.T, clk *clock.Fake, who domain.Identity) *core.Client {
	t.Helper()
	return ClientAt(filepath.Join(t.TempDir(), "chronos.db"), clk, who)
}

// ClientAt is who's client of the test GPUs on the ledger file at path.
func ClientAt(path string, clk *clock.Fake, who domain.Identity) *core.Client {
	return ClientOn(bolt.New(path), clk, who)
}

// ClientOn is who's client of the test GPUs on any store; clk nil is the
// system clock.
func ClientOn(s storage.Store, clk *clock.Fake, who domain.Identity) *core.Client {
	opts := core.Options{Ledger: s, Devices: Devices, As: &who}
	if clk != nil {
		opts.Clock = clk
	}
	return core.NewClient(opts)
}

// HostClient is who's client of the test GPUs of host, on the system clock.
func HostClient(s storage.Store, host string, who domain.Identity) *core.Client {
	return core.NewClient(core.Options{Ledger: s, Devices: Devices, As: &who, Host: host})
}

// SimClient is who's client of a simulated backend's GPUs.
func SimClient(s storage.Store, sim *gpu.Sim, who domain.Identity, clk clock.Clock) *core.Client {
	return core.NewClient(core.Options{Ledger: s, As: &who, Clock: clk, Devices: func() (core.Listing, error) {
		devs, err := sim.Devices()
		return core.Listing{Backend: sim.Name(), Devices: devs}, err
	}})
}

// Half is a request for half of GPU dev for d.
func Half(dev int, d time.Duration) core.Request {
	return core.Request{Device: dev, Memory: human.Fraction(0.5), Duration: d}
}

// UIDOf looks a system user up; the test skips without it.
func UIDOf(t *testing.T, name string) int {
	t.Helper()
	id, err := proc.LookupUser(name)
	if err != nil || id.UID == 0 {
		t.Skipf("no %s user here", name)
	}
	return id.UID
}

// SimInventory is the inventory of n simulated GPUs of mem bytes, taken at now.
func SimInventory(n int, mem uint64, now time.Time) domain.Inventory {
	devs, _ := gpu.NewSim(gpu.SimOptions{Count: n, Memory: mem}).Devices()
	return ledger.InventoryOf(gpu.SimName, devs, now)
}

// InventoryOf is the inventory c's ledger holds.
func InventoryOf(t *testing.T, c *core.Client) domain.Inventory {
	t.Helper()
	var inv domain.Inventory
	require.NoError(t, c.Ledger().View(context.Background(), func(tx *storage.Tx) error {
		var err error
		inv, _, err = tx.Inventory()
		return err
	}))
	return inv
}

// EventKinds are the kinds of a booking's events, oldest first.
func EventKinds(t *testing.T, c *core.Client, partition uint64) []string {
	t.Helper()
	evs, err := c.Events(0, 0)
	require.NoError(t, err)
	var out []string
	for _, e := range evs {
		if e.Partition == partition {
			out = append(out, string(e.Kind))
		}
	}
	return out
}
