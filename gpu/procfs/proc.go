// Package procfs is what /proc says about the processes on a host's GPUs:
// each one's owner, command, start time, booking and CUDA environment (a
// cache of those readings for the backends), the container it runs in,
// the boot time its start ticks count from, and the MPS daemons found
// there. It knows no GPU; package gpu's backends read processes through
// it.
package procfs

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// ErrProcessGone means the process has exited (or was never there). It wraps
// os.ErrNotExist so callers may test for either.
var ErrProcessGone = fmt.Errorf("process has exited: %w", os.ErrNotExist)

// BookingEnv and PartitionEnv are the environment variables that tie a
// process to a booking; `chronos run` sets both and children inherit them.
// Either may be passed into a container (`docker run -e
// CHRONOS_BOOKING_ID`); BookingEnv wins where both are set.
const (
	BookingEnv   = "CHRONOS_BOOKING_ID"
	PartitionEnv = "CHRONOS_PARTITION_ID"
)

// RunEnv names, in a `chronos run` command's environment, the process of
// the chronos run that wraps it and signals it at its booking's end.
const RunEnv = "CHRONOS_RUN_PID"

// CUDAEnv is what a process's environment asks of CUDA: the devices it may
// see and, under MPS, the daemon that serves it and the device memory limit
// it sets. `chronos run` sets them.
type CUDAEnv struct {
	VisibleDevices string // CUDA_VISIBLE_DEVICES
	MPSPipeDir     string // CUDA_MPS_PIPE_DIRECTORY; "" means the default
	MPSMemLimit    string // CUDA_MPS_PINNED_DEVICE_MEM_LIMIT
}

// ProcInfo is what /proc says about one process.
type ProcInfo struct {
	PID int
	// UID is the owner a person knows: the real uid, or for a process in a
	// rootless container the user whose user namespace it is.
	UID  int
	User string
	// Command is the command line joined by spaces, or the kernel's name in
	// brackets ("[kworker/0:1]") when the command line is empty.
	Command string
	// PartitionID is CHRONOS_BOOKING_ID (or CHRONOS_PARTITION_ID) from the
	// process environment; "" when unset or unreadable (other users'
	// environments are private, except to root).
	PartitionID string
	// RunPID is RunEnv from the environment: the chronos run that says it
	// wraps the process; 0 when unset or unreadable. Anyone can set it.
	RunPID int
	// CUDA is what the environment asks of CUDA (empty when unreadable).
	CUDA CUDAEnv
	// StartTime is field 22 of /proc/PID/stat: clock ticks since boot.
	StartTime uint64
	// Container is the container the process runs in; zero when none.
	Container Container
	// MPSServer: the process is an MPS server, started by an MPS control
	// daemon, both from root's binaries (see isMPSServer).
	MPSServer bool
}

// ProcReader reads processes from a proc file system mounted at Root, and
// container runtimes' state files under HostRoot (/run, /var/lib). Tests
// point both at a fake tree.
type ProcReader struct {
	Root     string // "" means /proc
	HostRoot string // "" means /
}

// HostProc reads the real /proc.
var HostProc = ProcReader{Root: "/proc"}

// ReadProc reads process pid from /proc.
func ReadProc(pid int) (ProcInfo, error) {
	return HostProc.ReadProc(pid)
}

