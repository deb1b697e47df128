package gpu

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"

	"golang.org/x/sys/unix"

	"github.com/chronos-gpu/chronos/core/clock"
	"github.com/chronos-gpu/chronos/gpu/procfs"
)

// DRMRootEnv points the DRM backend, and what `chronos run` reads of the
// GPUs, at another file system tree holding sys/ and proc/: a copy of a
// machine's, or a test's fixture. Unset means /.
const DRMRootEnv = "CHRONOS_DRM_ROOT"

// ErrNoDRMGPUs means the kernel shows no AMD or Intel GPU.
var ErrNoDRMGPUs = errors.New("DRM: no AMD or Intel GPU (amdgpu, i915 or xe driver) in /sys/class/drm")

// Vendors whose kernel drivers the DRM backend reads, by driver name.
const (
	vendorAMD   = "AMD"
	vendorIntel = "Intel"
)

var drmDrivers = map[string]string{"amdgpu": vendorAMD, "i915": vendorIntel, "xe": vendorIntel}

// DRM reads AMD and Intel GPUs through the kernel, with no vendor library:
// devices from /sys/class/drm/card*/device (amdgpu's VRAM and busy files,
// hwmon's temperature and power), processes from the DRM client stats in
// /proc/PID/fdinfo. Other users' processes are only visible to root.
type DRM struct {
	root    string
	procs   *procfs.ProcCache
	devices []drmDevice
	now     func() time.Time
	// topology is read once at start from the PCI tree.
	topology Topology

	mu     sync.Mutex // guards procs, last, fds, scan and closed
	last   map[string]clientReading
	fds    map[int]*processFDs
	scan   fdScan
	closed bool
}

// drmDevice is one enumerated GPU and where its sysfs files are.
type drmDevice struct {
	Device
	driver string
	slot   string // PCI slot, as drm-pdev names it
	dir    string // sysfs device directory
	hwmon  string // its hwmon directory, "" when it has none
	// totalErr says why MemoryTotal is 0: Intel's drivers do not report
	// their memory in sysfs.
	totalErr error
}

// clientReading is one client's engine counters at one sample, and the
// process that held it.
type clientReading struct {
	at      time.Time
	pid     int
	engines []engineUse
}

// DRMOptions shape a DRM backend; zero fields take the defaults.
type DRMOptions struct {
	Root string // the tree holding sys/ and proc/; "" means $CHRONOS_DRM_ROOT, else /
	Now  func() time.Time
}

// OpenDRM enumerates the AMD and Intel GPUs the kernel shows. A machine
// with none (a plain VM's virtio or bochs display is not a GPU) is
// ErrNoDRMGPUs.
func OpenDRM(opts DRMOptions) (*DRM, error) {
	root := opts.Root
	if root == "" {
		root = drmRoot()
	}
	if opts.Now == nil {
		opts.Now = clock.System().Now
	}
	devs, err := enumerateDRM(root)
	if err != nil {
		return nil, err
	}
	reader := procfs.ProcReader{Root: filepath.Join(root, "proc"), HostRoot: root}
	return &DRM{root: root, procs: procfs.NewProcCache(reader), devices: devs, now: opts.Now,
		topology: drmTopology(root, devs), last: map[string]clientReading{}, fds: map[int]*processFDs{}}, nil
}

func drmRoot() string {
	if r := strings.TrimSpace(os.Getenv(DRMRootEnv)); r != "" {
		return r
	}
	return "/"
}

// enumerateDRM lists the GPUs of supported drivers in PCI slot order, which
// does not change from boot to boot as card numbers may.
func enumerateDRM(root string) ([]drmDevice, error) {
	class := filepath.Join(root, "sys/class/drm")
	names, err := readDirNames(class)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, ErrNoDRMGPUs
		}
		return nil, fmt.Errorf("DRM: %w", err)
	}
	var devs []drmDevice
	seen := map[string]bool{}
	for _, name := range names {
		n, ok := strings.CutPrefix(name, "card")
		if !ok || n == "" || strings.Trim(n, "0123456789") != "" {
			continue // connectors (card0-DP-1), render nodes, version
		}
		dir := filepath.Join(class, name, "device")
		ue := readUevent(dir)
		vendor, supported := drmDrivers[ue["DRIVER"]]
		slot := ue["PCI_SLOT_NAME"]
		if !supported || slot == "" || seen[slot] {
			continue
		}
		seen[slot] = true
		d := drmDevice{driver: ue["DRIVER"], slot: slot, dir: dir, hwmon: firstHwmon(dir)}
		d.UUID = d.driver + "-" + slot
		d.Name = printable(readSysfs(dir, "product_name"))
		if d.Name == "" {
			d.Name = vendor + " GPU " + printable(ue["PCI_ID"])
		}
		d.MemoryTotal, d.totalErr = readSysfsUint(dir, "mem_info_vram_total")
		devs = append(devs, d)
	}
	if len(devs) == 0 {
		return nil, ErrNoDRMGPUs
	}
	slices.SortFunc(devs, func(a, b drmDevice) int { return strings.Compare(a.slot, b.slot) })
	for i := range devs {
		devs[i].Index = i
	}
	return devs, nil
}

