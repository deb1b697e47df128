package proc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/chronos-gpu/chronos/gpu/procfs"
)

var (
	// ErrProcessGone means the process exited, or its PID now names another
	// process: nothing was signalled.
	ErrProcessGone = errors.New("process is gone")
	// ErrNoPermission means this user may not signal that process; a monitor
	// running as root will.
	ErrNoPermission = errors.New("no permission to signal")
)

// Signaller sends a signal to one exact process: the pid, and only while it
// is still the process that started at start (clock ticks since boot).
type Signaller interface {
	Signal(pid int, start uint64, sig syscall.Signal) error
}

// PidfdSignaller signals through a pidfd: once the pidfd is open it names
// that process for good, so checking its start time after opening rules out
// a reused PID. Kernels without pidfds (before 5.3) fall back to kill(2)
// after the same check, which leaves a window of microseconds.
type PidfdSignaller struct{}

// Signal implements Signaller.
func (PidfdSignaller) Signal(pid int, start uint64, sig syscall.Signal) error {
	fd, err := unix.PidfdOpen(pid, 0)
	switch {
	case errors.Is(err, unix.ESRCH):
		return fmt.Errorf("%w: pid %d", ErrProcessGone, pid)
	case errors.Is(err, unix.ENOSYS):
		fd = -1
	case err != nil:
		return fmt.Errorf("pidfd_open %d: %w", pid, err)
	}
	if fd >= 0 {
		defer unix.Close(fd)
	}
	if err := sameProcess(pid, start); err != nil {
		return err
	}
	if fd >= 0 {
		err = unix.PidfdSendSignal(fd, sig, nil, 0)
	} else {
		err = unix.Kill(pid, sig)
	}
	switch {
	case err == nil:
		return nil
	case errors.Is(err, unix.EPERM):
		return fmt.Errorf("%w %d", ErrNoPermission, pid)
	case errors.Is(err, unix.ESRCH):
		return fmt.Errorf("%w: pid %d", ErrProcessGone, pid)
	default:
		return fmt.Errorf("signal %d: %w", pid, err)
	}
}

func sameProcess(pid int, start uint64) error {
	info, err := procfs.ReadProc(pid)
	if err != nil {
		return fmt.Errorf("%w: pid %d", ErrProcessGone, pid)
	}
	if start != 0 && info.StartTime != start {
		return fmt.Errorf("%w: pid %d now names another process", ErrProcessGone, pid)
	}
	return nil
}

// Interrupted is why a wait ended when a signal ended it: in people's
// words, "interrupted by SIGTERM".
type Interrupted struct{ Signal syscall.Signal }

func (e *Interrupted) Error() string { return "interrupted by " + SignalName(e.Signal) }

// Is makes an interrupted wait match context.Canceled, as the context's
// own error does.
func (e *Interrupted) Is(target error) bool { return target == context.Canceled }

// Interruptible is parent, ended by the first signal that comes on sigs
// with an *Interrupted cause (see context.Cause) naming it: what a waiter
// says when it is stopped. sigs are the signals the caller caught
// (signal.Notify): core catches none itself, since a signal handler is the
// whole process's and only the program's top owns it. A nil sigs never
// ends ctx. stop ends ctx and stops reading sigs.
func Interruptible(parent context.Context, sigs <-chan os.Signal) (ctx context.Context, stop context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	reading := make(chan struct{})
	go func() {
		defer close(reading)
		select {
		case s := <-sigs:
			sig, _ := s.(syscall.Signal)
			cancel(&Interrupted{sig})
		case <-ctx.Done():
		}
	}()
	return ctx, func() {
		cancel(context.Canceled)
		<-reading // the next signal on sigs is the caller's again
	}
}

// WhyStopped is why ctx ended: its cause (the signal that interrupted it,
// a waiter's connection to the keeper closing), or its error.
func WhyStopped(ctx context.Context) error {
	if cause := context.Cause(ctx); cause != nil {
		return cause
	}
	return ctx.Err()
}

// SignalName is the signal's name as kill -l prints it with SIG: SIGUSR1.
func SignalName(s syscall.Signal) string {
	if n := unix.SignalName(s); n != "" {
		return n
	}
	return s.String()
}
