package procfs

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The cgroup paths runtimes give their containers, as /proc/PID/cgroup
// shows them on cgroup v2 (one "0::" line) and v1 (a line per hierarchy).
func TestContainerFromCgroup(t *testing.T) {
	t.Parallel()
	const id = "3f2a9c1b7d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8"
	v1 := func(path string) string {
		return "12:pids:" + path + "\n11:memory:" + path + "\n4:cpu,cpuacct:" + path + "\n1:name=systemd:" + path + "\n0::/\n"
	}
	for _, c := range []struct {
		name, cgroup string
		want         Container
	}{
		{"docker v2 systemd", "0::/system.slice/docker-" + id + ".scope\n", Container{ID: id, Runtime: RuntimeDocker, namespace: "moby"}},
		{"docker v1 cgroupfs", v1("/docker/" + id), Container{ID: id, Runtime: RuntimeDocker, namespace: "moby"}},
		{"docker v1 systemd", v1("/system.slice/docker-" + id + ".scope"), Container{ID: id, Runtime: RuntimeDocker, namespace: "moby"}},
		{"rootless docker v2", "0::/user.slice/user-1000.slice/user@1000.service/user.slice/docker-" + id + ".scope\n", Container{ID: id, Runtime: RuntimeDocker, namespace: "moby"}},
		{"docker in docker", "0::/docker/" + strings.Repeat("a", 64) + "/docker/" + id + "\n", Container{ID: id, Runtime: RuntimeDocker, namespace: "moby"}},
		{"podman rootful v2", "0::/machine.slice/libpod-" + id + ".scope/container\n", Container{ID: id, Runtime: RuntimePodman}},
		{"podman rootful v1 cgroupfs", v1("/libpod_parent/libpod-" + id), Container{ID: id, Runtime: RuntimePodman}},
		{"podman rootless v2", "0::/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" + id + ".scope\n", Container{ID: id, Runtime: RuntimePodman}},
		{"containerd ctr v1", v1("/default/" + id), Container{ID: id, Runtime: RuntimeContainerd, namespace: "default"}},
		{"nerdctl v2", "0::/system.slice/nerdctl-" + id + ".scope\n", Container{ID: id, Runtime: RuntimeContainerd, namespace: "default"}},
		{"kubernetes containerd v1 cgroupfs", v1("/kubepods/burstable/pod0c1d2e3f-4a5b-6c7d-8e9f-0a1b2c3d4e5f/" + id),
			Container{ID: id, Runtime: RuntimeContainerd, namespace: "k8s.io"}},
		{"kubernetes containerd v2 systemd", "0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod0c1d2e3f_4a5b_6c7d_8e9f_0a1b2c3d4e5f.slice/cri-containerd-" + id + ".scope\n",
			Container{ID: id, Runtime: RuntimeContainerd, namespace: "k8s.io"}},
		{"kubernetes guaranteed pod v2", "0::/kubepods.slice/kubepods-pod0c1d2e3f_4a5b.slice/cri-containerd-" + id + ".scope\n",
			Container{ID: id, Runtime: RuntimeContainerd, namespace: "k8s.io"}},
		{"kubernetes cri-o v2", "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod12.slice/crio-" + id + ".scope\n", Container{ID: id, Runtime: RuntimeCRIO}},
		{"lxc 4 payload", "0::/lxc.payload.build-box/init.scope\n", Container{ID: "build-box", Name: "build-box", Runtime: RuntimeLXC}},
		{"lxc 3 v1", v1("/lxc/build-box"), Container{ID: "build-box", Name: "build-box", Runtime: RuntimeLXC}},
	} {
		got, ok := containerFromCgroup([]byte(c.cgroup))
		require.True(t, ok, c.name)
		require.Equal(t, c.want, got, c.name)
	}

	for _, c := range []struct{ name, cgroup string }{
		{"host v2 session", "0::/user.slice/user-1000.slice/session-3.scope\n"},
		{"host v1 root", v1("/")},
		{"a service", "0::/system.slice/ssh.service\n"},
		{"dockerd itself", "0::/system.slice/docker.service\n"},
		{"podman's conmon, outside the container", "0::/machine.slice/libpod-conmon-" + id + ".scope\n"},
		{"a short id is no id", "0::/docker/3f2a9c1b7d4e\n"},
		{"upper case is no id", "0::/docker/" + strings.ToUpper(id) + "\n"},
		{"lxc monitor", "0::/lxc.monitor.build-box\n"},
		{"empty", ""},
		{"garbage", "garbage\n::\n12:memory\n"},
	} {
		got, ok := containerFromCgroup([]byte(c.cgroup))
		require.False(t, ok, "%s: %+v", c.name, got)
	}
}

