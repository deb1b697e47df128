package monitor

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

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
	err := Beside(context.Background(), m, func() error { return appErr })
	require.True(t, m.stopped.Load(), "returned before the monitor stopped")
	require.ErrorIs(t, err, appErr)
	require.ErrorIs(t, err, m.err)
	require.Contains(t, err.Error(), "the monitor stopped: ledger gone")

	m = &slowMonitor{}
	require.NoError(t, Beside(context.Background(), m, func() error { return nil }))
	require.True(t, m.stopped.Load())
}
