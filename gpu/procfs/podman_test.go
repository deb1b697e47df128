package procfs

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// Real containers, started with Podman (Debian's podman, runc and
// busybox-static; `make tools` installs them as root): one rootful and one
// rootless as nobody, each read as chronos reads a GPU process. Skipped
// where podman or a static busybox is missing or the test is not root.

// podman runs podman with its own storage under dir, as cred when set.
type podman struct {
	bin, dir string
	cred     *syscall.Credential
	args     []string // global flags
}

func newPodman(t *testing.T, cred *syscall.Credential) *podman {
	t.Helper()
	bin, err := exec.LookPath("podman")
	if err != nil {
		t.Skip("podman is not installed (apt-get install podman runc busybox-static)")
	}
	if os.Getuid() != 0 {
		t.Skip("needs root: it runs a rootful container, and a rootless one as nobody")
	}
	// Not t.TempDir: its parent is root's alone, and nobody must reach it.
	dir, err := os.MkdirTemp("", "chronos-podman-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	require.NoError(t, os.Chmod(dir, 0o755))
	p := &podman{bin: bin, dir: dir, cred: cred}
	p.args = []string{"--root", filepath.Join(dir, "storage"), "--runroot", filepath.Join(dir, "run"),
		"--tmpdir", filepath.Join(dir, "tmp"), "--storage-driver", "vfs", "--cgroup-manager", "cgroupfs", "--events-backend", "file"}
	// runc works on cgroup v1, v2 and the hybrid of both; crun refuses
	// the hybrid that some VMs have.
	if runc, err := exec.LookPath("runc"); err == nil {
		p.args = append(p.args, "--runtime", runc)
	}
	if cred != nil {
		require.NoError(t, os.Chown(dir, int(cred.Uid), int(cred.Gid)))
	}
	return p
}

func (p *podman) run(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(p.bin, append(append([]string{}, p.args...), args...)...)
	cmd.Dir = p.dir
	cmd.Env = append(os.Environ(), "HOME="+p.dir, "XDG_RUNTIME_DIR="+filepath.Join(p.dir, "xdg"), "XDG_CONFIG_HOME="+filepath.Join(p.dir, "config"))
	if p.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: p.cred}
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	require.NoError(t, cmd.Run(), "podman %s: %s", strings.Join(args, " "), errb.String())
	return strings.TrimSpace(out.String())
}

// busyboxImage writes a one-binary image: a static busybox as sleep.
func busyboxImage(t *testing.T, dir string) string {
	t.Helper()
	bb, err := os.ReadFile("/bin/busybox")
	if err != nil || !isStatic(bb) {
		t.Skip("needs a static /bin/busybox (apt-get install busybox-static)")
	}
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	require.NoError(t, tw.WriteHeader(&tar.Header{Name: "bin/", Typeflag: tar.TypeDir, Mode: 0o755}))
	require.NoError(t, tw.WriteHeader(&tar.Header{Name: "bin/busybox", Mode: 0o755, Size: int64(len(bb))}))
	_, err = tw.Write(bb)
	require.NoError(t, err)
	require.NoError(t, tw.WriteHeader(&tar.Header{Name: "bin/sleep", Typeflag: tar.TypeSymlink, Linkname: "busybox", Mode: 0o777}))
	require.NoError(t, tw.Close())
	path := filepath.Join(dir, "busybox.tar")
	require.NoError(t, os.WriteFile(path, b.Bytes(), 0o644))
	return path
}

// isStatic reports whether b is an ELF program with no interpreter, which
// runs in an image that holds nothing else.
func isStatic(b []byte) bool {
	f, err := elf.NewFile(bytes.NewReader(b))
	if err != nil {
		return false
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return false
		}
	}
	return true
}

// ulimits are podman flags for modest limits within this process's own:
// podman's defaults ask for more, which a container in a limited VM may not
// get.
func ulimits() []string {
	var out []string
	for _, l := range []struct {
		name string
		res  int
		want uint64
	}{{"nofile", unix.RLIMIT_NOFILE, 1024}, {"nproc", unix.RLIMIT_NPROC, 4096}} {
		var r unix.Rlimit
		if unix.Getrlimit(l.res, &r) == nil {
			n := min(l.want, r.Cur)
			out = append(out, "--ulimit", fmt.Sprintf("%s=%d:%d", l.name, n, n))
		}
	}
	return out
}