// readUevent reads a device's uevent file (KEY=value lines).
func readUevent(dir string) map[string]string {
	b, _ := os.ReadFile(filepath.Join(dir, "uevent"))
	m := map[string]string{}
	for line := range bytes.Lines(b) {
		k, v, ok := strings.Cut(strings.TrimSpace(string(line)), "=")
		if ok {
			m[k] = v
		}
	}
	return m
}

func firstHwmon(dir string) string {
	names, err := readDirNames(filepath.Join(dir, "hwmon"))
	if err != nil {
		return ""
	}
	slices.Sort(names)
	for _, n := range names {
		if strings.HasPrefix(n, "hwmon") {
			return filepath.Join(dir, "hwmon", n)
		}
	}
	return ""
}

// readDirNames lists a directory without sorting or stat-ing its entries.
func readDirNames(dir string) ([]string, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Readdirnames(-1)
}

func readSysfs(dir, name string) string {
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		return ""
	}
	return string(b)
}

// errNotReported means the driver has no such file.
var errNotReported = errors.New("not reported")

// readSysfsUint reads a file holding one unsigned number.
func readSysfsUint(dir, name string) (uint64, error) {
	b, err := os.ReadFile(filepath.Join(dir, name))
	if errors.Is(err, os.ErrNotExist) {
		return 0, errNotReported
	}
	if err != nil {
		return 0, err
	}
	s := strings.TrimSpace(string(b))
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("malformed %s %q", name, cut(s, 20))
	}
	return v, nil
}

// readSysfsPercent reads a file holding a percentage.
func readSysfsPercent(dir, name string) (int, error) {
	v, err := readSysfsUint(dir, name)
	if err == nil && v > 100 {
		err = fmt.Errorf("malformed %s %d%%", name, v)
	}
	return int(v), err
}

// addBytes adds without wrapping round: a damaged figure must not turn a
// huge number into a small one.
func addBytes(a, b uint64) uint64 {
	if a > ^uint64(0)-b {
		return ^uint64(0)
	}
	return a + b
}

// printable is s without control characters or surrounding space: a name
// read from a card's firmware is not to be trusted with a terminal.
func printable(s string) string {
	return strings.TrimSpace(strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == unicode.ReplacementChar {
			return -1
		}
		return r
	}, s))
}

func cut(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// Name is "drm".
func (d *DRM) Name() string { return "drm" }

// Simulated is false: these are real GPUs.
func (d *DRM) Simulated() bool { return false }

// Close forgets the backend; it holds no kernel resources.
func (d *DRM) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.closed = true
	return nil
}

// Topology is how the GPUs are connected, as read when the backend opened.
func (d *DRM) Topology() Topology { return d.topology.clone() }

// Devices lists the GPUs found when the backend was opened.
func (d *DRM) Devices() ([]Device, error) {
	return inventory(d.devices), nil
}

