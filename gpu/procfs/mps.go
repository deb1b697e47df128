package procfs

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// MPS is what is known about the CUDA Multi-Process Service on this machine.
type MPS struct {
	// Running: a control daemon is alive, and its control endpoint exists
	// and belongs to the daemon's user.
	Running   bool
	MultiUser bool // the daemon was started with -M: users run side by side
	// Owner is the uid of the daemon and its control endpoint (NA when no
	// daemon runs): anyone may start one, so whose it is decides whom its
	// limits can be trusted for (see Enforces).
	Owner   int
	PipeDir string
	// DefaultActiveThreadPercentage is the daemon's default SM cap for
	// clients, as the control program printed it ("" when unknown).
	DefaultActiveThreadPercentage string
	// DefaultPinnedMemLimit is the daemon's default device memory limit for
	// device 0 ("" when unknown or unset).
	DefaultPinnedMemLimit string
	// Detail says in words what could not be learned, e.g. the control
	// program's "Insufficient privileges".
	Detail string
}

// Enforces says whether this daemon's limits can be trusted to hold the
// processes of a booking owned by uid: it is root's and serves that user
// (multi-user, -M, or root's own booking), or it is the booking owner's own
// daemon in one of userDirs, the pipe directories root named for users'
// own daemons. Anyone can start a program named like the daemon and make a
// FIFO named control: a daemon of the owner's elsewhere, or any other
// user's, enforces nothing anyone can count on.
func (m MPS) Enforces(uid int, userDirs []string) bool {
	if !m.Running || m.Owner == NA {
		return false
	}
	if m.Owner == 0 {
		return m.MultiUser || uid == 0
	}
	return m.Owner == uid && slices.ContainsFunc(userDirs, func(dir string) bool {
		return filepath.IsAbs(dir) && filepath.Clean(dir) == filepath.Clean(m.PipeDir)
	})
}

// ServedBy says whether a process with this environment is a client of the
// daemon m: its pipe directory is the one m serves.
func (e CUDAEnv) ServedBy(m MPS) bool {
	dir := e.MPSPipeDir
	if dir == "" {
		dir = defaultMPSPipeDir
	}
	return m.Running && filepath.Clean(dir) == filepath.Clean(m.PipeDir)
}

// Sees says whether the environment shows CUDA exactly the NVIDIA GPU of
// uuid and index, as `chronos run` sets it (see VisibleEnv).
func (e CUDAEnv) Sees(uuid string, index int) bool {
	return e.SeesAll([]string{uuid}, []int{index})
}

// SeesAll says whether the environment shows CUDA exactly the GPUs named,
// in order, as `chronos run` sets it for a booking of several.
func (e CUDAEnv) SeesAll(uuids []string, indices []int) bool {
	return e.VisibleDevices == CUDADevices(uuids, indices)
}

// MPSMemLimitBytes is the device memory limit the environment sets for the
// first device the process sees (the one `chronos run` lets it see), in
// bytes; ok is false when none is set or it cannot be read.
func (e CUDAEnv) MPSMemLimitBytes() (limit uint64, ok bool) {
	return e.MPSMemLimitOf(1)
}

// MPSMemLimitOf is the largest device memory limit the environment sets
// for the first n devices the process sees (a booking of n GPUs), in
// bytes; ok is false when one of them has none, or one cannot be read.
func (e CUDAEnv) MPSMemLimitOf(n int) (limit uint64, ok bool) {
	all := uint64(0) // a limit without a device applies to every device
	per := map[string]uint64{}
	for _, entry := range strings.Split(e.MPSMemLimit, ",") {
		dev, value, hasDev := strings.Cut(strings.TrimSpace(entry), "=")
		if !hasDev {
			value = dev
		}
		v, ok := mpsBytes(value)
		if !ok {
			return 0, false
		}
		if hasDev {
			per[strings.TrimSpace(dev)] = v
		} else {
			all = v
		}
	}
	for i := range max(n, 1) {
		v, set := per[strconv.Itoa(i)]
		switch {
		case set:
		case all > 0:
			v = all
		default:
			return 0, false
		}
		limit = max(limit, v)
	}
	return limit, true
}

