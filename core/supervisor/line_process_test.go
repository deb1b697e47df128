package supervisor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/core/admission"
	"github.com/chronos-gpu/chronos/core/coretest"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/core/servicetest"
	"github.com/chronos-gpu/chronos/storage/storetest"
)

// playRunWaiter is chronos run --wait as the command line runs it — it
// catches SIGINT, SIGTERM and SIGHUP and passes them to Run, which would
// send them on to its command — and it signals itself SIGTERM the moment
// it has joined the line.
func playRunWaiter(c *core.Client) int {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	_, err := Run(context.Background(), c, RunOptions{
		Command: []string{"sh", "-c", "echo ran"}, Stdout: os.Stdout, Signals: sigs,
		Request: core.Request{Device: 0, Memory: human.Fraction(0.5), Duration: time.Hour}, Wait: &admission.WaitOptions{},
		Say: func(format string, _ ...any) {
			if strings.HasPrefix(format, "waiting in line") {
				_ = syscall.Kill(os.Getpid(), syscall.SIGTERM)
				time.Sleep(200 * time.Millisecond) // delivered
			}
		},
	})
	if errors.Is(err, context.Canceled) {
		return coretest.RoleLeft
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return coretest.RoleFailed
	}
	return coretest.RoleOK
}

// A signal passed to run --wait as it joins the line takes its request
// out of the line, and the command never runs. (Listening only once in
// line, it lost such a signal to main's handler and waited on.)
func TestRunWaitSignalledAsItJoins(t *testing.T) {
	t.Parallel()
	storetest.Each(t, testRunWaitSignalledAsItJoins)
}

func testRunWaitSignalledAsItJoins(t *testing.T, open storetest.Opener) {
	s := open()
	r := servicetest.ClientOn(s, nil, coretest.Root)
	_, err := r.Create(core.Request{Device: 0, Memory: human.Fraction(1), Duration: time.Hour})
	require.NoError(t, err)
	cmd := coretest.RoleCmd(t, "runwait", s.String(), "")
	var out strings.Builder
	cmd.Stdout = &out
	require.NoError(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		require.Equal(t, coretest.RoleLeft, coretest.ExitCode(err))
	case <-time.After(15 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("run --wait waited on in line after SIGTERM (then killed: %v)", <-done)
	}
	require.NotContains(t, out.String(), "ran")
	line, err := r.Queue()
	require.NoError(t, err)
	require.Empty(t, line)
}
