package supervisor

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/core/clock"
	"github.com/chronos-gpu/chronos/core/coretest"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/gpu"
	"github.com/chronos-gpu/chronos/storage"
	"github.com/chronos-gpu/chronos/storage/etcd/etcdtest"
)

// TestMain lets the test binary play a process of chronos run's: tests
// start it again with CHRONOS_TEST_ROLE set (coretest.RoleCmd), or as a
// signal logger, so that what is signalled is a real OS process.
func TestMain(m *testing.M) {
	if len(os.Args) == 3 && os.Args[1] == "signal-logger" {
		os.Exit(signalLogger(os.Args[2]))
	}
	if role := os.Getenv("CHRONOS_TEST_ROLE"); role != "" {
		c := core.NewClient(core.Options{Ledger: coretest.OpenSpec(os.Getenv("CHRONOS_TEST_DB")), Devices: testDevices, Host: os.Getenv("CHRONOS_TEST_HOST")})
		switch role {
		case "runwait":
			os.Exit(playRunWaiter(c))
		case "uncaught":
			os.Exit(playUncaught(c, os.Getenv("CHRONOS_TEST_ARG")))
		}
		os.Exit(coretest.RoleFailed)
	}
	code := m.Run()
	etcdtest.StopShared()
	os.Exit(code)
}

// testDevices is a DeviceSource of two 80 GiB GPUs (as core's tests have).
func testDevices() (core.Listing, error) {
	return core.Listing{Backend: coretest.TestBackend, Devices: []gpu.Device{
		{Index: 0, UUID: "GPU-0", Name: "Test GPU", MemoryTotal: coretest.TestGPUMemory},
		{Index: 1, UUID: "GPU-1", Name: "Test GPU", MemoryTotal: coretest.TestGPUMemory},
	}}, nil
}

// clientOn is a client of the test GPUs on any store; clk nil is the
// system clock.
func clientOn(s storage.Store, clk *clock.Fake, who domain.Identity) *core.Client {
	opts := core.Options{Ledger: s, Devices: testDevices, As: &who}
	if clk != nil {
		opts.Clock = clk
	}
	return core.NewClient(opts)
}

// simClient is a client of a simulated backend's GPUs.
func simClient(s storage.Store, sim *gpu.Sim, who domain.Identity, clk clock.Clock) *core.Client {
	return core.NewClient(core.Options{Ledger: s, As: &who, Clock: clk, Devices: func() (core.Listing, error) {
		devs, err := sim.Devices()
		return core.Listing{Backend: sim.Name(), Devices: devs}, err
	}})
}

// eventKinds are the kinds of a booking's events, oldest first.
func eventKinds(t *testing.T, c *core.Client, partition uint64) []string {
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
