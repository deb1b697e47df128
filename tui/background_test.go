package tui

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core/coretest"
	"github.com/chronos-gpu/chronos/core/domain"
)

// fakeChronos is a program in the place of chronos that says how it was
// started and in which session, then waits as `create --wait` would.
const fakeChronos = `#!/bin/sh
echo "args: $*"
echo "session: $(cut -d' ' -f6 /proc/$$/stat)"
exec sleep 600
`

// b at the quit question hands the app's request to a background waiter:
// a real process, started in a session of its own (closing the terminal
// does not end it) with its output in a log under the user's state
// directory. It is made the request's waiter in the ledger before the app
// quits, so the request keeps its place; the app closes and names its pid
// and log.
func TestQuitCanKeepWaitingInTheBackground(t *testing.T) {
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state) // not parallel: the environment is the process's
	self := filepath.Join(t.TempDir(), "chronos")
	coretest.WriteExecutable(t, self, []byte(fakeChronos))

	w := newWorld(t, 1)
	w.book(bob, 0, "80%", 0, time.Hour)
	opts := w.options()
	opts.Self, opts.SelfArgs = self, []string{"--db=" + w.ledger.String()}
	m := New(opts)
	update(t, m, tea.WindowSizeMsg{Width: 120, Height: 40})
	run(t, m, sampleCmd(w.gpus))
	run(t, m, loadCmd(w.client, false, 0))
	m = press(t, m, "n", "50%", "enter", "enter")
	line := waiting(t, w.client)
	require.Len(t, line, 1)
	id := line[0].ID
	require.Equal(t, os.Getpid(), line[0].Waiter.PID, "the app waits for it")

	require.False(t, quitKey(t, m, "q"))
	require.Contains(t, m.View(), "[b] keep waiting in the background")
	_, cmd := m.Update(keyMsg("b"))
	msgs := collect(cmd)
	require.Len(t, msgs, 1)
	bg, ok := msgs[0].(backgroundMsg)
	require.True(t, ok, "%#v", msgs[0])
	require.NoError(t, bg.err)
	require.Len(t, bg.waiters, 1)
	pid := bg.waiters[0].pid
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	_, cmd = m.Update(bg)
	require.IsType(t, tea.QuitMsg{}, cmd(), "the app closes")

	r, err := w.client.LineRequest(id)
	require.NoError(t, err)
	require.Equal(t, domain.Waiting, r.State, "the same request, still in line")
	require.Equal(t, pid, r.Waiter.PID, "its waiter is the background process")
	after := waiting(t, w.client)
	require.Len(t, after, 1)
	require.Equal(t, line[0].Position, after[0].Position, "in the same place")

	log := bg.waiters[0].log
	require.Equal(t, filepath.Join(state, "chronos"), filepath.Dir(log))
	require.Contains(t, m.farewell, "Request #"+strconv.FormatUint(id, 10)+" keeps waiting in the background: pid "+strconv.Itoa(pid)+", log "+log)
	var said string
	require.Eventually(t, func() bool {
		b, _ := os.ReadFile(log)
		said = string(b)
		return strings.Contains(said, "session:")
	}, 10*time.Second, 20*time.Millisecond, "the waiter writes to its log")
	require.Contains(t, said, "args: --db="+w.ledger.String()+" create 0 50% 1h --wait --request "+strconv.FormatUint(id, 10))
	require.Contains(t, said, "session: "+strconv.Itoa(pid), "a session of its own")
	require.NoError(t, syscall.Kill(pid, 0), "it outlives the app")
}
