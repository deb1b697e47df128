package procfs

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core/coretest"
)

// fakeMPSHost is a pipe directory and a proc root that a test fills in.
type fakeMPSHost struct {
	pipeDir, procRoot string
	control           string // path of a fake control program, "" for none
}

func newFakeMPSHost(t *testing.T) *fakeMPSHost {
	return &fakeMPSHost{pipeDir: t.TempDir(), procRoot: t.TempDir()}
}

// withControlPipe makes the control endpoint: a FIFO as older drivers do.
func (h *fakeMPSHost) withControlPipe(t *testing.T) {
	require.NoError(t, syscall.Mkfifo(filepath.Join(h.pipeDir, "control"), 0o600))
}

// withControlSocket makes the control endpoint a Unix socket, as driver 580
// does.
func (h *fakeMPSHost) withControlSocket(t *testing.T) {
	l, err := net.Listen("unix", filepath.Join(h.pipeDir, "control"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
}

// withProcess adds a process of this test's user (as the control endpoint
// it makes is).
func (h *fakeMPSHost) withProcess(t *testing.T, pid int, comm string, args ...string) {
	h.withProcessOf(t, os.Geteuid(), pid, comm, args...)
}

func (h *fakeMPSHost) withProcessOf(t *testing.T, uid, pid int, comm string, args ...string) {
	cmdline := ""
	for _, a := range args {
		cmdline += a + "\x00"
	}
	status := fmt.Sprintf("Name:\t%s\nUid:\t%d\t%d\t%d\t%d\n", comm, uid, uid, uid, uid)
	writeFakeProc(t, h.procRoot, pid, map[string]string{"comm": comm + "\n", "cmdline": cmdline, "status": status})
}

// withControlProgram installs a shell script standing in for
// nvidia-cuda-mps-control.
func (h *fakeMPSHost) withControlProgram(t *testing.T, script string) {
	h.control = filepath.Join(t.TempDir(), mpsControl)
	coretest.WriteExecutable(t, h.control, []byte("#!/bin/sh\n"+script))
}

// detect probes the fake host. Its control programs answer at once, but a
// forked sh may take seconds on a loaded machine: the timeout is generous,
// and only the test of a control program that hangs waits it out.
func (h *fakeMPSHost) detect() MPS { return h.detectWithin(time.Minute) }

func (h *fakeMPSHost) detectWithin(timeout time.Duration) MPS {
	p := mpsProbe{procRoot: h.procRoot, controlPath: func() string { return h.control }, timeout: timeout}
	return p.detect(h.pipeDir)
}

func TestMPSNotRunning(t *testing.T) {
	t.Parallel()
	h := newFakeMPSHost(t)
	m := h.detect()
	require.False(t, m.Running)
	require.Equal(t, TimeSliced, m.Mode())
	require.Equal(t, h.pipeDir, m.PipeDir)
	require.Empty(t, m.Detail)
}

func TestMPSStalePipe(t *testing.T) {
	t.Parallel()
	h := newFakeMPSHost(t)
	h.withControlPipe(t)
	// The per-user server and a one-shot control client are not the daemon.
	h.withProcess(t, 100, "nvidia-cuda-mps", "nvidia-cuda-mps-server")
	h.withProcess(t, 101, "nvidia-cuda-mps", "/usr/bin/nvidia-cuda-mps-control")
	m := h.detect()
	require.False(t, m.Running)
	require.Equal(t, TimeSliced, m.Mode())
	require.Contains(t, m.Detail, "no nvidia-cuda-mps-control daemon")
}

func TestMPSControlSocket(t *testing.T) {
	t.Parallel()
	h := newFakeMPSHost(t)
	h.withControlSocket(t)
	h.withProcess(t, 753, "nvidia-cuda-mps") // a zombie server: no command line
	h.withProcess(t, 754, "nvidia-cuda-mps", "nvidia-cuda-mps-control", "-d", "-M")
	m := h.detect()
	require.True(t, m.Running)
	require.True(t, m.MultiUser)
}

func TestMPSControlIsAPlainFile(t *testing.T) {
	t.Parallel()
	h := newFakeMPSHost(t)
	require.NoError(t, os.WriteFile(filepath.Join(h.pipeDir, "control"), nil, 0o600))
	h.withProcess(t, 100, "nvidia-cuda-mps", "nvidia-cuda-mps-control", "-d")
	require.False(t, h.detect().Running)
}

func TestMPSDaemon(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		args       []string
		script     string // "" for no control program
		wantMulti  bool
		wantPct    string
		wantLimit  string
		wantDetail string
	}{
		{
			name: "multi-user, defaults readable",
			args: []string{"/usr/bin/nvidia-cuda-mps-control", "-d", "-M"},
			script: `read cmd
case "$cmd" in
get_default_active_thread_percentage) echo 100.0 ;;
"get_default_device_pinned_mem_limit 0") echo 2G ;;
esac`,
			wantMulti: true, wantPct: "100.0", wantLimit: "2G",
		},
		{
			name:       "single-user, not the owner",
			args:       []string{"nvidia-cuda-mps-control", "-d"},
			script:     "echo 'Insufficient privileges'\nexit 0",
			wantDetail: "active thread percentage: Insufficient privileges; pinned memory limit: Insufficient privileges",
		},
		{
			name:       "control program not installed",
			args:       []string{"nvidia-cuda-mps-control", "-d", "-M"},
			wantMulti:  true,
			wantDetail: "nvidia-cuda-mps-control not found on PATH; MPS defaults unknown",
		},
		{
			name:       "control program fails",
			args:       []string{"nvidia-cuda-mps-control", "-f"},
			script:     "echo 'Cannot find MPS control daemon process' >&2\nexit 1",
			wantDetail: "active thread percentage: nvidia-cuda-mps-control \"get_default_active_thread_percentage\": exit status 1; pinned memory limit: nvidia-cuda-mps-control \"get_default_device_pinned_mem_limit 0\": exit status 1",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newFakeMPSHost(t)
			h.withControlPipe(t)
			h.withProcess(t, 1, "systemd", "/sbin/init")
			h.withProcess(t, 4242, "nvidia-cuda-mps", tt.args...)
			if tt.script != "" {
				h.withControlProgram(t, tt.script)
			}
			m := h.detect()
			require.True(t, m.Running)
			require.Equal(t, Concurrent, m.Mode())
			require.Equal(t, tt.wantMulti, m.MultiUser)
			require.Equal(t, tt.wantPct, m.DefaultActiveThreadPercentage)
			require.Equal(t, tt.wantLimit, m.DefaultPinnedMemLimit)
			require.Equal(t, tt.wantDetail, m.Detail)
		})
	}
}