// ReadProc reads process pid. An exited process gives an error that
// matches ErrProcessGone. In the microseconds after exec the kernel has not
// yet filled in the new command line and environment; a read then sees an
// empty command line and no partition.
func (r ProcReader) ReadProc(pid int) (ProcInfo, error) {
	if pid <= 0 {
		return ProcInfo{}, fmt.Errorf("read process %d: not a valid pid", pid)
	}
	dir := filepath.Join(r.root(), strconv.Itoa(pid))
	info := ProcInfo{PID: pid}

	// stat first: it names the process (start time) even for a zombie.
	stat, err := readProcFile(dir, "stat")
	if err != nil {
		return ProcInfo{}, fmt.Errorf("read process %d: %w", pid, err)
	}
	st, err := parseStat(stat)
	if err != nil {
		return ProcInfo{}, fmt.Errorf("read process %d: %w", pid, err)
	}
	info.StartTime = st.start

	status, err := readProcFile(dir, "status")
	if err != nil {
		return ProcInfo{}, fmt.Errorf("read process %d: %w", pid, err)
	}
	info.UID, err = parseRealUID(status)
	if err != nil {
		return ProcInfo{}, fmt.Errorf("read process %d: %w", pid, err)
	}
	info.User = UserName(info.UID)

	cmdline, err := readProcFile(dir, "cmdline")
	if err != nil {
		return ProcInfo{}, fmt.Errorf("read process %d: %w", pid, err)
	}
	info.Command = joinCmdline(cmdline)
	if info.Command == "" {
		info.Command = "[" + st.comm + "]"
	}

	// Unreadable environ (another user's process) is normal, not an error;
	// a process that vanished right here still counts as gone.
	environ, err := readProcFile(dir, "environ")
	switch {
	case errors.Is(err, ErrProcessGone):
		return ProcInfo{}, fmt.Errorf("read process %d: %w", pid, err)
	case err == nil:
		info.PartitionID = envValue(environ, BookingEnv)
		if info.PartitionID == "" {
			info.PartitionID = envValue(environ, PartitionEnv)
		}
		info.RunPID, _ = strconv.Atoi(envValue(environ, RunEnv))
		info.CUDA = CUDAEnv{
			VisibleDevices: envValue(environ, "CUDA_VISIBLE_DEVICES"),
			MPSPipeDir:     envValue(environ, "CUDA_MPS_PIPE_DIRECTORY"),
			MPSMemLimit:    envValue(environ, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"),
		}
	}

	r.readContainer(dir, status, st.ppid, &info)
	info.MPSServer = r.isMPSServer(dir, st.ppid)
	return info, nil
}

// isMPSServer says whether the process in dir is an MPS server: NVML lists
// the server among a GPU's processes, with memory of its own, but it is no
// one's job — it serves every client, and stopping it stops them all. It
// counts only when its executable and its parent's (the control daemon's)
// are root's files of those names: /proc's exe link names the file actually
// run, so a user cannot pass off a program of theirs by naming or linking
// it so.
func (r ProcReader) isMPSServer(dir string, ppid int) bool {
	return rootsProgram(dir, mpsServer) && ppid > 0 &&
		rootsProgram(filepath.Join(r.root(), strconv.Itoa(ppid)), mpsControl)
}

// rootsProgram says whether the process in dir runs a file named name that
// root owns. Another user's exe link is readable only by root, so an
// ordinary user's reading says false.
func rootsProgram(dir, name string) bool {
	exe, err := os.Readlink(filepath.Join(dir, "exe"))
	if err != nil || filepath.Base(exe) != name {
		return false
	}
	st, err := os.Stat(filepath.Join(dir, "exe"))
	if err != nil || !st.Mode().IsRegular() {
		return false
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	return ok && sys.Uid == 0
}

// readContainer finds the container the process runs in, from its cgroup
// or, inside a pid namespace where the cgroup says nothing, from the
// runtime's monitor among its ancestors. A rootless container's process
// belongs to the user whose namespace it is. What cannot be read (a kernel
// without cgroups, a runtime's files root keeps to itself) stays unknown.
func (r ProcReader) readContainer(dir string, status []byte, ppid int, info *ProcInfo) {
	cgroup, _ := os.ReadFile(filepath.Join(dir, "cgroup"))
	c, found := containerFromCgroup(cgroup)
	inner := innerPID(status)
	if !found && inner != 0 {
		c, found = r.containerFromAncestors(ppid)
	}
	if !found {
		return
	}
	c.PID = inner
	r.describe(&c, ppid)
	if owner, ok := namespaceOwner(dir); ok && owner != 0 {
		c.Rootless = true
		info.UID, info.User = owner, UserName(owner)
	}
	info.Container = c
}

// innerPID is the process's pid in its own pid namespace (the last NSpid
// field), or 0 when it lives in the host's.
func innerPID(status []byte) int {
	for line := range bytes.Lines(status) {
		rest, ok := bytes.CutPrefix(line, []byte("NSpid:"))
		if !ok {
			continue
		}
		f := strings.Fields(string(rest))
		if len(f) < 2 {
			return 0
		}
		pid, err := strconv.Atoi(f[len(f)-1])
		if err != nil || pid <= 0 {
			return 0
		}
		return pid
	}
	return 0
}

// StartTime reads only the start time of pid (field 22 of /proc/PID/stat):
// with the pid it names one process, so callers can tell a reused pid.
func (r ProcReader) StartTime(pid int) (uint64, error) {
	if pid <= 0 {
		return 0, fmt.Errorf("read process %d: not a valid pid", pid)
	}
	stat, err := readProcFile(filepath.Join(r.root(), strconv.Itoa(pid)), "stat")
	if err != nil {
		return 0, fmt.Errorf("read process %d: %w", pid, err)
	}
	st, err := parseStat(stat)
	if err != nil {
		return 0, fmt.Errorf("read process %d: %w", pid, err)
	}
	return st.start, nil
}

// ProcStartTime is ProcReader.StartTime on /proc.
func ProcStartTime(pid int) (uint64, error) {
	return HostProc.StartTime(pid)
}

// Lineage is where a process stands among others, from /proc/PID/stat.
type Lineage struct {
	Parent, Group int    // its parent's pid, its process group
	Start         uint64 // clock ticks since boot
	Comm          string // the kernel's name of it
}

// ProcLineage reads process pid's Lineage from /proc.
func ProcLineage(pid int) (Lineage, error) {
	if pid <= 0 {
		return Lineage{}, fmt.Errorf("read process %d: not a valid pid", pid)
	}
	stat, err := readProcFile(filepath.Join(HostProc.root(), strconv.Itoa(pid)), "stat")
	if err != nil {
		return Lineage{}, fmt.Errorf("read process %d: %w", pid, err)
	}
	st, err := parseStat(stat)
	if err != nil {
		return Lineage{}, fmt.Errorf("read process %d: %w", pid, err)
	}
	return Lineage{Parent: st.ppid, Group: st.pgrp, Start: st.start, Comm: st.comm}, nil
}

// ProcCache remembers what /proc said about processes so that a poll costs
// one read of /proc/PID/stat per known process instead of four files.
// Owner, command and partition are fixed at exec in practice; the start
// time tells a reused pid. Not safe for concurrent use.
type ProcCache struct {
	reader ProcReader
	known  map[int]ProcInfo
	seen   map[int]bool // pids looked up since the last prune
}

func NewProcCache(r ProcReader) *ProcCache {
	return &ProcCache{reader: r, known: map[int]ProcInfo{}, seen: map[int]bool{}}
}

func (c *ProcCache) Lookup(pid int) (ProcInfo, error) {
	info, ok := c.known[pid]
	if ok && c.seen[pid] {
		return info, nil // already checked in this round (a process on several GPUs)
	}
	c.seen[pid] = true
	if ok {
		start, err := c.reader.StartTime(pid)
		if err != nil {
			delete(c.known, pid)
			return ProcInfo{}, err
		}
		if start == info.StartTime {
			return info, nil
		}
	}
	info, err := c.reader.ReadProc(pid)
	if err != nil {
		delete(c.known, pid)
		return ProcInfo{}, err
	}
	c.known[pid] = info
	return info, nil
}

// Cached is what lookup last found for pid, without asking /proc again,
// for a caller that knows by other means that pid still names the same
// process.
func (c *ProcCache) Cached(pid int) (ProcInfo, bool) {
	info, ok := c.known[pid]
	if ok {
		c.seen[pid] = true
	}
	return info, ok
}

// Prune forgets processes not looked up since the last prune, so the cache
// holds only what the GPUs run now.
func (c *ProcCache) Prune() {
	for pid := range c.known {
		if !c.seen[pid] {
			delete(c.known, pid)
		}
	}
	clear(c.seen)
}

func (r ProcReader) root() string {
	if r.Root == "" {
		return "/proc"
	}
	return r.Root
}

func (r ProcReader) hostRoot() string {
	if r.HostRoot == "" {
		return "/"
	}
	return r.HostRoot
}

// readProcFile reads one file of a process directory and turns "no such
// process" in its several forms into ErrProcessGone.
func readProcFile(dir, name string) ([]byte, error) {
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err == nil {
		return b, nil
	}
	// ESRCH: the process died while the file was open.
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
		return nil, ErrProcessGone
	}
	return nil, fmt.Errorf("read %s: %w", name, err)
}

// procStat is what chronos reads of /proc/PID/stat.
type procStat struct {
	comm  string
	ppid  int    // field 4
	pgrp  int    // field 5: its process group
	start uint64 // field 22: clock ticks since boot
}

// parseStat reads a /proc/PID/stat line. comm may hold spaces and
// parentheses, so fields are counted after the last ')'.
func parseStat(stat []byte) (procStat, error) {
	open := bytes.IndexByte(stat, '(')
	closing := bytes.LastIndexByte(stat, ')')
	if open < 0 || closing < open {
		return procStat{}, errors.New("malformed stat: no command in parentheses")
	}
	st := procStat{comm: string(stat[open+1 : closing])}
	// After ')' come fields 3 (state) onwards.
	fields := strings.Fields(string(stat[closing+1:]))
	const ppidField, pgrpField, startField = 4 - 3, 5 - 3, 22 - 3
	if len(fields) <= startField {
		return procStat{}, fmt.Errorf("malformed stat: %d fields after command", len(fields))
	}
	var err error
	if st.ppid, err = strconv.Atoi(fields[ppidField]); err != nil {
		return procStat{}, fmt.Errorf("malformed stat parent pid: %w", err)
	}
	if st.pgrp, err = strconv.Atoi(fields[pgrpField]); err != nil {
		return procStat{}, fmt.Errorf("malformed stat process group: %w", err)
	}
	if st.start, err = strconv.ParseUint(fields[startField], 10, 64); err != nil {
		return procStat{}, fmt.Errorf("malformed stat start time: %w", err)
	}
	return st, nil
}

// parseRealUID reads the first (real) uid of the "Uid:" line.
func parseRealUID(status []byte) (int, error) {
	for line := range bytes.Lines(status) {
		rest, ok := bytes.CutPrefix(line, []byte("Uid:"))
		if !ok {
			continue
		}
		fields := strings.Fields(string(rest))
		if len(fields) == 0 {
			break
		}
		uid, err := strconv.Atoi(fields[0])
		if err != nil || uid < 0 {
			return 0, fmt.Errorf("malformed status Uid line %q", strings.TrimSpace(string(line)))
		}
		return uid, nil
	}
	return 0, errors.New("malformed status: no Uid line")
}

func joinCmdline(cmdline []byte) string {
	cmdline = bytes.TrimRight(cmdline, "\x00")
	if len(cmdline) == 0 {
		return ""
	}
	return strings.ReplaceAll(string(cmdline), "\x00", " ")
}

// envValue finds key in a NUL-separated environment. The first entry wins,
// as with getenv(3).
func envValue(environ []byte, key string) string {
	prefix := []byte(key + "=")
	for len(environ) > 0 {
		entry := environ
		if i := bytes.IndexByte(environ, 0); i >= 0 {
			entry, environ = environ[:i], environ[i+1:]
		} else {
			environ = nil
		}
		if v, ok := bytes.CutPrefix(entry, prefix); ok {
			return string(v)
		}
	}
	return ""
}

// userNames caches uid lookups: NSS (LDAP, sssd) can be slow and a monitor
// asks about the same few users every second.
var userNames = struct {
	sync.Mutex
	m map[int]string
}{m: map[int]string{}}

// UserName is the login name of uid, or the uid in digits when it has none.
func UserName(uid int) string {
	userNames.Lock()
	defer userNames.Unlock()
	if name, ok := userNames.m[uid]; ok {
		return name
	}
	name := strconv.Itoa(uid)
	if u, err := user.LookupId(name); err == nil && u.Username != "" {
		name = u.Username
	}
	userNames.m[uid] = name
	return name
}

// NA marks an integer reading the hardware, the driver or /proc does not
// provide.
const NA = -1
