package procfs

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chronos-gpu/chronos/core/coretest"

	"github.com/stretchr/testify/require"
)

func TestReadProcRealChild(t *testing.T) {
	t.Parallel()
	cmd := coretest.StartSleep(t, PartitionEnv+"=p7", RunEnv+"=4321")
	pid := cmd.Process.Pid

	first, err := ReadProc(pid)
	require.NoError(t, err)
	require.Equal(t, pid, first.PID)
	require.Equal(t, os.Getuid(), first.UID)
	require.NotEmpty(t, first.User)
	require.Equal(t, "p7", first.PartitionID)
	require.Equal(t, 4321, first.RunPID, "the chronos run it names")
	require.Contains(t, first.Command, "sleep")
	require.Contains(t, first.Command, "30")
	require.NotZero(t, first.StartTime)

	second, err := ReadProc(pid)
	require.NoError(t, err)
	require.Equal(t, first.StartTime, second.StartTime, "start time names the process; it must not move")
}

// CHRONOS_BOOKING_ID is the new name and wins; the old one still counts,
// as either may be all that is passed into a container.
func TestReadProcBookingEnv(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		env  []string
		want string
	}{
		{[]string{BookingEnv + "=9"}, "9"},
		{[]string{PartitionEnv + "=8"}, "8"},
		{[]string{PartitionEnv + "=8", BookingEnv + "=9"}, "9"},
	} {
		cmd := coretest.StartSleep(t, append([]string{BookingEnv + "=", PartitionEnv + "="}, c.env...)...)
		info, err := ReadProc(cmd.Process.Pid)
		require.NoError(t, err)
		require.Equal(t, c.want, info.PartitionID, c.env)
	}
}

func TestReadProcWithoutPartition(t *testing.T) {
	t.Parallel()
	cmd := coretest.StartSleep(t)
	// The test binary itself may run under chronos; the child must not
	// inherit a partition for this check to mean anything.
	if os.Getenv(PartitionEnv) != "" || os.Getenv(BookingEnv) != "" {
		t.Skip(BookingEnv + " is set in the test environment")
	}
	info, err := ReadProc(cmd.Process.Pid)
	require.NoError(t, err)
	require.Empty(t, info.PartitionID)
}

func TestReadProcExited(t *testing.T) {
	t.Parallel()
	_, err := ReadProc(coretest.ExitedPID(t))
	require.Error(t, err)
	require.ErrorIs(t, err, ErrProcessGone)
	require.ErrorIs(t, err, os.ErrNotExist)
}

func TestReadProcInvalidPID(t *testing.T) {
	t.Parallel()
	for _, pid := range []int{0, -1} {
		_, err := ReadProc(pid)
		require.Error(t, err)
		require.False(t, errors.Is(err, ErrProcessGone))
	}
}

// writeFakeProc lays out a minimal /proc/PID for a fake proc root.
func writeFakeProc(t testing.TB, root string, pid int, files map[string]string) {
	t.Helper()
	dir := filepath.Join(root, strconv.Itoa(pid))
	require.NoError(t, os.MkdirAll(dir, 0o755))
	for name, content := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644))
	}
}

