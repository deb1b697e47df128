package core

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core/admission"
	"github.com/chronos-gpu/chronos/core/coretest"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/storage/bolt"
)

// The client's Context is what its ledger calls run under: once it ends
// (the command's Ctrl-C) a call is cut short and writes nothing, but a
// waiter stopped by it still takes its request out of the line.
func TestClientContextEndsItsLedgerCalls(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "chronos.db")
	r := clientAt(path, nil, coretest.Root)
	_, err := r.Create(Request{Device: 0, Memory: human.Fraction(1), Duration: time.Hour})
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(context.Background())
	c := NewClient(Options{Ledger: bolt.New(path), Devices: testDevices, As: &coretest.Alice, Context: ctx})
	_, entry, err := c.Enqueue(Request{Device: 0, Memory: human.Fraction(0.5), Duration: time.Hour}, admission.WaitOptions{})
	require.NoError(t, err)
	require.NotNil(t, entry)

	cancel()
	_, err = c.Create(Request{Device: 1, Memory: human.Fraction(0.5), Duration: time.Hour})
	require.ErrorIs(t, err, context.Canceled)
	_, err = c.List(true)
	require.ErrorIs(t, err, context.Canceled)
	mine, err := r.List(true)
	require.NoError(t, err)
	require.Len(t, mine, 1, "the cut-short create booked nothing")

	_, err = c.Wait(ctx, entry.ID, nil)
	require.ErrorIs(t, err, context.Canceled)
	req, err := r.LineRequest(entry.ID)
	require.NoError(t, err)
	require.Equal(t, domain.Cancelled, req.State)
	require.Equal(t, "its waiter stopped waiting", req.Reason)
}