func TestMPSControlThatHangs(t *testing.T) {
	t.Parallel()
	h := newFakeMPSHost(t)
	h.withControlPipe(t)
	h.withProcess(t, 4242, "nvidia-cuda-mps", "nvidia-cuda-mps-control", "-d")
	// A grandchild holds stdout open too; the whole group must go.
	h.withControlProgram(t, "sleep 7 &\nsleep 7")

	start := time.Now()
	m := h.detectWithin(300 * time.Millisecond)
	require.Less(t, time.Since(start), 5*time.Second, "must never hang")
	require.True(t, m.Running)
	require.Empty(t, m.DefaultActiveThreadPercentage)
	require.Contains(t, m.Detail, "did not answer")
}

func TestMPSPipeDirFromEnv(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("CUDA_MPS_PIPE_DIRECTORY", dir)
	require.Equal(t, dir, DetectMPS("").PipeDir)
	t.Setenv("CUDA_MPS_PIPE_DIRECTORY", "")
	require.Equal(t, "/tmp/nvidia-mps", DetectMPS("").PipeDir)
}

// The one label of the sharing mode, as the app, the monitor and
// `chronos backends` print it.
func TestModeLabel(t *testing.T) {
	t.Parallel()
	for m, want := range map[MPS]string{
		{}:                               "time-sliced",
		{Running: true}:                  "concurrent (MPS)",
		{Running: true, MultiUser: true}: "concurrent (MPS, multi-user)",
	} {
		require.Equal(t, want, m.Label())
	}
}