func TestReadProcFakeRoot(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	status := "Name:\tweird\nUmask:\t0022\nUid:\t1234\t0\t0\t0\nGid:\t100\t100\t100\t100\n"
	writeFakeProc(t, root, 42, map[string]string{
		"stat":    coretest.FakeStat(42, "a) (b c) 7", 987654),
		"status":  status,
		"cmdline": "",
		"environ": "A=1\x00" + PartitionEnv + "=p-first\x00" + PartitionEnv + "=p-second\x00",
	})
	writeFakeProc(t, root, 43, map[string]string{
		"stat":    coretest.FakeStat(43, "python", 5),
		"status":  status,
		"cmdline": "python\x00train.py\x00--lr\x000.1\x00",
	})
	// An environ that cannot be read (here a directory, since root reads
	// any file) is not an error: other users' environments are private.
	require.NoError(t, os.Mkdir(filepath.Join(root, "43", "environ"), 0o755))
	r := ProcReader{Root: root}

	got, err := r.ReadProc(42)
	require.NoError(t, err)
	require.Equal(t, ProcInfo{
		PID: 42, UID: 1234, User: UserName(1234),
		Command: "[a) (b c) 7]", PartitionID: "p-first", StartTime: 987654,
	}, got)

	got, err = r.ReadProc(43)
	require.NoError(t, err)
	require.Equal(t, "python train.py --lr 0.1", got.Command)
	require.Empty(t, got.PartitionID)
	require.EqualValues(t, 5, got.StartTime)

	_, err = r.ReadProc(44)
	require.ErrorIs(t, err, ErrProcessGone)

	// CHRONOS_BOOKING_ID is the same as CHRONOS_PARTITION_ID, and wins;
	// what the environment asks of CUDA is read too.
	writeFakeProc(t, root, 45, map[string]string{
		"stat":   coretest.FakeStat(45, "python", 6),
		"status": status, "cmdline": "python\x00",
		"environ": PartitionEnv + "=3\x00" + BookingEnv + "=7\x00CUDA_VISIBLE_DEVICES=GPU-1\x00" +
			"CUDA_MPS_PIPE_DIRECTORY=/run/mps\x00CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=2048M\x00",
	})
	got, err = r.ReadProc(45)
	require.NoError(t, err)
	require.Equal(t, "7", got.PartitionID)
	require.Equal(t, CUDAEnv{VisibleDevices: "GPU-1", MPSPipeDir: "/run/mps", MPSMemLimit: "0=2048M"}, got.CUDA)
}

func TestReadProcMalformed(t *testing.T) {
	t.Parallel()
	goodStatus := "Uid:\t1\t1\t1\t1\n"
	tests := []struct {
		name   string
		stat   string
		status string
	}{
		{"no parentheses", "42 x S 1 2 3\n", goodStatus},
		{"too few fields", "42 (x) S 1 2 3\n", goodStatus},
		{"start not a number", strings.Replace(coretest.FakeStat(42, "x", 1), " 1 123456", " z 123456", 1), goodStatus},
		{"empty stat", "", goodStatus},
		{"no Uid line", coretest.FakeStat(42, "x", 1), "Name:\tx\n"},
		{"empty Uid line", coretest.FakeStat(42, "x", 1), "Uid:\n"},
		{"bad uid", coretest.FakeStat(42, "x", 1), "Uid:\tabc\t1\t1\t1\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			writeFakeProc(t, root, 42, map[string]string{"stat": tt.stat, "status": tt.status, "cmdline": "x\x00"})
			_, err := ProcReader{Root: root}.ReadProc(42)
			require.Error(t, err)
			require.NotErrorIs(t, err, ErrProcessGone)
		})
	}
}

func TestUserNameFallsBackToDigits(t *testing.T) {
	t.Parallel()
	// A uid nobody has; the name is the number.
	require.Equal(t, "2147480000", UserName(2147480000))
	require.Equal(t, "root", UserName(0))
}

func TestProcStartTime(t *testing.T) {
	t.Parallel()
	cmd := coretest.StartSleep(t)
	info, err := ReadProc(cmd.Process.Pid)
	require.NoError(t, err)
	start, err := ProcStartTime(cmd.Process.Pid)
	require.NoError(t, err)
	require.Equal(t, info.StartTime, start)

	_, err = ProcStartTime(coretest.ExitedPID(t))
	require.ErrorIs(t, err, ErrProcessGone)
	_, err = ProcStartTime(0)
	require.Error(t, err)
}