func TestContainerFromMonitor(t *testing.T) {
	t.Parallel()
	const id = "c97a9ac744b57c11308d04624fc62b087c3031d9ffe95085f68e28ec234f735a"
	args := func(a ...string) []byte { return []byte(strings.Join(a, "\x00") + "\x00") }
	for _, c := range []struct {
		name    string
		cmdline []byte
		want    Container
		ok      bool
	}{
		{"podman's conmon", args("/usr/bin/conmon", "--api-version", "1", "-c", id, "-u", id, "-r", "/usr/bin/runc", "-n", "rltest"),
			Container{ID: id, Runtime: RuntimePodman, Name: "rltest"}, true},
		{"long flags", args("conmon", "--cid="+id, "--name=web"), Container{ID: id, Runtime: RuntimePodman, Name: "web"}, true},
		{"cri-o's conmon", args("/usr/libexec/crio/conmon", "-c", id, "-n", "k8s_vllm_vllm-7d9f8_inference_0c1d_0"),
			Container{ID: id, Runtime: RuntimeCRIO, Name: "k8s_vllm_vllm-7d9f8_inference_0c1d_0"}, true},
		{"docker's shim", args("/usr/bin/containerd-shim-runc-v2", "-namespace", "moby", "-id", id, "-address", "/run/containerd/containerd.sock"),
			Container{ID: id, Runtime: RuntimeDocker, namespace: "moby"}, true},
		{"containerd's shim", args("containerd-shim-runc-v2", "-namespace", "k8s.io", "-id", id),
			Container{ID: id, Runtime: RuntimeContainerd, namespace: "k8s.io"}, true},
		{"conmon without an id", args("conmon", "-n", "x"), Container{}, false},
		{"a flag at the end", args("conmon", "-c"), Container{}, false},
		{"bash", args("-bash"), Container{}, false},
		{"empty", nil, Container{}, false},
	} {
		got, ok := containerFromMonitor(c.cmdline)
		require.Equal(t, c.ok, ok, c.name)
		require.Equal(t, c.want, got, c.name)
	}
}

func TestRootMapping(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		uidMap   string
		host     int
		identity bool
	}{
		{"         0          0 4294967295\n", 0, true},
		{"         0       1000          1\n         1     100000      65536\n", 1000, false},   // rootless Podman
		{"         0      65534          1\n", 65534, false},                                    // single mapping
		{"      1000       1000          1\n         0     100000       1000\n", 100000, false}, // --userns=keep-id
		{"         0     200000      65536\n", 200000, false},                                   // rootful --userns=auto
		{"", -1, false},
		{"0 zero 1\n", -1, false},
		{"0 0\n", -1, false},
	} {
		host, identity := rootMapping([]byte(c.uidMap))
		require.Equal(t, c.host, host, c.uidMap)
		require.Equal(t, c.identity, identity, c.uidMap)
	}
}

func TestContainerLabel(t *testing.T) {
	t.Parallel()
	const id = "3f2a9c1b7d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8"
	require.Equal(t, "", Container{}.Label())
	require.False(t, Container{}.InContainer())
	require.Equal(t, "3f2a9c1b7d4e", Container{ID: id}.Label())
	require.Equal(t, "web", Container{ID: id, Name: "web"}.Label())
	require.Equal(t, "build-box", Container{ID: "build-box"}.ShortID())
}
