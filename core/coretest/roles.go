package coretest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core/clock"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/storage"
)

// Exit statuses of a role process.
const (
	RoleOK         = 0
	RoleFailed     = 1
	RoleOverbooked = 3
	RoleNotOwner   = 4
)

// RoleEnv is this process's environment and extra, for the test binary
// started again to play a role. Under -race its exit would sleep a second
// (GORACE's atexit_sleep_ms) for racing goroutines to be caught: a role's
// have all ended by then, and tests wait for many roles' exits.
func RoleEnv(extra ...string) []string {
	gorace := strings.TrimSpace(os.Getenv("GORACE") + " atexit_sleep_ms=0")
	return append(append(os.Environ(), "GORACE="+gorace), extra...)
}

func RoleCmd(t testing.TB, role, db, arg string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = RoleEnv("CHRONOS_TEST_ROLE="+role, "CHRONOS_TEST_DB="+db, "CHRONOS_TEST_ARG="+arg)
	cmd.Stderr = os.Stderr
	return cmd
}

// HoldLedger starts a process that takes the ledger's write lock and
// returns once it has it; it lets go when marker+".go" appears.
func HoldLedger(t *testing.T, db string) (holder *exec.Cmd, marker string) {
	t.Helper()
	marker = filepath.Join(filepath.Dir(db), "hold")
	holder = RoleCmd(t, "hold", db, marker)
	require.NoError(t, holder.Start())
	t.Cleanup(func() { _ = holder.Process.Kill(); _ = holder.Wait() })
	require.Eventually(t, func() bool { _, err := os.Stat(marker + ".held"); return err == nil }, 10*time.Second, 5*time.Millisecond)
	return holder, marker
}

// PlayHold is the "hold" role that HoldLedger starts: it takes s's write
// lock, says so with a marker file, and keeps it until told to let go (or
// 10 s): the test stops it meanwhile.
func PlayHold(s storage.Store, marker string) int {
	err := s.Update(context.Background(), func(tx *storage.Tx) error {
		if err := os.WriteFile(marker+".held", nil, 0o600); err != nil {
			return err
		}
		for range 1000 {
			if _, err := os.Stat(marker + ".go"); err == nil {
				break
			}
			<-clock.Kernel.After(10 * time.Millisecond)
		}
		return tx.AddEvent(domain.Event{Kind: "held"})
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return RoleFailed
	}
	return RoleOK
}

func ExitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

// OtherUserDir skips unless the test runs as root; else it makes a directory
// every user may write, with a copy of the test binary in it, so that a
// process started as another uid can reach both.
func OtherUserDir(t *testing.T) (dir, bin string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to run a second process as another uid")
	}
	dir, err := os.MkdirTemp("", "chronos-uid-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	require.NoError(t, os.Chmod(dir, 0o777))
	bin = filepath.Join(dir, "role")
	data, err := os.ReadFile(os.Args[0])
	require.NoError(t, err)
	WriteExecutable(t, bin, data)
	return dir, bin
}

// RoleLeft is a waiter's exit status when it left the line unbooked.
const RoleLeft = 5