func TestProcCache(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	status := "Uid:\t1000\t1000\t1000\t1000\n"
	writeFakeProc(t, root, 42, map[string]string{
		"stat": coretest.FakeStat(42, "python", 100), "status": status,
		"cmdline": "python\x00a.py\x00", "environ": PartitionEnv + "=p1\x00",
	})
	c := NewProcCache(ProcReader{Root: root})

	got, err := c.Lookup(42)
	require.NoError(t, err)
	require.Equal(t, "python a.py", got.Command)
	require.Equal(t, "p1", got.PartitionID)
	c.Prune()

	// Same start time: the cached process, even if its files changed.
	writeFakeProc(t, root, 42, map[string]string{"cmdline": "renamed\x00"})
	got, err = c.Lookup(42)
	require.NoError(t, err)
	require.Equal(t, "python a.py", got.Command)
	c.Prune()

	// The pid was reused by a new process: read afresh.
	writeFakeProc(t, root, 42, map[string]string{
		"stat": coretest.FakeStat(42, "bash", 200), "cmdline": "bash\x00", "environ": "",
	})
	got, err = c.Lookup(42)
	require.NoError(t, err)
	require.Equal(t, "bash", got.Command)
	require.Empty(t, got.PartitionID)
	require.EqualValues(t, 200, got.StartTime)
	c.Prune()

	// Not looked up in a round: forgotten.
	c.Prune()
	require.Empty(t, c.known)

	// Gone: an error, and nothing kept.
	_, err = c.Lookup(42)
	require.NoError(t, err)
	require.NoError(t, os.RemoveAll(filepath.Join(root, "42")))
	c.Prune()
	_, err = c.Lookup(42)
	require.ErrorIs(t, err, ErrProcessGone)
	require.Empty(t, c.known)
}

// startMPSLike starts a copy of sh named like MPS's control daemon which
// starts a copy of sleep named like its server, both owned by uid, and
// returns the two pids.
func startMPSLike(t *testing.T, uid int) (control, server int) {
	t.Helper()
	dir := t.TempDir()
	copyProgram := func(from, name string) string {
		path, err := exec.LookPath(from)
		require.NoError(t, err)
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		to := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(to, data, 0o755))
		require.NoError(t, os.Lchown(to, uid, -1))
		return to
	}
	ctl := copyProgram("sh", mpsControl)
	srv := copyProgram("sleep", mpsServer)
	// A program just written may be "busy" while another test's fork still
	// holds a copy of the writing descriptor (until that child execs):
	// try again, briefly (golang.org/issue/22315).
	var cmd *exec.Cmd
	require.Eventually(t, func() bool {
		cmd = exec.Command(ctl, "-c", srv+" 30; :")
		err := cmd.Start()
		require.True(t, err == nil || errors.Is(err, syscall.ETXTBSY), "start %s: %v", ctl, err)
		return err == nil
	}, 10*time.Second, 10*time.Millisecond)
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	children := filepath.Join("/proc", strconv.Itoa(cmd.Process.Pid), "task", strconv.Itoa(cmd.Process.Pid), "children")
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(children)
		if err != nil || len(strings.Fields(string(b))) == 0 {
			return false
		}
		server, err = strconv.Atoi(strings.Fields(string(b))[0])
		exe, _ := os.Readlink(filepath.Join("/proc", strconv.Itoa(server), "exe"))
		return err == nil && filepath.Base(exe) == mpsServer
	}, 5*time.Second, time.Millisecond)
	t.Cleanup(func() { _ = syscall.Kill(server, syscall.SIGKILL) })
	return cmd.Process.Pid, server
}

// The MPS server is listed by NVML among a GPU's processes; it must be
// known as such (never signalled as someone's job), and only when it really
// is root's server started by root's control daemon.
func TestReadProcMPSServer(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("needs root: the programs must be root's files")
	}
	control, server := startMPSLike(t, 0)
	info, err := ReadProc(server)
	require.NoError(t, err)
	require.True(t, info.MPSServer, "root's server under root's control daemon")
	info, err = ReadProc(control)
	require.NoError(t, err)
	require.False(t, info.MPSServer, "the control daemon itself is not the server")

	_, forged := startMPSLike(t, 65534)
	info, err = ReadProc(forged)
	require.NoError(t, err)
	require.False(t, info.MPSServer, "a user's own programs named like MPS's are not MPS")

	info, err = ReadProc(coretest.StartSleep(t).Process.Pid)
	require.NoError(t, err)
	require.False(t, info.MPSServer)
}