// mpsBytes reads one limit of CUDA_MPS_PINNED_DEVICE_MEM_LIMIT: 4096M, 2G.
func mpsBytes(value string) (uint64, bool) {
	m := memValueRE.FindStringSubmatch(strings.ToUpper(strings.TrimSpace(value)))
	if m == nil {
		return 0, false
	}
	n, err := strconv.ParseUint(m[1], 10, 64)
	if err != nil {
		return 0, false
	}
	shift := map[string]uint{"K": 10, "M": 20, "G": 30, "T": 40}[m[2]]
	if n > math.MaxUint64>>shift {
		return 0, false
	}
	return n << shift, true
}

var memValueRE = regexp.MustCompile(`^([0-9]+)([KMGT])B?$`)

// Mode is how processes share a GPU.
type Mode string

const (
	// Concurrent: an MPS daemon runs clients side by side, each within the
	// memory and SM limits it was given.
	Concurrent Mode = "concurrent"
	// TimeSliced: the driver gives processes the GPU in turns.
	TimeSliced Mode = "time-sliced"
)

// Mode is Concurrent while an MPS daemon runs, else TimeSliced.
func (m MPS) Mode() Mode {
	if m.Running {
		return Concurrent
	}
	return TimeSliced
}

// Label is the mode as people read it: "concurrent (MPS, multi-user)",
// "concurrent (MPS)" or "time-sliced".
func (m MPS) Label() string {
	switch {
	case m.Running && m.MultiUser:
		return string(Concurrent) + " (MPS, multi-user)"
	case m.Running:
		return string(Concurrent) + " (MPS)"
	}
	return string(TimeSliced)
}

const (
	mpsControl        = "nvidia-cuda-mps-control" // MPS's programs, as their executables are named
	mpsServer         = "nvidia-cuda-mps-server"
	defaultMPSPipeDir = "/tmp/nvidia-mps"
	mpsQueryTimeout   = 2 * time.Second
)

// mpsProbe holds what DetectMPS looks at, so tests can fake each part.
type mpsProbe struct {
	procRoot string
	// controlPath finds the control program; "" when it is not installed.
	controlPath func() string
	timeout     time.Duration
}

var hostMPSProbe = mpsProbe{procRoot: "/proc", controlPath: findMPSControl, timeout: mpsQueryTimeout}

// DetectMPS looks for an MPS control daemon serving pipeDir ("" means
// CUDA_MPS_PIPE_DIRECTORY, else /tmp/nvidia-mps), and asks it its
// defaults. It takes at most a few seconds and never fails: what it cannot
// learn goes into Detail.
func DetectMPS(pipeDir string) MPS {
	return hostMPSProbe.detect(pipeDir)
}

// CheckMPS is DetectMPS without asking the daemon anything: whether one
// runs, serving pipeDir, and whose it is. It reads /proc and asks no
// program, so a monitor can ask it at every sample (a daemon may start or
// stop at any time). pipeDir "" is /tmp/nvidia-mps, as for a process
// whose environment names none.
func CheckMPS(pipeDir string) MPS {
	return hostMPSProbe.check(cmp.Or(pipeDir, defaultMPSPipeDir))
}

func (p mpsProbe) detect(pipeDir string) MPS {
	if pipeDir == "" {
		pipeDir = os.Getenv("CUDA_MPS_PIPE_DIRECTORY")
	}
	m := p.check(cmp.Or(pipeDir, defaultMPSPipeDir))
	if m.Running {
		p.askDefaults(&m)
	}
	return m
}

func (p mpsProbe) check(pipeDir string) MPS {
	m := MPS{PipeDir: pipeDir, Owner: NA}

	// The control endpoint is a Unix socket with current drivers (seen with
	// 580) and a FIFO with older ones. A link is not one.
	control := filepath.Join(pipeDir, "control")
	fi, err := os.Lstat(control)
	if err != nil || fi.Mode()&(os.ModeNamedPipe|os.ModeSocket) == 0 {
		return m // no control endpoint: no daemon serves this directory
	}
	owner := NA
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		owner = int(st.Uid)
	}
	daemons := findMPSDaemons(p.procRoot)
	if len(daemons) == 0 {
		m.Detail = "MPS control endpoint exists but no " + mpsControl + " daemon is running (left over from a stopped daemon?)"
		return m
	}
	i := slices.IndexFunc(daemons, func(d mpsDaemon) bool { return d.uid == owner })
	if i < 0 {
		m.Detail = fmt.Sprintf("%s belongs to %s, but no %s daemon of theirs runs: not trusted", control, UserName(owner), mpsControl)
		return m
	}
	m.Running, m.MultiUser, m.Owner = true, daemons[i].multiUser, owner
	return m
}

