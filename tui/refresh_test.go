package tui

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core/view"
	"github.com/chronos-gpu/chronos/storage"
)

func TestOtherProcessesChangesAppear(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 2)
	m := w.model(80, 24)
	require.Empty(t, m.bookings.Table.Rows)
	w.book(bob, 1, "25%", 0, time.Hour)
	update(t, m, ledgerChangedMsg{})
	require.Len(t, m.bookings.Table.Rows, 1)
	require.Contains(t, m.View(), "bob")
}

// A stream of change notices is read at once, then at most once per
// changeSpacing, and nothing is lost at the end of the stream.
func TestChangeNoticesAreSpaced(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 2)
	m := w.model(80, 24)
	reads := w.ledger.views.Load()
	update(t, m, ledgerChangedMsg{})
	require.Greater(t, w.ledger.views.Load(), reads, "the first notice is read at once")

	w.book(bob, 1, "25%", 0, time.Hour)
	reads = w.ledger.views.Load()
	update(t, m, ledgerChangedMsg{})
	require.Equal(t, reads, w.ledger.views.Load(), "a notice within the spacing waits")
	require.Empty(t, m.bookings.Table.Rows)

	update(t, m, changeSpacingMsg{})
	require.Greater(t, w.ledger.views.Load(), reads)
	require.Len(t, m.bookings.Table.Rows, 1, "the held notice is read when the spacing ends")

	reads = w.ledger.views.Load()
	_, cmd := m.Update(changeSpacingMsg{})
	require.Nil(t, cmd, "no notice came meanwhile: nothing to read")
	require.Equal(t, reads, w.ledger.views.Load())
}

// The spacing grows with the cost of the last read: a read that took long
// (a ledger of many recent bookings, a loaded etcd) waits ten times as
// long before the next a notice asks for, up to changeSpacingMax.
func TestSlowReadsAreSpacedFurther(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 1)
	m := w.model(80, 24)
	spacing := func(took time.Duration) time.Duration {
		t.Helper()
		msg := read(m.opts.Client, false, m.noticesRead)
		require.NoError(t, msg.err)
		msg.took = took
		update(t, m, msg)
		_, cmd := m.Update(changeSpacingMsg{}) // any spacing under way ends
		run(t, m, cmd)
		_, cmd = m.Update(ledgerChangedMsg{})
		for _, msg := range collect(cmd) {
			if tm, ok := msg.(timerMsg); ok {
				if _, ok := tm.msg.(changeSpacingMsg); ok {
					return tm.after
				}
			}
		}
		t.Fatal("a change notice's read set no spacing")
		return 0
	}
	require.Equal(t, changeSpacing, spacing(3*time.Millisecond))
	require.Equal(t, 3*time.Second, spacing(300*time.Millisecond))
	require.Equal(t, changeSpacingMax, spacing(2*time.Second))
	require.Equal(t, changeSpacing, spacing(time.Millisecond), "a quick read brings the spacing back")
}

func TestTickRefreshesAndCountsDown(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 1)
	w.book(alice, 0, "50%", 0, time.Hour)
	m := w.model(80, 24)
	require.Contains(t, m.View(), "1h00m")
	w.clock.Set(t0.Add(90 * time.Second))
	require.Contains(t, m.View(), "59m", "countdowns come from the clock, not from a refresh")

	w.clock.Set(t0.Add(2 * time.Second))
	update(t, m, tickMsg(t0))
	require.Equal(t, 2, m.gpus.Traces[0].Len(), "a new reading at a new instant")

	w.clock.Set(t0.Add(time.Hour + time.Minute))
	update(t, m, tickMsg(t0))
	require.Contains(t, m.View(), "expired")
}

