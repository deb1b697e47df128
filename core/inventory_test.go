package core

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core/coretest"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/core/ledger"
	"github.com/chronos-gpu/chronos/gpu"
	"github.com/chronos-gpu/chronos/storage"
	"github.com/chronos-gpu/chronos/storage/bolt"
)

// simInventory is what a simulated backend of n GPUs of mem bytes reports.
func simInventory(n int, mem uint64, now time.Time) domain.Inventory {
	devs, _ := gpu.NewSim(gpu.SimOptions{Count: n, Memory: mem}).Devices()
	return ledger.InventoryOf(gpu.SimName, devs, now)
}

func inventoryOf(t *testing.T, c *Client) domain.Inventory {
	t.Helper()
	var inv domain.Inventory
	require.NoError(t, c.Ledger().View(context.Background(), func(tx *storage.Tx) error {
		var err error
		inv, _, err = tx.Inventory()
		return err
	}))
	return inv
}

// One member's CHRONOS_BACKEND=sim used to rewrite everyone's GPUs. A
// simulated backend now never replaces real GPUs, and writes an inventory
// only to the user's own private ledger, or as root.
func TestSimulatedGPUsNeverReplaceRealOnes(t *testing.T) {
	t.Parallel()
	now := time.Now()
	real := ledger.InventoryOf(string(gpu.KindNVML), []gpu.Device{{Index: 0, UUID: "GPU-a", Name: "NVIDIA H200", MemoryTotal: 141 << 30}}, now)

	private := newTestClient(t, nil, coretest.Alice)
	require.NoError(t, private.SaveInventory(real))
	require.NoError(t, private.SaveInventory(simInventory(1, 8<<40, now)))
	require.Equal(t, string(gpu.KindNVML), inventoryOf(t, private).Backend, "simulated GPUs replaced real ones")

	// A shared ledger (others may write it): a member's simulated GPUs are
	// not recorded for everyone, nor booked on.
	shared := &bolt.Ledger{Path: filepath.Join(t.TempDir(), "chronos.db"), Mode: 0o660}
	member := NewClient(Options{Ledger: shared, As: &coretest.Alice, Devices: func() (Listing, error) {
		devs, err := gpu.NewSim(gpu.SimOptions{Count: 1, Memory: 8 << 40}).Devices()
		return Listing{Backend: gpu.SimName, Devices: devs}, err
	}})
	_, err := member.Create(Request{Device: 0, Memory: human.Bytes(120 << 30), Duration: time.Hour})
	require.ErrorIs(t, err, domain.ErrNoDevice)
	require.ErrorContains(t, err, "run `chronos stats` on this machine once")
	require.Empty(t, inventoryOf(t, member).Devices)
	admin := NewClient(Options{Ledger: shared, As: &coretest.Root})
	require.NoError(t, admin.SaveInventory(simInventory(2, 80<<30, now)))
	require.Len(t, inventoryOf(t, admin).Devices, 2, "root may record simulated GPUs")
	require.NoError(t, member.SaveInventory(simInventory(1, 8<<40, now)))
	require.Len(t, inventoryOf(t, admin).Devices, 2)
	_, err = member.Create(Request{Device: 0, Memory: human.Bytes(120 << 30), Duration: time.Hour})
	require.ErrorContains(t, err, "is more than GPU 0 has (80.0 GiB)")
	require.NoError(t, admin.SaveInventory(real))
	require.NoError(t, admin.SaveInventory(simInventory(2, 80<<30, now)))
	require.Equal(t, real.Devices, inventoryOf(t, admin).Devices, "not even root's simulated GPUs replace real ones")
	require.NotEmpty(t, inventoryOf(t, admin).Host)
}

// When the GPUs change, the difference is an event, and a booking on a GPU
// that is gone is shown as such — never dropped.
func TestGoneGPUsAreShownNotDropped(t *testing.T) {
	t.Parallel()
	clock := coretest.NewFakeClock()
	c := newTestClient(t, clock, coretest.Alice)
	require.NoError(t, c.SaveInventory(simInventory(4, 80<<30, clock.Now())))
	p, err := c.Create(Request{Device: 3, Memory: human.Fraction(0.5), Duration: time.Hour})
	require.NoError(t, err)
	require.NoError(t, c.SaveInventory(simInventory(2, 80<<30, clock.Now())))

	evs, err := c.LastEvents(1)
	require.NoError(t, err)
	require.Equal(t, domain.EventInventory, evs[0].Kind)
	require.Contains(t, evs[0].Detail, "GPU 2 (Simulated H100 80GB, 80.0 GiB, SIM-")
	require.Contains(t, evs[0].Detail, "GPU 3 (Simulated H100 80GB, 80.0 GiB, SIM-00000000-0000-0000-0000-000000000003) is gone")

	parts, err := c.List(false)
	require.NoError(t, err)
	require.Len(t, parts, 1)
	require.True(t, parts[0].GPUGone)
	require.Equal(t, domain.StatusGPUGone, parts[0].Status(clock.Now(), time.Minute))
	require.Equal(t, domain.StatusLive, parts[0].BaseStatus(clock.Now(), time.Minute))
	got, err := c.Get(p.ID)
	require.NoError(t, err)
	require.True(t, got.GPUGone)
	avail, err := c.Available(-1)
	require.NoError(t, err)
	require.Len(t, avail, 2)

	// Released, it is simply released.
	_, err = c.Release(p.ID)
	require.NoError(t, err)
	got, err = c.Get(p.ID)
	require.NoError(t, err)
	require.Equal(t, domain.StatusReleased, got.Status(clock.Now(), time.Minute))
}
