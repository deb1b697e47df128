package tui

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"
	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/core/admission"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/ledger"
	"github.com/chronos-gpu/chronos/gpu"
	"github.com/chronos-gpu/chronos/gpu/procfs"
)

func TestPrintable(t *testing.T) { // serial: AllocsPerRun
	for in, want := range map[string]string{
		"python train.py --lr 0.1":    "python train.py --lr 0.1",
		"naïve ✓ 日本":                  "naïve ✓ 日本",
		"\x1b]2;pwned\x07":            `\x1b]2;pwned\x07`,
		"\x1b[2J\x1b[H":               `\x1b[2J\x1b[H`,
		"a\x9b2Jb":                    `a\x9b2Jb`, // a lone C1 byte: not UTF-8
		"a\u009b2Jb":                  `a\u009b2Jb`,
		"tab\there\nnew\rline\x7f":    `tab\x09here\x0anew\x0dline\x7f`,
		"evil\u202etxt.exe\u2028next": `evil\u202etxt.exe\u2028next`,
	} {
		require.Equal(t, want, Printable(in), "%q", in)
	}
	plain := "python train.py"
	require.Equal(t, 0.0, testing.AllocsPerRun(100, func() { _ = Printable(plain) }))
}

// hostile is text another user controls, made to act on a terminal: set
// the window title, clear the screen, a C1 CSI as a lone byte and as a
// character.
const hostile = "\x1b]2;pwned\x07\x1b[2J\x9b2J\u009b2J"

// noTerminalControl fails when out holds anything a terminal would obey:
// C0 controls but the newlines between lines, C1 controls, or bytes that are
// not UTF-8.
func noTerminalControl(t *testing.T, out string) {
	t.Helper()
	require.True(t, utf8.ValidString(out), "bytes that are not UTF-8 reached the output: %q", out)
	for i, r := range out {
		bad := r < 0x20 && r != '\n' || r == 0x7f || r >= 0x80 && r <= 0x9f
		require.False(t, bad, "%q reached the output at byte %d: %q", r, i, out)
	}
}

// A process whose command line and a user whose name hold escape sequences
// reach the app, `list` and `stats` only as visible text.
func TestAnotherUsersTextCannotReachTheTerminal(t *testing.T) {
	prev := lipgloss.ColorProfile()
	lipgloss.SetColorProfile(termenv.Ascii)
	t.Cleanup(func() { lipgloss.SetColorProfile(prev) })

	w := newWorld(t, 2)
	mallory := domain.Identity{UID: 2666, User: "mal\x1b[2Jlory"}
	p := w.book(mallory, 0, "20%", time.Minute, time.Hour)
	// A real process whose argv holds the sequences ($0 of the shell).
	proc := exec.Command("sh", "-c", "sleep 60; :", hostile)
	require.NoError(t, proc.Start())
	t.Cleanup(func() { proc.Process.Kill(); proc.Wait() })
	require.Eventually(t, func() bool {
		info, err := procfs.ReadProc(proc.Process.Pid)
		return err == nil && strings.Contains(info.Command, "pwned")
	}, 2*time.Second, 5*time.Millisecond)
	w.sim.Attach(0, proc.Process.Pid, 1<<30)

	m := w.model(120, 30)
	noTerminalControl(t, m.View())
	require.Contains(t, m.View(), `mal\x1b[2Jlory`)
	m = press(t, m, "tab")
	noTerminalControl(t, m.View())
	require.Contains(t, m.View(), `\x1b]2;pwned`)
	// A monitor's act naming the process, in the status line.
	acts := make(chan string, 1)
	acts <- "unbooked: pid 7: " + hostile
	m = run(t, m, waitActCmd(acts))
	noTerminalControl(t, m.View())
	require.Contains(t, m.View(), `unbooked: pid 7: \x1b]2;pwned`)

	var list bytes.Buffer
	require.NoError(t, WriteBookings(&list, []core.Partition{p}, t0, time.Minute, TableOptions{Wide: true}))
	noTerminalControl(t, list.String())
	require.Contains(t, list.String(), `mal\x1b[2Jlory`)

	s, err := w.sim.Sample()
	require.NoError(t, err)
	var stats bytes.Buffer
	require.NoError(t, WriteStats(&stats, core.Stats{Sample: s, Processes: admission.Attribute(s, nil, t0)}))
	noTerminalControl(t, stats.String())
	require.Contains(t, stats.String(), `\x1b]2;pwned\x07\x1b[2J\x9b2J\u009b2J`)
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
	require.NoError(t, WriteStats(&out, st))
	require.Contains(t, out.String(), "GPU 3  gone: not on this machine now, yet 1 live booking(s) hold 30% (24.0 GiB) of it")
}