// Anyone can make a FIFO named control and start a process named like the
// daemon: the endpoint and the daemon must belong to one user, and whose
// they are decides whom its limits are trusted for.
func TestMPSTrust(t *testing.T) {
	t.Parallel()
	h := newFakeMPSHost(t)
	h.withControlPipe(t)
	h.withProcessOf(t, 65534, 4242, "nvidia-cuda-mps", "nvidia-cuda-mps-control", "-d", "-M")
	m := h.detect()
	require.False(t, m.Running, "a daemon of another user than the endpoint's serves nothing")
	require.Contains(t, m.Detail, "not trusted")
	require.False(t, m.Enforces(os.Geteuid(), nil))

	h.withProcess(t, 4243, "nvidia-cuda-mps", "nvidia-cuda-mps-control", "-d")
	m = h.detect()
	require.True(t, m.Running)
	require.Equal(t, os.Geteuid(), m.Owner)

	// A user's own daemon counts only in a pipe directory root named
	// (the policy's mps-user-dirs): anyone can fake one elsewhere.
	named := []string{"/run/mps-alice/", "relative"}
	for _, tc := range []struct {
		mps   MPS
		uid   int
		dirs  []string
		trust bool
	}{
		{MPS{Running: true, Owner: 0, MultiUser: true}, 1001, nil, true},
		{MPS{Running: true, Owner: 0}, 1001, nil, false}, // root's single-user daemon queues others
		{MPS{Running: true, Owner: 0}, 0, nil, true},
		{MPS{Running: true, Owner: 1001, MultiUser: true, PipeDir: "/tmp/nvidia-mps"}, 1001, nil, false},
		{MPS{Running: true, Owner: 1001, MultiUser: true, PipeDir: "/tmp/nvidia-mps"}, 1001, named, false},
		{MPS{Running: true, Owner: 1001, PipeDir: "/run/mps-alice"}, 1001, named, true},
		{MPS{Running: true, Owner: 1001, PipeDir: "/run/mps-alice"}, 1002, named, false},
		{MPS{Running: true, Owner: 1001, PipeDir: "relative"}, 1001, named, false},
		{MPS{Running: false, Owner: 0, MultiUser: true}, 1001, nil, false},
		{MPS{Running: true, Owner: NA, MultiUser: true}, NA, nil, false},
	} {
		require.Equal(t, tc.trust, tc.mps.Enforces(tc.uid, tc.dirs), "%+v for uid %d in %v", tc.mps, tc.uid, tc.dirs)
	}
}

func TestCUDAEnvMPS(t *testing.T) {
	t.Parallel()
	m := MPS{Running: true, PipeDir: "/tmp/nvidia-mps"}
	require.True(t, CUDAEnv{}.ServedBy(m))
	require.True(t, CUDAEnv{MPSPipeDir: "/tmp/nvidia-mps/"}.ServedBy(m))
	require.False(t, CUDAEnv{MPSPipeDir: "/home/x/mps"}.ServedBy(m))
	for limit, want := range map[string]uint64{
		"0=2048M": 2 << 30, "2G": 2 << 30, "1=1G,0=512MB": 512 << 20, "0=1t": 1 << 40,
		"": 0, "1=2G": 0, "0=12": 0, "0=xG": 0, "0=99999999999999999999G": 0,
	} {
		got, ok := CUDAEnv{MPSMemLimit: limit}.MPSMemLimitBytes()
		require.Equal(t, want, got, limit)
		require.Equal(t, want != 0, ok, limit)
	}
}