// askDefaults asks the running daemon m found for its defaults.
func (p mpsProbe) askDefaults(m *MPS) {
	pipeDir := m.PipeDir
	bin := p.controlPath()
	if bin == "" {
		m.Detail = mpsControl + " not found on PATH; MPS defaults unknown"
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), p.timeout)
	defer cancel()
	var details []string
	pct, err := queryMPS(ctx, bin, pipeDir, "get_default_active_thread_percentage")
	if err == nil && isPercent(pct) {
		m.DefaultActiveThreadPercentage = pct
	} else {
		details = append(details, mpsAnswer("active thread percentage", pct, err))
	}
	limit, err := queryMPS(ctx, bin, pipeDir, "get_default_device_pinned_mem_limit 0")
	if err == nil && isMemLimit(limit) {
		m.DefaultPinnedMemLimit = limit
	} else if err != nil || limit != "" {
		details = append(details, mpsAnswer("pinned memory limit", limit, err))
	}
	m.Detail = strings.Join(details, "; ")
}

func mpsAnswer(what, out string, err error) string {
	if err != nil {
		return what + ": " + err.Error()
	}
	if out == "" {
		return what + ": no answer"
	}
	return what + ": " + out
}

var (
	percentRE  = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?$`)
	memLimitRE = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?[KMGT]?B?$`)
)

func isPercent(s string) bool {
	if !percentRE.MatchString(s) {
		return false
	}
	v, err := strconv.ParseFloat(s, 64)
	return err == nil && v >= 0 && v <= 100
}

func isMemLimit(s string) bool { return memLimitRE.MatchString(s) }

// queryMPS sends one command to the control daemon. The control program
// exits 0 even when it refuses ("Insufficient privileges"), so the caller
// must judge the output, which is returned trimmed.
func queryMPS(ctx context.Context, bin, pipeDir, command string) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("%s: no time left: %w", mpsControl, err)
	}
	cmd := exec.CommandContext(ctx, bin)
	cmd.Env = append(os.Environ(), "CUDA_MPS_PIPE_DIRECTORY="+pipeDir)
	cmd.Stdin = strings.NewReader(command + "\n")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	// On timeout kill its whole process group, and let no grandchild
	// holding the output pipe keep Wait waiting.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 200 * time.Millisecond
	err := cmd.Run()
	text := strings.TrimSpace(out.String())
	if ctx.Err() != nil {
		return text, fmt.Errorf("%s did not answer %q in time", mpsControl, command)
	}
	if err != nil {
		return text, fmt.Errorf("%s %q: %w", mpsControl, command, err)
	}
	return text, nil
}

// mpsDaemon is a running control daemon.
type mpsDaemon struct {
	uid       int // its real uid
	multiUser bool
}

// findMPSDaemons scans procRoot for running control daemons. Their comm is
// cut to "nvidia-cuda-mps", which the per-user servers share, so the
// command line decides; a one-shot control client (no -d or -f) is not a
// daemon.
func findMPSDaemons(procRoot string) []mpsDaemon {
	entries, err := os.ReadDir(procRoot)
	if err != nil {
		return nil
	}
	var out []mpsDaemon
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		dir := filepath.Join(procRoot, e.Name())
		comm, err := os.ReadFile(filepath.Join(dir, "comm"))
		if err != nil || !strings.HasPrefix(string(comm), "nvidia-cuda-mps") {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join(dir, "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
		if filepath.Base(args[0]) != mpsControl {
			continue
		}
		d, daemon := mpsDaemon{uid: NA}, false
		for _, a := range args[1:] {
			switch a {
			case "-d", "-f":
				daemon = true
			case "-M":
				d.multiUser = true
			}
		}
		if !daemon {
			continue
		}
		if status, err := os.ReadFile(filepath.Join(dir, "status")); err == nil {
			if uid, err := parseRealUID(status); err == nil {
				d.uid = uid
			}
		}
		out = append(out, d)
	}
	return out
}

// findMPSControl looks for the control program on PATH and where NVIDIA's
// packages and containers put it.
func findMPSControl() string {
	if p, err := exec.LookPath(mpsControl); err == nil {
		return p
	}
	for _, dir := range []string{"/usr/local/nvidia/bin", "/usr/bin"} {
		p := filepath.Join(dir, mpsControl)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	return ""
}