// startContainer runs `sleep 600` with CHRONOS_BOOKING_ID passed in, and
// returns its id and its host pid.
func (p *podman) startContainer(t *testing.T, name string) (id string, pid int) {
	t.Helper()
	image := busyboxImage(t, p.dir)
	if p.cred != nil {
		require.NoError(t, os.Chown(image, int(p.cred.Uid), int(p.cred.Gid)))
	}
	p.run(t, "import", image, "localhost/chronos-busybox:test")
	args := append([]string{"run", "-d", "--name", name, "--network", "none", "-e", BookingEnv + "=42"}, ulimits()...)
	id = p.run(t, append(args, "localhost/chronos-busybox:test", "sleep", "600")...)
	t.Cleanup(func() {
		cmd := exec.Command(p.bin, append(append([]string{}, p.args...), "rm", "-f", "-t", "0", name)...)
		cmd.Env = append(os.Environ(), "HOME="+p.dir, "XDG_RUNTIME_DIR="+filepath.Join(p.dir, "xdg"), "XDG_CONFIG_HOME="+filepath.Join(p.dir, "config"))
		if p.cred != nil {
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: p.cred}
		}
		_ = cmd.Run()
		// A rootless podman leaves a pause process holding its user
		// namespace; it is ours to end.
		if b, err := os.ReadFile(filepath.Join(p.dir, "tmp", "pause.pid")); err == nil {
			if pause, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pause > 1 {
				_ = syscall.Kill(pause, syscall.SIGKILL)
			}
		}
	})
	pid, err := strconv.Atoi(p.run(t, "inspect", "--format", "{{.State.Pid}}", name))
	require.NoError(t, err)
	require.Positive(t, pid)
	return id, pid
}

func TestPodmanRootful(t *testing.T) {
	t.Parallel()
	p := newPodman(t, nil)
	name := fmt.Sprintf("chronos-rootful-%d", time.Now().UnixNano())
	id, pid := p.startContainer(t, name)

	info, err := ReadProc(pid)
	require.NoError(t, err)
	require.Equal(t, Container{ID: id, Runtime: RuntimePodman, Name: name, PID: 1}, info.Container)
	require.Equal(t, id[:12], info.Container.ShortID())
	require.Equal(t, 0, info.UID, "a rootful container's root is the host's")
	require.Equal(t, "42", info.PartitionID, "the booking passed in with -e")
	require.Equal(t, "sleep 600", info.Command)
	cgroup, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cgroup"))
	require.NoError(t, err)
	c, ok := containerFromCgroup(cgroup)
	require.True(t, ok, "rootful podman gives its container a cgroup: %s", cgroup)
	require.Equal(t, id, c.ID)
}

func TestPodmanRootless(t *testing.T) {
	t.Parallel()
	nobody, err := user.Lookup("nobody")
	if err != nil {
		t.Skip("no user nobody")
	}
	uid, _ := strconv.Atoi(nobody.Uid)
	gid, _ := strconv.Atoi(nobody.Gid)
	p := newPodman(t, &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)})
	name := fmt.Sprintf("chronos-rootless-%d", time.Now().UnixNano())
	id, pid := p.startContainer(t, name)

	info, err := ReadProc(pid)
	require.NoError(t, err)
	require.Equal(t, Container{ID: id, Runtime: RuntimePodman, Name: name, Rootless: true, PID: 1}, info.Container)
	require.Equal(t, uid, info.UID, "the user whose namespace it is")
	require.Equal(t, "nobody", info.User)
	require.Equal(t, "42", info.PartitionID)
	owner, ok := namespaceOwner(filepath.Join("/proc", strconv.Itoa(pid)))
	require.True(t, ok)
	require.Equal(t, uid, owner, "NS_GET_OWNER_UID, as root may ask")
}
