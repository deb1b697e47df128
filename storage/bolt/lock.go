package bolt

import (
	"errors"
	"os"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/chronos-gpu/chronos/core/clock"
)

var errLockTimeout = errors.New("lock timeout")

// kernelWaiter admits one goroutine of this process at a time to a blocking
// lock call.
var kernelWaiter = make(chan struct{}, 1)

// lockLedger takes the ledger file's lock for one operation: flock, shared
// for a reader and exclusive for a writer, as bbolt itself takes it (so a
// chronos that only knows bbolt's lock still excludes correctly). bbolt's own
// flock on the same open file then succeeds at once. Two things are added to
// bbolt's way of locking:
//
//   - A waiter blocks in the kernel and is woken when the lock is released,
//     where bbolt polls every 50 ms: under contention every wait became a
//     multiple of 50 ms, and a waiter could miss its turn for seconds.
//   - A gate in front of the flock, so that readers cannot starve a writer:
//     an open file description lock on the file's first byte (independent of
//     flock on Linux). A writer holds the gate exclusively from before its
//     flock until it closes the file; a reader holds it shared only while it
//     takes its flock. Without the gate, readers that overlap one another
//     keep a shared flock held without a break, and a writer waits out its
//     whole timeout.
//
// Closing the file releases both locks. The timeout is kept by giving up on
// the blocked wait: it goes on in a goroutine on a duplicate descriptor,
// which releases whatever it gets once the holder lets go.
func lockLedger(f *os.File, exclusive bool, timeout time.Duration) error {
	fd := int(f.Fd())
	gate := gateLock(exclusive)
	gated, atGate := true, false // whether the gate is used here; whether this call holds it
	switch err := unix.FcntlFlock(uintptr(fd), unix.F_OFD_SETLK, &gate); {
	case err == nil:
		atGate = true
		if err := flock(fd, exclusive, false); err == nil {
			openGate(fd, exclusive)
			return nil
		} else if !held(err) {
			return err
		}
	case errors.Is(err, unix.EINVAL), errors.Is(err, unix.ENOLCK), errors.Is(err, unix.EOPNOTSUPP):
		// No OFD locks here: flock alone is still correct.
		gated = false
		if err := flock(fd, exclusive, false); err == nil || !held(err) {
			return err
		}
	case held(err):
		// A writer is in or waiting: the wait below queues at the gate.
	default:
		return err
	}
	// Contended: wait in the kernel, on a duplicate of the descriptor (the
	// same open file, so the locks it gets are ours). One goroutine of a
	// process waits in the kernel at a time, the others in line behind it:
	// each waiting system call holds an OS thread, which Go keeps for ever.
	// A writer past the gate keeps it while it waits for the readers before
	// it, so no reader comes in after it. But nobody keeps the gate while in
	// line behind this process's goroutine in the kernel, which may be
	// waiting for that very gate: each would wait for the other until one
	// timed out.
	timer := clock.Kernel.NewTimer(timeout) // how long to wait on the kernel
	defer timer.Stop()
	select {
	case kernelWaiter <- struct{}{}:
	default:
		if atGate {
			leaveGate(fd)
			atGate = false
		}
		select {
		case kernelWaiter <- struct{}{}:
		case <-timer.C():
			return errLockTimeout
		}
	}
	dup, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		<-kernelWaiter
		return err
	}
	var abandoned atomic.Bool
	done := make(chan error, 1)
	go func() {
		defer func() { <-kernelWaiter }()
		defer unix.Close(dup)
		err := error(nil)
		if gated && !atGate {
			err = retryEINTR(func() error { return unix.FcntlFlock(uintptr(dup), unix.F_OFD_SETLKW, &gate) })
		}
		if err == nil && !abandoned.Load() {
			err = flock(dup, exclusive, true)
		}
		if err == nil && gated {
			openGate(dup, exclusive)
		}
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-timer.C():
		abandoned.Store(true)
		return errLockTimeout
	}
}

func gateLock(exclusive bool) unix.Flock_t {
	g := unix.Flock_t{Type: unix.F_RDLCK, Whence: 0, Start: 0, Len: 1}
	if exclusive {
		g.Type = unix.F_WRLCK
	}
	return g
}

// openGate lets the next one through once a reader has its flock; a writer
// keeps the gate until it closes the file.
func openGate(fd int, exclusive bool) {
	if !exclusive {
		leaveGate(fd)
	}
}

func leaveGate(fd int) {
	g := unix.Flock_t{Type: unix.F_UNLCK, Whence: 0, Start: 0, Len: 1}
	_ = unix.FcntlFlock(uintptr(fd), unix.F_OFD_SETLK, &g)
}

func flock(fd int, exclusive, wait bool) error {
	how := unix.LOCK_SH
	if exclusive {
		how = unix.LOCK_EX
	}
	if !wait {
		how |= unix.LOCK_NB
	}
	return retryEINTR(func() error { return unix.Flock(fd, how) })
}

func held(err error) bool {
	return errors.Is(err, unix.EWOULDBLOCK) || errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EACCES)
}

func retryEINTR(fn func() error) error {
	for {
		if err := fn(); !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}
