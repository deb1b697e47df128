package tui

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chronos-gpu/chronos/core/coretest"
	"github.com/chronos-gpu/chronos/core/view"

	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"
	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/ledger"
	"github.com/chronos-gpu/chronos/gpu"
	"github.com/chronos-gpu/chronos/gpu/procfs"
)

// A process whose command line and a user whose name hold escape sequences
// reach the app only as visible text (core/view's tests check list and
// stats).
func TestAnotherUsersTextCannotReachTheTerminal(t *testing.T) {
	prev := lipgloss.ColorProfile()
	lipgloss.SetColorProfile(termenv.Ascii)
	t.Cleanup(func() { lipgloss.SetColorProfile(prev) })

	w := newWorld(t, 2)
	mallory := domain.Identity{UID: 2666, User: "mal\x1b[2Jlory"}
	w.book(mallory, 0, "20%", time.Minute, time.Hour)
	// A real process whose argv holds the sequences ($0 of the shell).
	proc := exec.Command("sh", "-c", "sleep 60; :", coretest.Hostile)
	require.NoError(t, proc.Start())
	t.Cleanup(func() { proc.Process.Kill(); proc.Wait() })
	require.Eventually(t, func() bool {
		info, err := procfs.ReadProc(proc.Process.Pid)
		return err == nil && strings.Contains(info.Command, "pwned")
	}, 2*time.Second, 5*time.Millisecond)
	w.sim.Attach(0, proc.Process.Pid, 1<<30)

	m := w.model(120, 30)
	coretest.NoTerminalControl(t, m.View())
	require.Contains(t, m.View(), `mal\x1b[2Jlory`)
	m = press(t, m, "tab")
	coretest.NoTerminalControl(t, m.View())
	require.Contains(t, m.View(), `\x1b]2;pwned`)
	// A monitor's act naming the process, in the status line.
	acts := make(chan string, 1)
	acts <- "unbooked: pid 7: " + coretest.Hostile
	m = run(t, m, waitActCmd(acts))
	coretest.NoTerminalControl(t, m.View())
	require.Contains(t, m.View(), `unbooked: pid 7: \x1b]2;pwned`)

}

// A booking on a GPU the machine no longer has is shown, in stats and in
// the app's bookings, never dropped.
func TestBookingsOnGoneGPUsAreShown(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 4)
	w.book(bob, 3, "30%", time.Minute, time.Hour)
	devs, err := gpu.NewSim(gpu.SimOptions{Count: 2}).Devices()
	require.NoError(t, err)
	require.NoError(t, w.client.SaveInventory(ledger.InventoryOf(gpu.SimName, devs, t0)))
	w.sim = gpu.NewSim(gpu.SimOptions{Count: 2, Now: w.clock.Now})

	m := w.model(120, 30)
	require.Contains(t, m.View(), "GPU gone")
	st, err := w.client.Stats(w.sim, procfs.MPS{})
	require.NoError(t, err)
	var out bytes.Buffer
	require.NoError(t, view.WriteStats(&out, st))
	require.Contains(t, out.String(), "GPU 3  gone: not on this machine now, yet 1 live booking(s) hold 30% (24.0 GiB) of it")
}
