package main

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/core/clock"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/core/monitor"
	"github.com/chronos-gpu/chronos/core/proc"
	"github.com/chronos-gpu/chronos/gpu"
	"github.com/chronos-gpu/chronos/storage/bolt"
)

// noSignals lets a monitor act without signalling anything.
type noSignals struct{}

func (noSignals) Signal(int, uint64, syscall.Signal) error { return nil }

// recordPastHour has a monitor watch the simulated GPUs through the hour
// before now, on a clock of its own, as monitors would have: nobody's
// booking on GPU 1, made 65 minutes ago, does nothing all along; ours on
// GPU 0, made 56 minutes ago for an hour, was warned a minute ago that it
// ends in 5 minutes.
//
// "Now" is 5 seconds into the current minute of the binary's clock, which
// may be up to a minute ago: what the app draws of the last minutes (an
// idle stretch up to now, its length in whole minutes) depends on where in
// its minute the recording ends, so it ends at the same place whatever the
// time of day. It returns the environment that sets the app's clock back
// to match (CHRONOS_TEST_CLOCK_OFFSET; the binary has the testclock tag):
// the app starts 5 s past the recording's last minute, and the drawing
// stays the same for the next 55 s however slowly the app starts.
func recordPastHour(t *testing.T, db string) (appClock []string) {
	t.Helper()
	real := clock.System().Now() // the binary's clock: shifted in a testclock build
	now := real.Truncate(time.Minute).Add(5 * time.Second)
	if now.After(real) {
		now = now.Add(-time.Minute)
	}
	appClock = clockSetBack(t, real.Sub(now))
	at := clock.NewFake(now.Add(-65 * time.Minute))
	sim := gpu.NewSim(gpu.SimOptions{Count: 2, Now: at.Now})
	devices := func() (core.Listing, error) {
		d, err := sim.Devices()
		return core.Listing{Backend: sim.Name(), Devices: d}, err
	}
	client := func(id domain.Identity) *core.Client {
		return core.NewClient(core.Options{Ledger: bolt.New(db), Devices: devices, Clock: at, As: &id})
	}
	book := func(id domain.Identity, device int, d time.Duration) {
		_, err := client(id).Create(core.Request{Device: device, Memory: human.Fraction(0.25), Duration: d})
		require.NoError(t, err)
	}
	book(domain.Identity{UID: 65534, User: "nobody"}, 1, 3*time.Hour)
	mon := monitor.New(client(proc.CurrentIdentity()), monitor.Options{Backend: sim, Signaller: noSignals{}})
	for at.Set(now.Add(-time.Hour)); at.Now().Before(now); at.Advance(15 * time.Second) {
		if at.Now().Equal(now.Add(-56 * time.Minute)) {
			book(proc.CurrentIdentity(), 0, time.Hour)
		}
		_, err := mon.Tick()
		require.NoError(t, err)
	}
	return appClock
}

// A freshly opened app shows a GPU's last hour at once, from what monitors
// recorded in the ledger: enter on a booking opens its GPU, the booking
// that did nothing for 50 minutes says so, ←/→ go to the other GPU, esc
// back. And the app's monitor tells its user, on the notice line, that
// their booking ends soon.
func TestAppHistoryAndNotices(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "chronos.db")
	appClock := recordPastHour(t, db)
	env := append([]string{"CHRONOS_DB=" + db, "CHRONOS_BACKEND=sim", "CHRONOS_SIM_GPUS=2", "GOCOVERDIR=" + coverDir, "PS1=$ "}, appClock...)
	s := newTmux(t, 80, 24, env...)
	s.keys(chronosBin, "Enter")
	s.waitFor("Bookings (2)")
	scr := s.waitFor("⚠")
	require.Contains(t, scr, "your booking #2: ends in 5m (GPU 0)", "a monitor that starts tells of the last two minutes' notices")
	s.waitFor("GPU 1 ") // the first reading of the GPUs

	// The second row: nobody's, on GPU 1, ending last.
	s.keys("j", "Enter")
	scr = s.waitFor("idle 50m")
	require.Contains(t, scr, "GPU 1  Simulated H100 80GB")
	require.Regexp(t, `#1 nobody│━+░ idle 50m ░+`, scr)
	require.NotContains(t, scr, "#2 root", "GPU 0's booking")
	s.keys("Right")
	scr = s.waitFor("#2 root") // once it has read the ledger
	require.Contains(t, scr, "GPU 0  Simulated")
	s.keys("d")
	require.Eventually(t, func() bool { return !strings.Contains(s.screen(), "⚠") }, patience, 50*time.Millisecond)
	s.keys("Escape")
	s.waitFor("Bookings (2)")
	s.keys("q")
}