// Sample reads every device and every DRM client. A process's busy share
// needs two readings, so a client seen for the first time shows NA.
//
//nolint:funlen // sysfs devices and the fdinfo scan make one sample, read in one pass
func (d *DRM) Sample() (Sample, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return Sample{}, ErrClosed
	}
	now := d.now()
	s := Sample{Time: now, Backend: d.Name(), Devices: make([]DeviceSample, len(d.devices))}
	bySlot := make(map[string]int, len(d.devices))
	for i := range d.devices {
		s.Devices[i] = d.devices[i].sample()
		bySlot[d.devices[i].slot] = i
	}

	clients, hidden := d.scanClients(now)
	// One entry per process per device; a process may hold several clients.
	type use struct {
		memory uint64
		busy   float64
		known  bool
		// same: it held each of these clients at the last sample too, so
		// its pid still names the process whose owner was read then.
		same bool
	}
	uses := make([]map[int]*use, len(d.devices))
	order := make([][]int, len(d.devices))
	next := make(map[string]clientReading, len(clients))
	for _, c := range clients {
		i, ok := bySlot[c.pdev]
		if !ok {
			continue
		}
		key := c.pdev + "/" + c.id
		if c.id == "" {
			key = c.pdev + "/" + strconv.Itoa(c.pid) + "/" + c.fd
		}
		if _, dup := next[key]; dup {
			continue // a shared or duplicated file: counted once, for its first holder
		}
		engines := c.engines
		u := uses[i][c.pid]
		if u == nil {
			if uses[i] == nil {
				uses[i] = map[int]*use{}
			}
			u = &use{same: true}
			uses[i][c.pid] = u
			order[i] = append(order[i], c.pid)
		}
		u.memory = addBytes(u.memory, c.memory)
		prev, seen := d.last[key]
		u.same = u.same && seen && prev.pid == c.pid
		if seen {
			if pct, ok := busyPercent(prev.engines, c.engines, now.Sub(prev.at)); ok {
				u.busy = min(100, u.busy+pct)
				u.known = true
			}
			engines = keepLarger(prev.engines, c.engines)
		}
		next[key] = clientReading{at: now, pid: c.pid, engines: engines}
	}
	d.last = next

	for i := range s.Devices {
		ds := &s.Devices[i]
		var sum uint64
		for _, pid := range order[i] {
			u := uses[i][pid]
			p := Process{PID: pid, UID: procfs.NA, MemoryUsed: u.memory, SM: procfs.NA}
			if u.known {
				p.SM = int(u.busy + 0.5)
			}
			pi, ok := procfs.ProcInfo{}, false
			if u.same {
				pi, ok = d.procs.Cached(pid)
			}
			if !ok {
				var err error
				pi, err = d.procs.Lookup(pid)
				ok = err == nil
			}
			if ok {
				p.withInfo(pi)
			}
			ds.Processes = append(ds.Processes, p)
			sum = addBytes(sum, u.memory)
		}
		if dev := &d.devices[i]; dev.MemoryTotal == 0 {
			// No sysfs figure (Intel): what the processes seen hold.
			ds.MemoryUsed = sum
			why := "not reported by " + dev.driver
			if !errors.Is(dev.totalErr, errNotReported) && dev.totalErr != nil {
				why = dev.totalErr.Error()
			}
			ds.Notes = append(ds.Notes, "memory: "+why+"; used is the sum of the processes shown")
		}
		if hidden > 0 {
			ds.Notes = append(ds.Notes, fmt.Sprintf("processes: %d of other users not readable (root sees them)", hidden))
		}
	}
	d.procs.Prune()
	return s, nil
}

// sample reads one device's sysfs files. What the driver lacks becomes NA
// with a note.
func (dev *drmDevice) sample() DeviceSample {
	ds := DeviceSample{Device: dev.Device, Util: procfs.NA, MemUtil: procfs.NA, TempC: procfs.NA, PowerW: procfs.NA}
	note := func(what string, err error) {
		if errors.Is(err, errNotReported) {
			ds.Notes = append(ds.Notes, what+": not reported by "+dev.driver)
			return
		}
		ds.Notes = append(ds.Notes, what+": "+err.Error())
	}
	if dev.MemoryTotal > 0 {
		if used, err := readSysfsUint(dev.dir, "mem_info_vram_used"); err == nil {
			ds.MemoryUsed = min(used, dev.MemoryTotal)
			ds.MemoryFree = dev.MemoryTotal - ds.MemoryUsed
		} else {
			note("memory", err)
		}
	}
	if v, err := readSysfsPercent(dev.dir, "gpu_busy_percent"); err == nil {
		ds.Util = v
	} else {
		note("utilization", err)
	}
	if v, err := readSysfsPercent(dev.dir, "mem_busy_percent"); err == nil {
		ds.MemUtil = v
	}
	if dev.hwmon == "" {
		note("temperature", errNotReported)
		note("power", errNotReported)
		return ds
	}
	if v, err := readSysfsUint(dev.hwmon, "temp1_input"); err == nil {
		ds.TempC = int(v / 1000) // millidegrees
	} else {
		note("temperature", err)
	}
	// Microwatts: an average over the last second on older amdgpu, the
	// current draw on newer ones.
	v, err := readSysfsUint(dev.hwmon, "power1_average")
	if errors.Is(err, errNotReported) {
		v, err = readSysfsUint(dev.hwmon, "power1_input")
	}
	if err == nil {
		ds.PowerW = float64(v) / 1e6
	} else {
		note("power", err)
	}
	return ds
}

// openClient is a DRM client found in one process's open files.
type openClient struct {
	drmClient
	pid int
	fd  string
}

// fdRescan is how often every fd of a process is looked at again. Between
// times a process known to hold GPU files has only those read, and any
// other process only its fd numbers not seen before. So a new process's
// GPU files show at once, a process's new numbers too unless it already
// holds GPU files, and a closed GPU file goes at once; a second GPU opened
// by a GPU process, or a number closed and opened again as a GPU file,
// shows within this time.
const fdRescan = 10 * time.Second

// processFDs remembers which of one process's fds are DRM files.
type processFDs struct {
	drm  map[string]bool // by fd number
	gpu  []string        // the DRM ones, in the order listed
	full time.Time       // when every link was last read
	scan uint64          // the last scan that saw the process
}

