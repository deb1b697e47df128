package coretest

import (
	"context"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core/clock"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/storage"
	"github.com/chronos-gpu/chronos/storage/bolt"
	"github.com/chronos-gpu/chronos/storage/etcd"
)

// NewFakeClock is a clock for tests of deadlines, at a fixed instant: no
// test's expectation depends on today's date. Everything a test checks
// against it must read it too (a client on the system clock sees another
// time).
func NewFakeClock() *clock.Fake {
	return clock.NewFake(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
}

// AdvanceUntil moves clk on by step at each look until cond holds, and
// fails when it has not within (real time: the goroutines that clk drives
// need some).
func AdvanceUntil(t *testing.T, clk *clock.Fake, step, within time.Duration, cond func() bool, msgAndArgs ...any) {
	t.Helper()
	require.Eventually(t, func() bool {
		if cond() {
			return true
		}
		clk.Advance(step)
		return false
	}, within, 10*time.Millisecond, msgAndArgs...)
}

// SettleAt sets clk to at (if it is not there yet), then lets it run on
// at about the pace of real time until cond holds, failing when it has not
// within. It is for what needs the other hosts' statuses to be current by
// clk (a monitor takes over a lapsed host's bookings only while every host
// still publishing was heard from in the last few seconds): a clock moved
// on by seconds at each look outruns statuses that travel through etcd in
// real time, on a loaded machine for good.
func SettleAt(t *testing.T, clk *clock.Fake, at time.Time, within time.Duration, cond func() bool, msgAndArgs ...any) {
	t.Helper()
	if clk.Now().Before(at) {
		clk.Set(at)
	}
	last := clock.Kernel.Now()
	require.Eventually(t, func() bool {
		if cond() {
			return true
		}
		now := clock.Kernel.Now()
		clk.Advance(now.Sub(last))
		last = now
		return false
	}, within, 10*time.Millisecond, msgAndArgs...)
}

// IsClosed says whether ch is closed, without waiting.
func IsClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

const TestGPUMemory = 80 << 30

// TestBackend names the GPUs tests book on: stand-ins for real ones, which
// any ledger records (simulated GPUs are not recorded in a shared one).
const TestBackend = "test"

var (
	Alice = domain.Identity{UID: 1001, User: "alice"}
	Bob   = domain.Identity{UID: 1002, User: "bob"}
	Root  = domain.Identity{UID: 0, User: "root"}
)

// OpenSpec opens a store by its String(): a file's path or an etcd URL, as
// a process started by a test gets it.
func OpenSpec(spec string) storage.Store {
	if !etcd.IsURL(spec) {
		return bolt.New(spec)
	}
	cfg, err := etcd.ParseURL(spec)
	if err != nil {
		panic(err)
	}
	s, err := etcd.Open(cfg)
	if err != nil {
		panic(err)
	}
	return s
}

func FileBytes(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return b
}

// CountingStore counts the transactions run on a real ledger.
type CountingStore struct {
	storage.Store
	Views, Updates atomic.Int64
}

func (s *CountingStore) View(ctx context.Context, fn func(*storage.Tx) error) error {
	s.Views.Add(1)
	return s.Store.View(ctx, fn)
}

func (s *CountingStore) Update(ctx context.Context, fn func(*storage.Tx) error) error {
	s.Updates.Add(1)
	return s.Store.Update(ctx, fn)
}

// LetAllWrite lets other uids' waiters write a ledger file once it exists;
// an etcd ledger needs nothing.
func LetAllWrite(t *testing.T, s storage.Store) {
	if l, ok := s.(*bolt.Ledger); ok {
		require.NoError(t, os.Chmod(l.Path, 0o666))
	}
}
