package bolt

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/storage"
)

// A ctx that has ended (Ctrl-C) stops a transaction before it starts:
// fn does not run, and nothing is written, not even the file.
func TestEndedContextStartsNoTransaction(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "chronos.db")
	l := New(path)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ran := false
	fn := func(*storage.Tx) error { ran = true; return nil }
	require.ErrorIs(t, l.Update(ctx, fn), context.Canceled)
	require.ErrorIs(t, l.View(ctx, fn), context.Canceled)
	require.False(t, ran)
	_, err := os.Stat(path)
	require.ErrorIs(t, err, os.ErrNotExist)

	addOne(t, l)
	require.ErrorIs(t, l.View(ctx, fn), context.Canceled)
	require.False(t, ran)
}
