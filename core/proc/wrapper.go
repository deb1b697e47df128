package proc

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/gpu/procfs"
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

// ThisProcess names process pid of this machine.
func ThisProcess(pid int) (domain.Process, error) {
	m := thisMachine()
	start, err := procfs.ProcStartTime(pid)
	if err != nil {
		return domain.Process{}, err
	}
	if m.host == "" || m.boot == "" || m.pidNS == "" {
		return domain.Process{}, errors.New("cannot tell this machine's host, boot and pid namespace")
	}
	return domain.Process{Host: m.host, Boot: m.boot, PIDNamespace: m.pidNS, PID: pid, Start: start}, nil
}

// ThisWrapper names the running process as the wrapper of a command whose
// process group is group.
func ThisWrapper(group int) (domain.Wrapper, error) {
	p, err := ThisProcess(os.Getpid())
	return domain.Wrapper{Process: p, Group: group}, err
}

// processFate is what this machine can tell of a recorded process.
type processFate int

const (
	ProcessUnknown  processFate = iota // on another machine or pid namespace, or /proc could not say
	ProcessAlive                       // it runs
	ProcessGone                        // it ended
	ProcessRebooted                    // its machine rebooted since: every pid of then is gone
)

// FateOfProcess looks at p from this machine. Only a process of this
// machine (its host, boot and pid namespace) is looked up; of any other
// nothing is known.
func FateOfProcess(p domain.Process) processFate {
	m := thisMachine()
	switch {
	case p.Host != m.host:
		return ProcessUnknown
	case p.Boot != m.boot:
		return ProcessRebooted
	case p.PIDNamespace != m.pidNS:
		return ProcessUnknown
	}
	switch start, err := procfs.ProcStartTime(p.PID); {
	case err == nil && start == p.Start:
		return ProcessAlive
	case err != nil && !errors.Is(err, procfs.ErrProcessGone):
		return ProcessUnknown // /proc could not say: never act on a guess
	}
	return ProcessGone
}

// wrapperFate is what a monitor can tell of a booking's wrapper.
type wrapperFate int

const (
	WrapperUnknown wrapperFate = iota // none, or on another machine or namespace
	WrapperAlive
	WrapperGoneCommandRuns // the wrapper is gone, its command's group is not
	WrapperGone            // the wrapper and its command's group are gone
)

// FateOf looks at p's wrapper from this machine.
func FateOf(p domain.Partition) wrapperFate {
	w := p.Wrapper
	if w == nil {
		return WrapperUnknown
	}
	switch FateOfProcess(w.Process) {
	case ProcessUnknown:
		return WrapperUnknown
	case ProcessAlive:
		return WrapperAlive
	case ProcessRebooted:
		return WrapperGone
	}
	// Signal 0 tests for the group: ESRCH means no process is left in it;
	// EPERM means one is, of another user.
	if w.Group > 0 && !errors.Is(unix.Kill(-w.Group, 0), unix.ESRCH) {
		return WrapperGoneCommandRuns
	}
	return WrapperGone
}

// WrapperDied says whether p, live and not yet marked orphaned, was made by
// a `chronos run` on this machine that is gone. It costs a read of /proc
// for a booking with a wrapper here, nothing for others; another user's is
// root's to judge (keepsRecordsOf).
func WrapperDied(p domain.Partition) bool {
	if p.State != domain.Live || p.Wrapper == nil || !p.Orphaned.IsZero() || !KeepsRecordsOf(RealRoot(), p.UID) {
		return false
	}
	f := FateOf(p)
	return f == WrapperGone || f == WrapperGoneCommandRuns
}

// WrapperText names a wrapper in events.
func WrapperText(w *domain.Wrapper) string {
	return fmt.Sprintf("its chronos run (pid %d on %s)", w.PID, w.Host)
}
