package monitor

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core/coretest"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/servicetest"
	"github.com/chronos-gpu/chronos/gpu"
	"github.com/chronos-gpu/chronos/storage"
	"github.com/chronos-gpu/chronos/storage/bolt"
)

// The monitor puts its GPUs back in the ledger when someone else's process
// wrote others there: at its start, and again every inventoryEvery.
func TestMonitorRefreshesTheInventory(t *testing.T) {
	t.Parallel()
	clock := coretest.NewFakeClock()
	sim := gpu.NewSim(gpu.SimOptions{Count: 2})
	c := servicetest.SimClient(bolt.New(filepath.Join(t.TempDir(), "chronos.db")), sim, coretest.Root, clock)
	forge := func() {
		require.NoError(t, c.Ledger().Update(context.Background(), func(tx *storage.Tx) error {
			return tx.PutInventory(servicetest.SimInventory(1, 8<<40, clock.Now()))
		}))
	}
	forge()
	m := New(c, Options{Backend: sim})
	_, err := m.Tick()
	require.NoError(t, err)
	require.Len(t, servicetest.InventoryOf(t, c).Devices, 2)

	forge()
	clock.Advance(time.Second)
	_, err = m.Tick()
	require.NoError(t, err)
	require.Len(t, servicetest.InventoryOf(t, c).Devices, 1, "checked only every %s", inventoryEvery)
	clock.Advance(inventoryEvery)
	_, err = m.Tick()
	require.NoError(t, err)
	require.Len(t, servicetest.InventoryOf(t, c).Devices, 2)
	evs, err := c.LastEvents(1)
	require.NoError(t, err)
	require.Equal(t, domain.EventInventory, evs[0].Kind)
	require.Contains(t, evs[0].Detail, "GPU 1 (Simulated H100 80GB, 80.0 GiB, SIM-00000000-0000-0000-0000-000000000001) is new")
	require.True(t, strings.HasSuffix(evs[0].Detail, "the links between the GPUs were read anew"), evs[0].Detail)
}
