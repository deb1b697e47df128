package main

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core/clock"
)

// shiftFile moves the clock of the processes a test starts with its Env
// (the binary is built with the testclock tag; see core/clock): each
// Advance adds to the duration written in the file they read, so their
// time jumps ahead at once, timers included. The test's own process, and
// so the in-process cli, keeps its clock: do in-process setup before the
// first Advance, and read results through the binary after.
type shiftFile struct {
	t    testing.TB
	path string

	mu  sync.Mutex
	now time.Duration
}

// newShiftFile writes the file, at no shift, in dir: a directory every uid
// the test runs the binary as may read.
func newShiftFile(t testing.TB, dir string) *shiftFile {
	t.Helper()
	s := &shiftFile{t: t, path: filepath.Join(dir, "clock-shift")}
	s.write()
	return s
}

// Env is what a process needs to follow the shift.
func (s *shiftFile) Env() []string { return []string{"CHRONOS_TEST_CLOCK_FILE=" + s.path} }

// Advance moves the shifted clocks ahead by d and returns the total shift.
func (s *shiftFile) Advance(d time.Duration) time.Duration {
	s.t.Helper()
	require.Positive(s.t, d, "a shifted clock only goes forward")
	s.mu.Lock()
	defer s.mu.Unlock()
	s.now += d
	s.write()
	return s.now
}

// write replaces the file whole (temporary file, then rename), so that a
// reader never sees half a duration.
func (s *shiftFile) write() {
	s.t.Helper()
	tmp := s.path + ".tmp"
	require.NoError(s.t, os.WriteFile(tmp, []byte(s.now.String()+"\n"), 0o644))
	require.NoError(s.t, os.Rename(tmp, s.path))
}

// clockSetBack is the environment that sets a process's clock back by d
// from this test's, for good (CHRONOS_TEST_CLOCK_OFFSET, on top of the
// offset the whole run may have).
func clockSetBack(t testing.TB, d time.Duration) []string {
	t.Helper()
	var offset time.Duration
	if v := os.Getenv("CHRONOS_TEST_CLOCK_OFFSET"); v != "" {
		var err error
		offset, err = time.ParseDuration(v)
		require.NoError(t, err)
	}
	return []string{"CHRONOS_TEST_CLOCK_OFFSET=" + (offset - d).String()}
}

// clockShift is how far this process's clock (and the binary's, which runs
// in the same environment) is ahead of the kernel's, which date(1) and
// file times read: CHRONOS_TEST_CLOCK_OFFSET in a testclock build, else 0.
func clockShift() time.Duration {
	return clock.Until(clock.Kernel, clock.System().Now()).Round(time.Millisecond)
}
