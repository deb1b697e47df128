package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/monitor"
)

// The monitor's log keeps the fields scripts read, with the act's own time.
func TestActLogger(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 30, 9, 15, 42, 123456789, time.UTC)
	signalled := monitor.Act{Time: at, Kind: domain.EventSignalled, Partition: 7, User: "carol", UID: 1003, PID: 4242, Detail: "SIGTERM to python: booking #7 expired"}
	refused := monitor.Act{Time: at, Kind: domain.EventDenied, Detail: "needs root"}

	var out bytes.Buffer
	logAct, err := actLogger(&out, "json")
	require.NoError(t, err)
	logAct(signalled)
	logAct(refused)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Len(t, lines, 2)
	var got map[string]any
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &got))
	require.Equal(t, map[string]any{"time": "2026-11-30T09:15:42.123456789Z", "level": "INFO", "kind": "signalled",
		"booking": 7.0, "partition": 7.0, "user": "carol", "uid": 1003.0, "pid": 4242.0, "detail": "SIGTERM to python: booking #7 expired"}, got)
	var back monitor.Act // what a script reading the old fields gets
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &back))
	require.Equal(t, signalled, back)
	got = nil
	require.NoError(t, json.Unmarshal([]byte(lines[1]), &got))
	require.Equal(t, map[string]any{"time": "2026-11-30T09:15:42.123456789Z", "level": "WARN", "kind": "denied", "detail": "needs root"}, got)

	out.Reset()
	logAct, err = actLogger(&out, "text")
	require.NoError(t, err)
	logAct(signalled)
	require.Equal(t, `time=2026-11-30T09:15:42.123Z level=INFO detail="SIGTERM to python: booking #7 expired" kind=signalled booking=7 partition=7 user=carol uid=1003 pid=4242`+"\n", out.String())

	_, err = actLogger(&out, "xml")
	var usage usageError
	require.ErrorAs(t, err, &usage)
}

// slowMonitor stands in for the monitor's loop: it takes a while to stop.
type slowMonitor struct {
	stopped atomic.Bool
	err     error
}

func (m *slowMonitor) Run(ctx context.Context) error {
	<-ctx.Done()
	time.Sleep(50 * time.Millisecond) // finishing an act
	m.stopped.Store(true)
	return m.err
}

// The app waits for its monitor to stop before it returns, and reports the
// monitor's error next to its own.
func TestBesideMonitorWaitsAndReports(t *testing.T) {
	t.Parallel()
	m := &slowMonitor{err: errors.New("ledger gone")}
	appErr := errors.New("screen gone")
	err := besideMonitor(context.Background(), m, func() error { return appErr })
	require.True(t, m.stopped.Load(), "returned before the monitor stopped")
	require.ErrorIs(t, err, appErr)
	require.ErrorIs(t, err, m.err)
	require.Contains(t, err.Error(), "the monitor stopped: ledger gone")

	m = &slowMonitor{}
	require.NoError(t, besideMonitor(context.Background(), m, func() error { return nil }))
	require.True(t, m.stopped.Load())
}
