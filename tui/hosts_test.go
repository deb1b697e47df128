package tui

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"
	"github.com/muesli/termenv"
	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/core/clock"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/core/monitor"
	"github.com/chronos-gpu/chronos/gpu"
	"github.com/chronos-gpu/chronos/storage"
	"github.com/chronos-gpu/chronos/storage/etcd"
	"github.com/chronos-gpu/chronos/storage/etcd/etcdtest"
	"github.com/chronos-gpu/chronos/storage/storetest"
)

func TestMain(m *testing.M) { etcdtest.Main(m) }

// labHost is one host of a lab: a client acting as it on the shared
// ledger, and its simulated GPUs.
func labHost(s storage.Store, host string, who domain.Identity) (*core.Client, *gpu.Sim) {
	sim := gpu.NewSim(gpu.SimOptions{Count: 2})
	// The GPUs as stand-ins for real ones: a ledger many hosts share
	// records no simulated GPUs but root's.
	c := core.NewClient(core.Options{Ledger: s, Host: host, As: &who, Devices: func() (core.Listing, error) {
		d, err := sim.Devices()
		return core.Listing{Backend: "test", Devices: d}, err
	}})
	return c, sim
}

// The app on one host shows the lab: this host's GPUs first, then every
// other host's from what its monitor publishes, bookings with a HOST
// column; a host whose monitor stops fades to "not seen", its bookings
// kept.
func TestAppShowsEveryHost(t *testing.T) {
	t.Parallel()
	open := storetest.Etcd(t, etcdtest.Shared(t))
	here, hereSim := labHost(open(), "gpu1", alice)
	thereStore := open()
	there, thereSim := labHost(thereStore, "gpu2", bob)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	go monitor.New(there, monitor.Options{Backend: thereSim}).Run(ctx)

	_, err := there.Create(core.Request{Device: 1, Memory: human.Fraction(0.5), Duration: time.Hour})
	require.NoError(t, err)
	_, err = here.Create(core.Request{Host: "gpu2", Device: 0, Memory: human.Fraction(0.25), Duration: time.Hour})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		hosts, err := here.Hosts()
		return err == nil && len(hosts) == 1 && hosts[0].Live()
	}, 10*time.Second, 50*time.Millisecond)

	m := New(Options{Client: here, Backend: hereSim, Host: "gpu1", Mode: "time-sliced"})
	m = update(t, m, tea.WindowSizeMsg{Width: 120, Height: 40})
	m = run(t, m, sampleCmd(hereSim))
	m = run(t, m, loadCmd(here, false, 0))
	m = run(t, m, hostsCmd(here))
	screen := ansi.Strip(m.View())
	require.Contains(t, screen, "gpu2  simulated · 2 GPUs")
	require.Regexp(t, `gpu2:0 .*bob|gpu2:0 `, screen)
	require.Contains(t, screen, "gpu2:1 ")
	require.Regexp(t, `ID\s+HOST\s+OWNER`, screen)
	require.Regexp(t, `#1\s+gpu2\s+bob`, screen)
	require.Regexp(t, `#2\s+gpu2\s+alice`, screen)
	require.Empty(t, m.gpus.Segs, "no booking holds this host's GPUs")
	require.Len(t, m.gpus.HostSegs["gpu2"], 2)

	// gpu2's monitor stops and its connection goes, as if the host died.
	stop()
	require.NoError(t, thereStore.(*etcd.Store).Close())
	require.Eventually(t, func() bool {
		hosts, err := here.Hosts()
		return err == nil && !hosts[0].Live()
	}, 15*time.Second, 100*time.Millisecond)
	m = run(t, m, hostsCmd(here))
	m = run(t, m, loadCmd(here, false, 0))
	screen = ansi.Strip(m.View())
	require.Contains(t, screen, "gpu2  not seen")
	require.Contains(t, screen, "gpu2:1 ")
	require.Regexp(t, `#1\s+gpu2\s+bob`, screen, "its bookings stand")
}

