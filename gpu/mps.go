package gpu

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// MPS is what is known about the CUDA Multi-Process Service on this machine.
type MPS struct {
	Running   bool // a control daemon is alive and its control endpoint exists
	MultiUser bool // the daemon was started with -M: users run side by side
	PipeDir   string
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
	mpsControl        = "nvidia-cuda-mps-control"
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
// CUDA_MPS_PIPE_DIRECTORY, else /tmp/nvidia-mps). It takes at most a few
// seconds and never fails: what it cannot learn goes into Detail.
func DetectMPS(pipeDir string) MPS {
	return hostMPSProbe.detect(pipeDir)
}

func (p mpsProbe) detect(pipeDir string) MPS {
	if pipeDir == "" {
		pipeDir = os.Getenv("CUDA_MPS_PIPE_DIRECTORY")
	}
	if pipeDir == "" {
		pipeDir = defaultMPSPipeDir
	}
	m := MPS{PipeDir: pipeDir}

	// The control endpoint is a Unix socket with current drivers (seen with
	// 580) and a FIFO with older ones.
	fi, err := os.Stat(filepath.Join(pipeDir, "control"))
	if err != nil || fi.Mode()&(os.ModeNamedPipe|os.ModeSocket) == 0 {
		return m // no control endpoint: no daemon serves this directory
	}
	found, multiUser := findMPSDaemon(p.procRoot)
	if !found {
		m.Detail = "MPS control endpoint exists but no " + mpsControl + " daemon is running (left over from a stopped daemon?)"
		return m
	}
	m.Running, m.MultiUser = true, multiUser

	bin := p.controlPath()
	if bin == "" {
		m.Detail = mpsControl + " not found on PATH; MPS defaults unknown"
		return m
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
	return m
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

// findMPSDaemon scans procRoot for a running control daemon. Its comm is
// cut to "nvidia-cuda-mps", which the per-user servers share, so the
// command line decides; a one-shot control client (no -d or -f) is not a
// daemon.
func findMPSDaemon(procRoot string) (found, multiUser bool) {
	entries, err := os.ReadDir(procRoot)
	if err != nil {
		return false, false
	}
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
		daemon, multi := false, false
		for _, a := range args[1:] {
			switch a {
			case "-d", "-f":
				daemon = true
			case "-M":
				multi = true
			}
		}
		if daemon {
			return true, multi
		}
	}
	return false, false
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