// scanClients reads every process's open DRM files; hidden counts the
// processes whose files this user may not read (other users', unless root).
// Processes come in ascending pid order, so a file shared after fork
// counts for the parent. Paths are resolved from open directories, and
// fds looked at only as fdRescan says: a machine's worth of processes
// costs few system calls each.
func (d *DRM) scanClients(now time.Time) (clients []openClient, hidden int) {
	proc, err := unix.Open(filepath.Join(d.root, "proc"), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, 0
	}
	defer unix.Close(proc)
	sc := &d.scan
	sc.count++
	names, err := sc.names(proc, nil)
	if err != nil {
		return nil, 0
	}
	pids := make([]int, 0, len(names))
	for _, n := range names {
		if pid, err := strconv.Atoi(n); err == nil && pid > 0 {
			pids = append(pids, pid)
		}
	}
	slices.Sort(pids)
	var fds []string
	for _, pid := range pids {
		p := strconv.Itoa(pid)
		pf := d.fds[pid]
		due := pf == nil || now.Sub(pf.full) >= fdRescan || now.Before(pf.full)
		if !due && len(pf.gpu) > 0 {
			before := len(clients)
			if clients = d.readClients(clients, proc, pid, pf); len(clients) > before {
				pf.scan = sc.count
				continue
			}
			// It closed them all: look at everything it holds now.
		}
		dir, err := unix.Openat(proc, p+"/fd", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.EACCES) {
			hidden++
			continue
		}
		if err != nil {
			continue // exited
		}
		fds, _ = sc.names(dir, fds)
		if due {
			// Spread the rescans of processes seen at once over the interval.
			pf = &processFDs{drm: make(map[string]bool, len(fds)), full: now.Add(-time.Duration(pid%10) * fdRescan / 10)}
			d.fds[pid] = pf
		} else if len(pf.drm) > 2*len(fds)+8 {
			clear(pf.drm) // many closed: forget them, keep the map small
		}
		pf.scan = sc.count
		pf.gpu = pf.gpu[:0]
		for _, fd := range fds {
			isDRM, known := pf.drm[fd]
			if !known {
				n, err := unix.Readlinkat(dir, fd, sc.link)
				isDRM = err == nil && bytes.HasPrefix(sc.link[:n], []byte("/dev/dri/"))
				pf.drm[fd] = isDRM
			}
			if isDRM {
				pf.gpu = append(pf.gpu, fd)
			}
		}
		unix.Close(dir)
		clients = d.readClients(clients, proc, pid, pf)
	}
	for pid, pf := range d.fds {
		if pf.scan != sc.count {
			delete(d.fds, pid)
		}
	}
	return clients, hidden
}

// readClients reads the fdinfo of each of pf's GPU files, forgetting those
// that are closed or no longer GPU files.
func (d *DRM) readClients(clients []openClient, proc, pid int, pf *processFDs) []openClient {
	dir := strconv.Itoa(pid) + "/fdinfo/"
	kept := pf.gpu[:0]
	for _, fd := range pf.gpu {
		info, err := d.scan.read(proc, dir+fd)
		c, ok := drmClient{}, false
		if err == nil {
			c, ok = parseFDInfo(info)
		}
		if !ok {
			delete(pf.drm, fd) // closed, or opened again as something else
			continue
		}
		kept = append(kept, fd)
		clients = append(clients, openClient{drmClient: c, pid: pid, fd: fd})
	}
	pf.gpu = kept
	return clients
}

// fdScan holds the buffers a scan reuses from one process to the next.
type fdScan struct {
	dirents, link, info []byte
	count               uint64 // scans so far
}

// names lists the directory open at fd, reusing into's storage.
func (sc *fdScan) names(fd int, into []string) ([]string, error) {
	if sc.dirents == nil {
		sc.dirents, sc.link, sc.info = make([]byte, 16<<10), make([]byte, 256), make([]byte, 8<<10)
	}
	into = into[:0]
	for {
		n, err := unix.Getdents(fd, sc.dirents)
		if err != nil {
			return into, err
		}
		if n <= 0 {
			return into, nil
		}
		_, _, into = unix.ParseDirent(sc.dirents[:n], -1, into)
	}
}

// read reads a small file at path under the directory open at dir; the
// result is valid until the next read.
func (sc *fdScan) read(dir int, path string) ([]byte, error) {
	fd, err := unix.Openat(dir, path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	n := 0
	for {
		m, err := unix.Read(fd, sc.info[n:])
		if err != nil {
			return nil, err
		}
		n += m
		// /proc answers a read with all it has when there is room for
		// it, so a read that leaves room is the last.
		if m <= 0 || n < len(sc.info) {
			return sc.info[:n], nil
		}
		sc.info = append(sc.info, make([]byte, len(sc.info))...)
	}
}
