package core

import (
	"path/filepath"
	"testing"

	"github.com/chronos-gpu/chronos/core/clock"
	"github.com/chronos-gpu/chronos/core/coretest"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/gpu"
	"github.com/chronos-gpu/chronos/storage"
	"github.com/chronos-gpu/chronos/storage/bolt"
)

// testDevices is a DeviceSource of two 80 GiB GPUs.
func testDevices() (Listing, error) {
	return Listing{Backend: coretest.TestBackend, Devices: []gpu.Device{
		{Index: 0, UUID: "GPU-0", Name: "Test GPU", MemoryTotal: coretest.TestGPUMemory},
		{Index: 1, UUID: "GPU-1", Name: "Test GPU", MemoryTotal: coretest.TestGPUMemory},
	}}, nil
}

func newTestClient(t *testing.T, clock *clock.Fake, who domain.Identity) *Client {
	t.Helper()
	path := filepath.Join(t.TempDir(), "chronos.db")
	return clientAt(path, clock, who)
}

func clientAt(path string, clock *clock.Fake, who domain.Identity) *Client {
	return clientOn(bolt.New(path), clock, who)
}

// clientOn is a client of the test GPUs on any store.
func clientOn(s storage.Store, clock *clock.Fake, who domain.Identity) *Client {
	opts := Options{Ledger: s, Devices: testDevices, As: &who}
	if clock != nil {
		opts.Clock = clock
	}
	return NewClient(opts)
}
