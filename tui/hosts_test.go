package tui

import (
	"context"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/gpu"
	"github.com/chronos-gpu/chronos/storage"
	"github.com/chronos-gpu/chronos/storage/etcd"
	"github.com/chronos-gpu/chronos/storage/etcd/etcdtest"
	"github.com/chronos-gpu/chronos/storage/storetest"
)

func TestMain(m *testing.M) { etcdtest.Main(m) }

// labHost is one host of a lab: a client acting as it on the shared
// ledger, and its simulated GPUs.
func labHost(s storage.Store, host string, who core.Identity) (*core.Client, *gpu.Sim) {
	sim := gpu.NewSim(gpu.SimOptions{Count: 2})
	// The GPUs as stand-ins for real ones: a ledger many hosts share
	// records no simulated GPUs but root's.
	c := core.NewClient(core.Options{Ledger: s, Host: host, As: &who, Devices: func() (string, []gpu.Device, error) {
		d, err := sim.Devices()
		return "test", d, err
	}})
	return c, sim
}

// The app on one host shows the lab: this host's GPUs first, then every
// other host's from what its monitor publishes, bookings with a HOST
// column; a host whose monitor stops fades to "not seen", its bookings
// kept.
func TestAppShowsEveryHost(t *testing.T) {
	open := storetest.Etcd(t, etcdtest.Shared(t))
	here, hereSim := labHost(open(), "gpu1", alice)
	thereStore := open()
	there, thereSim := labHost(thereStore, "gpu2", bob)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	go core.NewMonitor(there, core.MonitorOptions{Backend: thereSim}).Run(ctx)

	_, err := there.Create(core.Request{Device: 1, Memory: core.Fraction(0.5), Duration: time.Hour})
	require.NoError(t, err)
	_, err = here.Create(core.Request{Host: "gpu2", Device: 0, Memory: core.Fraction(0.25), Duration: time.Hour})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		hosts, err := here.Hosts()
		return err == nil && len(hosts) == 1 && hosts[0].Live()
	}, 10*time.Second, 50*time.Millisecond)

	m := New(Options{Client: here, Backend: hereSim, Host: "gpu1", Mode: "time-sliced"})
	m = update(t, m, tea.WindowSizeMsg{Width: 120, Height: 40})
	m = run(t, m, sampleCmd(hereSim))
	m = run(t, m, loadCmd(here))
	m = run(t, m, hostsCmd(here))
	screen := ansi.Strip(m.View())
	require.Contains(t, screen, "gpu2  simulated · 2 GPUs")
	require.Regexp(t, `gpu2:0 .*bob|gpu2:0 `, screen)
	require.Contains(t, screen, "gpu2:1 ")
	require.Regexp(t, `ID\s+HOST\s+OWNER`, screen)
	require.Regexp(t, `#1\s+gpu2\s+bob`, screen)
	require.Regexp(t, `#2\s+gpu2\s+alice`, screen)
	require.Empty(t, m.gpus.segs, "no booking holds this host's GPUs")
	require.Len(t, m.gpus.hostSegs["gpu2"], 2)

	// gpu2's monitor stops and its connection goes, as if the host died.
	stop()
	require.NoError(t, thereStore.(*etcd.Store).Close())
	require.Eventually(t, func() bool {
		hosts, err := here.Hosts()
		return err == nil && !hosts[0].Live()
	}, 15*time.Second, 100*time.Millisecond)
	m = run(t, m, hostsCmd(here))
	m = run(t, m, loadCmd(here))
	screen = ansi.Strip(m.View())
	require.Contains(t, screen, "gpu2  not seen")
	require.Contains(t, screen, "gpu2:1 ")
	require.Regexp(t, `#1\s+gpu2\s+bob`, screen, "its bookings stand")
}
