package keeper

import (
	"context"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/core/coretest"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/storage"
)

// A member's RemoteStore reads the ledger as the keeper reads it: what
// root wrote, a ledger many frames long whole, the snapshot it holds kept
// (not sent again) while the ledger is unchanged and read again once it
// changed; it writes nothing; with no keeper it says so.
func TestRemoteStoreReadsThroughTheKeeper(t *testing.T) {
	t.Parallel()
	k := startKeeper(t)
	_, err := k.root.Create(core.Request{Device: 0, Memory: human.Memory{Fraction: 0.25}, Duration: time.Hour})
	require.NoError(t, err)
	require.NoError(t, k.root.Ledger().Update(context.Background(), func(tx *storage.Tx) error {
		for range 200 {
			if err := tx.AddEvent(domain.Event{Time: k.clk.Now(), Kind: domain.EventPolicy, Detail: strings.Repeat("y", 1000)}); err != nil {
				return err
			}
		}
		return nil
	}))

	r := NewRemoteStore(k.sock, "etcd://lab")
	read := func() (parts []domain.Partition, events int) {
		t.Helper()
		require.NoError(t, r.View(context.Background(), func(tx *storage.Tx) error {
			var err error
			if parts, err = tx.Partitions(); err != nil {
				return err
			}
			evs, err := tx.Events(0, 0)
			events = len(evs)
			return err
		}))
		return parts, events
	}
	parts, events := read()
	require.Len(t, parts, 1)
	require.Equal(t, "root", parts[0].User)
	require.Equal(t, 201, events, "more than three frames' worth, read whole")
	held, version := r.snap, r.Version()
	require.NotEmpty(t, version)
	read()
	require.Same(t, held, r.snap, "unchanged: the snapshot held is read again")
	require.Equal(t, 1, k.srv.snapshotReads(), "and the keeper read the ledger whole once")

	_, err = k.root.Create(core.Request{Device: 1, Memory: human.Memory{Fraction: 0.5}, Duration: time.Hour})
	require.NoError(t, err)
	parts, _ = read()
	require.Len(t, parts, 2)
	require.NotEqual(t, version, r.Version())
	require.Equal(t, 2, k.srv.snapshotReads())

	err = r.Update(context.Background(), func(*storage.Tx) error { return nil })
	require.ErrorIs(t, err, core.ErrGuarded)
	require.ErrorIs(t, err, storage.ErrReadOnly)
	require.ErrorIs(t, r.Publish(context.Background(), "gpu1", []byte("{}"), time.Minute), core.ErrGuarded)
	statuses, err := r.Present(context.Background())
	require.NoError(t, err)
	require.Empty(t, statuses, "a ledger file has no hosts' statuses")

	down := NewRemoteStore(filepath.Join(t.TempDir(), "none.sock"), "etcd://lab")
	require.ErrorIs(t, down.View(context.Background(), func(*storage.Tx) error { return nil }), ErrDown)
	_, err = down.Present(context.Background())
	require.ErrorIs(t, err, ErrDown)
}

func (s *Server) snapshotReads() int {
	s.snaps.mu.Lock()
	defer s.snaps.mu.Unlock()
	return s.snaps.reads
}

// A keeper that takes the connection and never answers (stopped, say)
// holds a member's read no longer than the timeout, which says so.
func TestRemoteStoreGivesUpOnASilentKeeper(t *testing.T) {
	t.Parallel()
	sock := filepath.Join(t.TempDir(), "silent.sock")
	ln, err := net.Listen("unix", sock)
	require.NoError(t, err)
	held := make(chan net.Conn, 1)
	t.Cleanup(func() {
		_ = ln.Close()
		if conn := <-held; conn != nil {
			_ = conn.Close()
		}
	})
	go func() {
		conn, _ := ln.Accept()
		held <- conn // held open, unanswered
	}()
	clk := coretest.NewFakeClock()
	r := &RemoteStore{Path: sock, Where: "etcd://lab", Clock: clk, Timeout: time.Minute}
	done := make(chan error, 1)
	go func() { done <- r.View(context.Background(), func(*storage.Tx) error { return nil }) }()
	require.True(t, clk.WaitTimers(1, 10*time.Second), "no timeout set")
	clk.Advance(time.Minute)
	select {
	case err := <-done:
		require.ErrorIs(t, err, ErrSlow)
		require.EqualError(t, err, "the keeper did not answer in time: ask root to check chronos-monitor (1m0s)")
	case <-time.After(10 * time.Second): // the test's own patience
		t.Fatal("the read outlived its timeout")
	}
}