// At 40 rows a lab of three hosts, four GPUs each, does not fit: the other
// two hosts share the lines left, each title saying how many of its GPUs
// are not shown, rather than the last host's GPUs vanishing unsaid.
// Regenerate with: go test ./tui -run TestGoldenHostsCut -update
func TestGoldenHostsCut(t *testing.T) {
	if elsewhereThanUTC(t) {
		return
	}
	lipgloss.SetColorProfile(termenv.Ascii)
	open := storetest.Etcd(t, etcdtest.Shared(t))
	still := clock.NewFake(t0)
	host := func(name string, who domain.Identity) (*core.Client, *gpu.Sim) {
		sim := gpu.NewSim(gpu.SimOptions{Count: 4, Now: still.Now})
		s := open()
		c := core.NewClient(core.Options{Ledger: s, Host: name, As: &who, Clock: still, Devices: func() (core.Listing, error) {
			d, err := sim.Devices()
			return core.Listing{Backend: "test", Devices: d}, err
		}})
		return c, sim
	}
	here, hereSim := host("gpu1", alice)
	for _, name := range []string{"gpu2", "gpu3"} {
		c, sim := host(name, bob)
		_, err := c.Create(core.Request{Device: 1, Memory: human.Fraction(0.5), Duration: time.Hour})
		require.NoError(t, err)
		sample, err := sim.Sample()
		require.NoError(t, err)
		st := core.HostStatus{Host: name, Time: t0, Backend: sample.Backend, Simulated: sample.Simulated}
		for _, d := range sample.Devices {
			d.Processes = nil
			st.Devices = append(st.Devices, d)
		}
		data, err := json.Marshal(st)
		require.NoError(t, err)
		require.NoError(t, c.Ledger().(storage.Presence).Publish(context.Background(), name, data, time.Minute))
	}

	m := New(Options{Client: here, Backend: hereSim, Host: "gpu1", Mode: "time-sliced", Clock: still})
	m = update(t, m, tea.WindowSizeMsg{Width: 120, Height: 40})
	m = run(t, m, sampleCmd(hereSim))
	m = run(t, m, loadCmd(here, false, 0))
	m = run(t, m, hostsCmd(here))
	screen := m.View()
	require.Contains(t, ansi.Strip(screen), "gpu3  simulated · 4 GPUs · +2 more GPUs not shown")
	golden.RequireEqual(t, []byte(screen))
}

// However few the lines, every other host is accounted for: titles while
// they fit, then a line counting the hosts and GPUs left out; a host not
// seen says how many of its GPUs are not shown before why it is not seen.
func TestHostsViewCountsWhatItLeavesOut(t *testing.T) {
	t.Parallel()
	m := newWorld(t, 1).model(80, 24)
	sim := gpu.NewSim(gpu.SimOptions{Count: 4, Now: func() time.Time { return t0 }})
	sample, err := sim.Sample()
	require.NoError(t, err)
	devices, err := sim.Devices()
	require.NoError(t, err)
	var inv domain.Inventory
	for _, d := range devices {
		inv.Devices = append(inv.Devices, domain.Device{Index: d.Index, UUID: d.UUID, Name: d.Name, MemoryTotal: d.MemoryTotal})
	}
	live := &core.HostStatus{Simulated: true, Devices: sample.Devices}
	m.gpus.SetHosts([]core.HostView{{Host: "gpu2", Status: live}, {Host: "gpu3", Inventory: inv}, {Host: "gpu4", Status: live}}, nil)
	view := func(lines int) string {
		out := m.gpus.HostsView(80, lines)
		require.LessOrEqual(t, len(out), lines)
		return ansi.Strip(strings.Join(out, "\n"))
	}
	require.Empty(t, view(0))
	require.Equal(t, "… 3 other hosts, 12 GPUs (enlarge the terminal to see them)", view(1))
	require.Equal(t, "gpu2  simulated · 4 GPUs · +4 more GPUs not shown (enlarge the terminal)\n"+
		"… 2 more hosts, 8 GPUs (enlarge the terminal to see them)", strings.TrimRight(view(2), " "))
	v := view(6) // a title and a GPU each
	require.Contains(t, v, "gpu2  simulated · 4 GPUs · +3 more GPUs not shown")
	require.Contains(t, v, "gpu3  +3 more GPUs not shown (enlarge the terminal) · not seen")
	require.Contains(t, v, "gpu4  simulated · 4 GPUs · +3 more GPUs not shown")
	require.NotContains(t, view(15), "not shown", "all fit")
}
