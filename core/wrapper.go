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

// thisProcess names process pid of this machine.
func thisProcess(pid int) (storage.Process, error) {
	m := thisMachine()
	start, err := gpu.ProcStartTime(pid)
	if err != nil {
		return storage.Process{}, err
	}
	if m.host == "" || m.boot == "" || m.pidNS == "" {
		return storage.Process{}, errors.New("cannot tell this machine's host, boot and pid namespace")
	}
	return storage.Process{Host: m.host, Boot: m.boot, PIDNamespace: m.pidNS, PID: pid, Start: start}, nil
}

// thisWrapper names the running process as the wrapper of a command whose
// process group is group.
func thisWrapper(group int) (storage.Wrapper, error) {
	p, err := thisProcess(os.Getpid())
	return storage.Wrapper{Process: p, Group: group}, err
}

// processFate is what this machine can tell of a recorded process.
type processFate int

const (
	processUnknown  processFate = iota // on another machine or pid namespace, or /proc could not say
	processAlive                       // it runs
	processGone                        // it ended
	processRebooted                    // its machine rebooted since: every pid of then is gone
)

// fateOfProcess looks at p from this machine. Only a process of this
// machine (its host, boot and pid namespace) is looked up; of any other
// nothing is known.
func fateOfProcess(p storage.Process) processFate {
	m := thisMachine()
	switch {
	case p.Host != m.host:
		return processUnknown
	case p.Boot != m.boot:
		return processRebooted
	case p.PIDNamespace != m.pidNS:
		return processUnknown
	}
	switch start, err := gpu.ProcStartTime(p.PID); {
	case err == nil && start == p.Start:
		return processAlive
	case err != nil && !errors.Is(err, gpu.ErrProcessGone):
		return processUnknown // /proc could not say: never act on a guess
	}
	return processGone
}

// recordWrapper stores w in the live booking id.
func (c *Client) recordWrapper(id uint64, w storage.Wrapper) error {
	return c.ledger.Update(c.ctx, func(tx *storage.Tx) error {
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
	w := p.Wrapper
	if w == nil {
		return wrapperUnknown
	}
	switch fateOfProcess(w.Process) {
	case processUnknown:
		return wrapperUnknown
	case processAlive:
		return wrapperAlive
	case processRebooted:
		return wrapperGone
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
// for a booking with a wrapper here, nothing for others; another user's is
// root's to judge (keepsRecordsOf).
func wrapperDied(p storage.Partition) bool {
	if p.State != storage.Live || p.Wrapper == nil || !p.Orphaned.IsZero() || !keepsRecordsOf(RealRoot(), p.UID) {
		return false
	}
	f := fateOf(p)
	return f == wrapperGone || f == wrapperGoneCommandRuns
}

// orphans sorts the live bookings whose wrapper died on this machine: those
// to release (nothing of the command runs: no process in its group and no
// GPU process of the booking in atts) and those to mark orphaned. Only
// the bookings of users this monitor keeps (root: everyone's) are looked at.
func orphans(parts []storage.Partition, atts []Attribution, now time.Time, root bool) (release, mark []uint64) {
	onGPU := map[uint64]bool{}
	for _, a := range atts {
		onGPU[a.Partition] = true
	}
	for _, p := range parts {
		if !p.LiveAt(now) || p.Wrapper == nil || !keepsRecordsOf(root, p.UID) {
			continue // ended ones are expiry's to act on; others' are root's
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
func (m *Monitor) settleOrphans(tx *storage.Tx, release, mark []uint64, now time.Time, policy func() (Policy, error)) ([]Act, error) {
	var acts []Act
	settle := func(id uint64, kind storage.EventKind, why string, change func(*storage.Partition) bool) error {
		p, err := tx.Partition(id)
		if err != nil {
			return err
		}
		if !p.LiveAt(now) || p.Wrapper == nil || !keepsRecordsOf(m.root, p.UID) || !change(&p) {
			return nil
		}
		put := tx.PutPartition
		if p.State == storage.Released {
			// Charged for the time held, like any end.
			put = func(p *storage.Partition) error { return endBooking(tx, p, storage.Released, now, policy) }
		}
		if err := put(&p); err != nil {
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
