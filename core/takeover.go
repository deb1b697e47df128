package core

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/chronos-gpu/chronos/core/admission"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/proc"
	"github.com/chronos-gpu/chronos/core/setup"
	"github.com/chronos-gpu/chronos/storage"
)

// TakeOver makes process pid (0: this one) the waiter of request id, which
// waits in line: the request keeps its place and its ETA, and from then on
// leaves the line when that process is gone rather than the one that
// joined it. The app hands its requests on this way when the person quits
// but wants to keep waiting (a detached `chronos create --wait --request`).
// Its owner or root may, and a process not root's must be the caller's own.
func (c *Client) TakeOver(id uint64, pid int) (domain.Request, error) {
	if pid <= 0 {
		pid = os.Getpid()
	}
	if err := ownProcess(pid); err != nil {
		return domain.Request{}, err
	}
	waiter, err := proc.ThisProcess(pid)
	if err != nil {
		return domain.Request{}, fmt.Errorf("name the waiting process %d: %w", pid, err)
	}
	var r domain.Request
	err = c.ledger.Update(c.ctx, func(tx *storage.Tx) error {
		if r, err = tx.Request(id); err != nil {
			if errors.Is(err, storage.ErrNotFound) {
				return fmt.Errorf("%w: %d", domain.ErrNoRequest, id)
			}
			return err
		}
		if !c.me.MayChange(r.UID) {
			return fmt.Errorf("%w: request %d belongs to %s; only they or root may wait for it", domain.ErrNotOwner, id, r.User)
		}
		if r.State != domain.Waiting {
			return fmt.Errorf("%w: request %d is %s", domain.ErrLeftLine, id, r.State)
		}
		r.Waiter = waiter
		return tx.PutRequest(&r)
	})
	return r, err
}

// WaitFor makes this process the waiter of request id, in its place (see
// TakeOver), tells joined so, and waits for it (see Wait).
func (c *Client) WaitFor(ctx context.Context, id uint64, joined, onChange func(admission.QueueEntry)) (*Partition, error) {
	r, err := c.TakeOver(id, 0)
	if err != nil {
		return nil, err
	}
	if joined != nil {
		joined(admission.QueueEntry{Request: r})
	}
	return c.Wait(ctx, id, onChange)
}

// LineRequest reads request id of the waiting line, in whatever state.
func (c *Client) LineRequest(id uint64) (domain.Request, error) { return c.Request(id) }

// ownProcess refuses, for a caller who is not root, a process that is not
// theirs: the kernel says whose it is.
func ownProcess(pid int) error {
	euid := os.Geteuid()
	if euid == 0 {
		return nil
	}
	st, err := os.Stat("/proc/" + strconv.Itoa(pid))
	if err != nil {
		return fmt.Errorf("process %d: %w", pid, err)
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); !ok || int(sys.Uid) != euid {
		return fmt.Errorf("%w: process %d is not yours", domain.ErrNotOwner, pid)
	}
	return nil
}

// BackgroundWaitLog is where a request's background waiter, started at
// at, logs: under the user's state directory, a file per waiter.
func BackgroundWaitLog(id uint64, at time.Time) (string, error) {
	dir, err := setup.UserStateDir()
	if err != nil {
		// A home that cannot be written (nobody's /nonexistent, a system
		// user's): a private directory of the user's in the temporary one.
		if dir, err = privateTempDir(); err != nil {
			return "", err
		}
	}
	return filepath.Join(dir, fmt.Sprintf("wait-%d-%s.log", id, at.UTC().Format("20060102T150405"))), nil
}

// privateTempDir is a directory of this user's alone in the temporary
// directory, made 0700 if it is not there. One that is there must be this
// user's, a directory (not a link) that nobody else can write: another
// user may have made the name first.
func privateTempDir() (string, error) {
	uid := os.Getuid()
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("chronos-%d", uid))
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", fmt.Errorf("create %s: %w", dir, err)
	}
	st, err := os.Lstat(dir)
	if err != nil {
		return "", err
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !st.IsDir() || !ok || int(sys.Uid) != uid || st.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("%s is not a private directory of uid %d (mode %s): remove it, or set XDG_STATE_HOME", dir, uid, st.Mode())
	}
	return dir, nil
}