// Countdowns show minutes until a booking's last ten minutes, then seconds:
// far from their end, rows change once a minute.
func TestCountdownsShowSecondsOnlyNearTheEnd(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		left time.Duration
		want string
	}{
		{3*24*time.Hour + 4*time.Hour + 9*time.Minute + 1, "3d04h10m"},
		{2*time.Hour + 4*time.Minute + 30*time.Second, "2h05m"},
		{2 * time.Hour, "2h00m"},
		{59*time.Minute + 1, "1h00m"},
		{10*time.Minute + time.Second, "11m"},
		{10 * time.Minute, "10m00s"},
		{9*time.Minute + 59*time.Second + 1, "10m00s"},
		{61 * time.Second, "1m01s"},
		{400 * time.Millisecond, "1s"},
		{-time.Second, "0s"},
	} {
		require.Equal(t, tc.want, view.TimeLeft(tc.left), "%s", tc.left)
	}

	w := newWorld(t, 1)
	w.book(alice, 0, "50%", 0, time.Hour)
	m := w.model(80, 24)
	view := m.View()
	w.clock.Set(t0.Add(20 * time.Second))
	require.Equal(t, view, m.View(), "20 s later nothing on screen changed")
	w.clock.Set(t0.Add(50*time.Minute + 30*time.Second))
	require.Contains(t, m.View(), "9m30s")
	w.clock.Set(t0.Add(55*time.Minute + 30*time.Second))
	require.Contains(t, m.View(), "4m30s")
	require.Contains(t, m.View(), "ending soon")
}

func TestCountdownStillFormats(t *testing.T) {
	t.Parallel()
	require.Equal(t, "0:00:01", view.Countdown(400*time.Millisecond))
	require.Equal(t, "1d+2:03:04", view.Countdown(26*time.Hour+3*time.Minute+4*time.Second))
	require.Equal(t, "0:00:00", view.Countdown(-time.Second))
}

func TestMonitorActsAndErrorsShowInTheStatusLine(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 1)
	acts := make(chan string, 1)
	opts := w.options()
	opts.Acts = acts
	m := New(opts)
	update(t, m, tea.WindowSizeMsg{Width: 80, Height: 24})
	acts <- "#3 expired; SIGTERM sent to pid 4242 (bob)"
	close(acts) // the app waits for the next act after each: none comes
	reads := w.ledger.views.Load()
	update(t, m, waitActCmd(acts)())
	require.Contains(t, m.View(), "#3 expired; SIGTERM")
	require.Greater(t, w.ledger.views.Load(), reads, "an act changed the ledger: it is read")
	update(t, m, clearStatusMsg{seq: m.status.seq})
	require.Empty(t, m.status.text)

	update(t, m, sampleMsg{err: errors.New("nvml: GPU is lost")})
	require.True(t, m.status.isErr)
	require.Contains(t, m.View(), "GPU is lost")
	update(t, m, ledgerMsg{err: fmt.Errorf("%w: another chronos process has held it for 3s", storage.ErrBusy)})
	require.Contains(t, m.View(), "the ledger is busy")
}

// tickReads is what one tick at the clock's time reads, counted by the
// GPUs and the ledger themselves.
func tickReads(t *testing.T, w *world, m *Model) []string {
	t.Helper()
	samples, views := w.gpus.samples.Load(), w.ledger.views.Load()
	update(t, m, tickMsg(t0))
	var reads []string
	if w.gpus.samples.Load() > samples {
		reads = append(reads, "gpus")
	}
	if w.ledger.views.Load() > views {
		reads = append(reads, "ledger")
	}
	return reads
}

func TestTickReadsOnlyWhatIsDue(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 1)
	w.book(alice, 0, "50%", 0, 5*time.Second)
	w.book(alice, 0, "10%", 0, time.Hour)
	m := w.model(80, 24)

	for _, step := range []struct {
		at   time.Duration
		want []string
	}{
		{time.Second, nil},
		{2 * time.Second, []string{"gpus"}},
		{3 * time.Second, nil},
		{5 * time.Second, []string{"gpus", "ledger"}}, // the first booking ended
		{6 * time.Second, nil},
		{14 * time.Second, []string{"gpus"}},
		{15 * time.Second, []string{"ledger"}}, // the safety net
	} {
		w.clock.Set(t0.Add(step.at))
		require.Equal(t, step.want, tickReads(t, w, m), "at %s", step.at)
	}
	require.Contains(t, m.View(), "expired")
}

// The app's watch of the ledger lives as long as the command that runs
// the app: cancelling the command's context ends it.
func TestWatchEndsWithTheCommandsContext(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	opts := w.options()
	opts.Context = ctx
	m := New(opts)
	changes := watchCmd(m.ctx, w.ledger, time.Millisecond)().(watchingMsg).changes
	cancel()
	closed := make(chan struct{})
	go func() {
		for range changes {
		}
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("the watch outlived the command's context")
	}
}
