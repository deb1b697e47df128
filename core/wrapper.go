package core

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/chronos-gpu/chronos/gpu"
	"github.com/chronos-gpu/chronos/storage"
)

// A `chronos run` killed with SIGKILL cannot release its booking, and its
// command, in a process group of its own, may outlive it. So the booking
// records the wrapper, and a monitor on the same machine (same boot, same pid
// namespace: only there do the pids mean the same processes) that finds the
// wrapper gone marks the booking orphaned while the command's process group
// or any GPU process of the booking remains, and releases it once none does.
// Releasing while the command still ran would hand its memory to someone
// else under a running job.

// machine is this process's view of pids: the host, the boot and the pid
// namespace.
type machine struct{ host, boot, pidNS string }

var thisMachine = sync.OnceValue(func() machine {
	host, _ := os.Hostname()
	boot, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	ns, _ := os.Readlink("/proc/self/ns/pid")
	return machine{host: host, boot: strings.TrimSpace(string(boot)), pidNS: ns}
})

// thisWrapper names the running process as the wrapper of a command whose
// process group is group.
func thisWrapper(group int) (storage.Wrapper, error) {
	m := thisMachine()
	start, err := gpu.ProcStartTime(os.Getpid())
	if err != nil {
		return storage.Wrapper{}, err
	}
	if m.host == "" || m.boot == "" || m.pidNS == "" {
		return storage.Wrapper{}, errors.New("cannot tell this machine's host, boot and pid namespace")
	}
	return storage.Wrapper{Host: m.host, Boot: m.boot, PIDNamespace: m.pidNS, PID: os.Getpid(), Start: start, Group: group}, nil
}

// recordWrapper stores w in the live booking id.
func (c *Client) recordWrapper(id uint64, w storage.Wrapper) error {
	return c.ledger.Update(func(tx *storage.Tx) error {
		p, err := tx.Partition(id)
		if err != nil || p.State != storage.Live {
			return err
		}
		p.Wrapper = &w
		return tx.PutPartition(&p)
	})
}

// wrapperFate is what a monitor can tell of a booking's wrapper.
type wrapperFate int

const (
	wrapperUnknown wrapperFate = iota // none, or on another machine or namespace
	wrapperAlive
	wrapperGoneCommandRuns // the wrapper is gone, its command's group is not
	wrapperGone            // the wrapper and its command's group are gone
)

// fateOf looks at p's wrapper from this machine.
func fateOf(p storage.Partition) wrapperFate {
	w, m := p.Wrapper, thisMachine()
	switch {
	case w == nil || w.Host != m.host:
		return wrapperUnknown
	case w.Boot != m.boot:
		return wrapperGone // the machine rebooted since: every pid then is gone
	case w.PIDNamespace != m.pidNS:
		return wrapperUnknown
	}
	switch start, err := gpu.ProcStartTime(w.PID); {
	case err == nil && start == w.Start:
		return wrapperAlive
	case err != nil && !errors.Is(err, gpu.ErrProcessGone):
		return wrapperUnknown // /proc could not say: never release on a guess
	}
	// Signal 0 tests for the group: ESRCH means no process is left in it;
	// EPERM means one is, of another user.
	if w.Group > 0 && !errors.Is(unix.Kill(-w.Group, 0), unix.ESRCH) {
		return wrapperGoneCommandRuns
	}
	return wrapperGone
}

// wrapperDied says whether p, live and not yet marked orphaned, was made by
// a `chronos run` on this machine that is gone. It costs a read of /proc
// for a booking with a wrapper here, nothing for others.
func wrapperDied(p storage.Partition) bool {
	if p.State != storage.Live || p.Wrapper == nil || !p.Orphaned.IsZero() {
		return false
	}
	f := fateOf(p)
	return f == wrapperGone || f == wrapperGoneCommandRuns
}

// orphans sorts the live bookings whose wrapper died on this machine: those
// to release (nothing of the command runs: no process in its group and no
// GPU process of the booking in atts) and those to mark orphaned.
func orphans(parts []storage.Partition, atts []Attribution, now time.Time) (release, mark []uint64) {
	onGPU := map[uint64]bool{}
	for _, a := range atts {
		onGPU[a.Partition] = true
	}
	for _, p := range parts {
		if !p.LiveAt(now) || p.Wrapper == nil {
			continue // ended ones are expiry's to act on
		}
		switch fateOf(p) {
		case wrapperGone:
			if onGPU[p.ID] {
				if p.Orphaned.IsZero() {
					mark = append(mark, p.ID)
				}
			} else {
				release = append(release, p.ID)
			}
		case wrapperGoneCommandRuns:
			if p.Orphaned.IsZero() {
				mark = append(mark, p.ID)
			}
		}
	}
	return release, mark
}

// wrapperText names a wrapper in events.
func wrapperText(w *storage.Wrapper) string {
	return fmt.Sprintf("its chronos run (pid %d on %s)", w.PID, w.Host)
}

// settleOrphans releases and marks, inside tx, what orphans found, checking
// each booking again: another monitor may have got there first.
func (m *Monitor) settleOrphans(tx *storage.Tx, release, mark []uint64, now time.Time) ([]Act, error) {
	var acts []Act
	settle := func(id uint64, kind storage.EventKind, why string, change func(*storage.Partition) bool) error {
		p, err := tx.Partition(id)
		if err != nil {
			return err
		}
		if !p.LiveAt(now) || p.Wrapper == nil || !change(&p) {
			return nil
		}
		if err := tx.PutPartition(&p); err != nil {
			return err
		}
		a := Act{Time: now, Kind: kind, Partition: id, User: p.User, Detail: wrapperText(p.Wrapper) + why}
		acts = append(acts, a)
		return m.record(tx, a)
	}
	for _, id := range release {
		err := settle(id, storage.EventReleased, " is gone and nothing of its command runs any more", func(p *storage.Partition) bool {
			p.State, p.Ended = storage.Released, now
			return true
		})
		if err != nil {
			return nil, err
		}
	}
	for _, id := range mark {
		err := settle(id, storage.EventOrphaned, " is gone but its command still runs; the booking is released when nothing of it does", func(p *storage.Partition) bool {
			if !p.Orphaned.IsZero() {
				return false
			}
			p.Orphaned = now
			return true
		})
		if err != nil {
			return nil, err
		}
	}
	return acts, nil
}
