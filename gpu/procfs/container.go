package procfs

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// Runtime is a container runtime as chronos recognises it.
type Runtime string

// The runtimes whose cgroup paths and state files chronos reads.
const (
	RuntimeDocker     Runtime = "docker"
	RuntimePodman     Runtime = "podman"
	RuntimeContainerd Runtime = "containerd" // also Kubernetes on containerd
	RuntimeCRIO       Runtime = "cri-o"
	RuntimeLXC        Runtime = "lxc"
)

// Container is the container a process runs in, as the host sees it. The
// zero value means the process is not in a container chronos recognises.
type Container struct {
	// ID is the runtime's id (64 hex digits), or the name of an LXC container.
	ID      string  `json:"id"`
	Runtime Runtime `json:"runtime"`
	// Name is the container's name from the runtime's own files, "" when
	// they could not be read (they are often root's alone).
	Name string `json:"name,omitempty"`
	// Pod is "namespace/pod" for a Kubernetes container.
	Pod string `json:"pod,omitempty"`
	// Rootless: the container's user namespace belongs to an ordinary
	// user, who is then the process's owner (Process.UID).
	Rootless bool `json:"rootless,omitempty"`
	// PID is the process's pid inside the container's pid namespace; 0 when
	// it shares the host's.
	PID int `json:"pid_in_container,omitempty"`

	// namespace is containerd's namespace ("moby", "k8s.io", "default"),
	// where its state files live.
	namespace string
}

// InContainer reports whether c names a container.
func (c Container) InContainer() bool { return c.ID != "" }

// ShortID is the id as `docker ps` and `podman ps` print it.
func (c Container) ShortID() string {
	if len(c.ID) == 64 {
		return c.ID[:12]
	}
	return c.ID
}

// Label is what a table shows: the name when known, else the short id; ""
// outside a container.
func (c Container) Label() string {
	if c.Name != "" {
		return c.Name
	}
	return c.ShortID()
}

// scopeRuntimes are the prefixes of the systemd scopes and cgroupfs
// directories runtimes name for their containers: PREFIX-ID(.scope).
var scopeRuntimes = map[string]Runtime{
	"docker": RuntimeDocker, "libpod": RuntimePodman, "cri-containerd": RuntimeContainerd,
	"crio": RuntimeCRIO, "nerdctl": RuntimeContainerd,
}

// isContainerID reports whether s is a full container id: 64 lowercase hex
// digits. (Read for every process, so no regular expression.)
func isContainerID(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := range len(s) {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// scopeOf reads PREFIX-ID or PREFIX-ID.scope.
func scopeOf(part string) (prefix, id string, ok bool) {
	part = strings.TrimSuffix(part, ".scope")
	if len(part) < 66 || part[len(part)-65] != '-' {
		return "", "", false
	}
	prefix, id = part[:len(part)-65], part[len(part)-64:]
	_, known := scopeRuntimes[prefix]
	return prefix, id, known && isContainerID(id)
}

// containerFromCgroup finds the container in /proc/PID/cgroup (v1 or v2):
// Docker's docker-ID.scope and /docker/ID, Podman's libpod-ID(.scope),
// containerd's /NAMESPACE/ID, nerdctl-ID.scope and cri-containerd-ID.scope,
// CRI-O's crio-ID.scope, Kubernetes' kubepods trees around them, and LXC's
// lxc.payload.NAME and /lxc/NAME.
func containerFromCgroup(cgroup []byte) (Container, bool) {
	for line := range bytes.Lines(cgroup) {
		// hierarchy-id:controllers:path; the path may itself hold colons.
		parts := strings.SplitN(strings.TrimRight(string(line), "\n"), ":", 3)
		if len(parts) != 3 {
			continue
		}
		if c, ok := containerFromPath(parts[2]); ok {
			return c, true
		}
	}
	return Container{}, false
}

func containerFromPath(path string) (Container, bool) {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	kube := false
	for _, p := range parts {
		if strings.HasPrefix(p, "kubepods") {
			kube = true
		}
	}
	// The innermost match wins: Docker in Docker is the inner container.
	for i := len(parts) - 1; i >= 0; i-- {
		p := parts[i]
		if prefix, id, ok := scopeOf(p); ok {
			c := Container{ID: id, Runtime: scopeRuntimes[prefix]}
			switch {
			case c.Runtime == RuntimeDocker:
				c.namespace = "moby"
			case c.Runtime != RuntimeContainerd:
			case kube:
				c.namespace = "k8s.io"
			default: // nerdctl
				c.namespace = "default"
			}
			return c, true
		}
		if isContainerID(p) {
			parent := ""
			if i > 0 {
				parent = parts[i-1]
			}
			switch {
			case parent == "docker":
				return Container{ID: p, Runtime: RuntimeDocker, namespace: "moby"}, true
			case kube:
				return Container{ID: p, Runtime: RuntimeContainerd, namespace: "k8s.io"}, true
			case parent != "":
				// ctr and other containerd clients: /NAMESPACE/ID.
				return Container{ID: p, Runtime: RuntimeContainerd, namespace: parent}, true
			}
		}
		if name, ok := strings.CutPrefix(p, "lxc.payload."); ok && name != "" {
			return Container{ID: name, Name: name, Runtime: RuntimeLXC}, true
		}
		if i > 0 && parts[i-1] == "lxc" && p != "" {
			return Container{ID: p, Name: p, Runtime: RuntimeLXC}, true
		}
	}
	return Container{}, false
}

// containerFromAncestors finds the runtime's monitor among pid's ancestors:
// Podman's and CRI-O's conmon (`-c ID -n NAME`) or containerd's shim
// (`-namespace NS -id ID`). It serves where the cgroup path says nothing,
// as for rootless Podman on cgroup v1, which cannot make cgroups.
func (r ProcReader) containerFromAncestors(ppid int) (Container, bool) {
	for range 32 {
		if ppid <= 1 {
			return Container{}, false
		}
		dir := filepath.Join(r.root(), strconv.Itoa(ppid))
		cmdline, err := os.ReadFile(filepath.Join(dir, "cmdline"))
		if err != nil {
			return Container{}, false
		}
		if c, ok := containerFromMonitor(cmdline); ok {
			return c, true
		}
		stat, err := os.ReadFile(filepath.Join(dir, "stat"))
		if err != nil {
			return Container{}, false
		}
		st, err := parseStat(stat)
		if err != nil {
			return Container{}, false
		}
		ppid = st.ppid
	}
	return Container{}, false
}

// containerFromMonitor reads a conmon or containerd-shim command line.
func containerFromMonitor(cmdline []byte) (Container, bool) {
	args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
	prog := filepath.Base(args[0])
	flag := func(names ...string) string {
		for i, a := range args[1:] {
			for _, n := range names {
				if v, ok := strings.CutPrefix(a, n+"="); ok {
					return v
				}
				if a == n && i+2 < len(args) {
					return args[i+2]
				}
			}
		}
		return ""
	}
	switch {
	case prog == "conmon":
		id := flag("-c", "--cid")
		if !isContainerID(id) {
			return Container{}, false
		}
		c := Container{ID: id, Runtime: RuntimePodman, Name: flag("-n", "--name")}
		if strings.HasPrefix(c.Name, "k8s_") {
			c.Runtime = RuntimeCRIO
		}
		return c, true
	case strings.HasPrefix(prog, "containerd-shim"):
		id, ns := flag("-id"), flag("-namespace")
		if !isContainerID(id) {
			return Container{}, false
		}
		c := Container{ID: id, Runtime: RuntimeContainerd, namespace: ns}
		if ns == "moby" {
			c.Runtime = RuntimeDocker
		}
		return c, true
	}
	return Container{}, false
}

// containerNames remembers names by runtime and id: a container keeps its
// name, and its state file is read once rather than once per process. It
// is emptied when it grows past a bound, so a long-running monitor on a
// busy host does not grow without end.
var containerNames = struct {
	sync.Mutex
	m map[string]Container
}{m: map[string]Container{}}

const containerNamesMax = 1024

// describe fills in c's name and pod where the runtime's files say; ppid
// is the process's parent, where conmon may be found.
func (r ProcReader) describe(c *Container, ppid int) {
	key := r.hostRoot() + "\x00" + string(c.Runtime) + "\x00" + c.ID
	containerNames.Lock()
	known, ok := containerNames.m[key]
	containerNames.Unlock()
	if ok {
		c.Name, c.Pod = known.Name, known.Pod
		return
	}
	if c.Name == "" {
		switch c.Runtime {
		case RuntimeDocker:
			c.Name = r.dockerName(c.ID)
		case RuntimeContainerd:
			c.Name, c.Pod = r.ociNames(filepath.Join("run/containerd/io.containerd.runtime.v2.task", c.namespace, c.ID, "config.json"),
				"io.kubernetes.cri.container-name", "io.kubernetes.cri.sandbox-namespace", "io.kubernetes.cri.sandbox-name", "nerdctl/name")
		case RuntimeCRIO:
			c.Name, c.Pod = r.ociNames(filepath.Join("run/containers/storage/overlay-containers", c.ID, "userdata/config.json"),
				"io.kubernetes.container.name", "io.kubernetes.pod.namespace", "io.kubernetes.pod.name", "")
		}
	}
	if c.Name == "" && (c.Runtime == RuntimePodman || c.Runtime == RuntimeCRIO) {
		// Their conmon names the container on its command line, which
		// anyone may read.
		if m, ok := r.containerFromAncestors(ppid); ok && m.ID == c.ID {
			c.Name = m.Name
		}
	}
	containerNames.Lock()
	if len(containerNames.m) >= containerNamesMax {
		clear(containerNames.m)
	}
	containerNames.m[key] = *c
	containerNames.Unlock()
}

// dockerName reads the name Docker keeps in its container's config.v2.json
// (root's alone on most hosts).
func (r ProcReader) dockerName(id string) string {
	b, err := os.ReadFile(filepath.Join(r.hostRoot(), "var/lib/docker/containers", id, "config.v2.json"))
	if err != nil {
		return ""
	}
	var cfg struct{ Name string }
	if json.Unmarshal(b, &cfg) != nil {
		return ""
	}
	return strings.TrimPrefix(cfg.Name, "/")
}

// ociNames reads a container's name and pod from the annotations of the
// OCI bundle a runtime keeps under /run.
func (r ProcReader) ociNames(rel, nameKey, nsKey, podKey, altNameKey string) (name, pod string) {
	b, err := os.ReadFile(filepath.Join(r.hostRoot(), rel))
	if err != nil {
		return "", ""
	}
	var spec struct {
		Annotations map[string]string `json:"annotations"`
	}
	if json.Unmarshal(b, &spec) != nil {
		return "", ""
	}
	a := spec.Annotations
	name = a[nameKey]
	if name == "" && altNameKey != "" {
		name = a[altNameKey]
	}
	if a[podKey] != "" {
		pod = a[nsKey] + "/" + a[podKey]
	}
	return name, pod
}

// namespaceOwner is the host uid of the user whose user namespace pid lives
// in; ok is false in the host's own namespace. NS_GET_OWNER_UID says it
// exactly but needs root or the same user; others fall back to the host uid
// that the namespace's root maps to (uid_map, readable by anyone), which
// for rootless Podman and Docker is the user.
func namespaceOwner(pidDir string) (uid int, ok bool) {
	m, err := os.ReadFile(filepath.Join(pidDir, "uid_map"))
	if err != nil {
		return 0, false
	}
	host, identity := rootMapping(m)
	if identity {
		return 0, false
	}
	if f, err := os.Open(filepath.Join(pidDir, "ns/user")); err == nil {
		owner, err := unix.IoctlGetUint32(int(f.Fd()), unix.NS_GET_OWNER_UID)
		f.Close()
		if err == nil {
			return int(owner), true
		}
	}
	if host < 0 {
		return 0, false
	}
	return host, true
}

// rootMapping reads a uid_map: the host uid that uid 0 maps to (-1 when
// unmapped), and whether the map is the host's own (0 0 4294967295).
func rootMapping(uidMap []byte) (host int, identity bool) {
	host = -1
	lines := 0
	for line := range bytes.Lines(uidMap) {
		f := strings.Fields(string(line))
		if len(f) == 0 {
			continue
		}
		lines++
		if len(f) != 3 {
			return -1, false
		}
		inside, err1 := strconv.ParseUint(f[0], 10, 32)
		outside, err2 := strconv.ParseUint(f[1], 10, 32)
		count, err3 := strconv.ParseUint(f[2], 10, 32)
		if err1 != nil || err2 != nil || err3 != nil {
			return -1, false
		}
		if lines == 1 && inside == 0 && outside == 0 && count == 4294967295 {
			identity = true
		}
		if inside == 0 && count > 0 {
			host = int(outside)
		}
	}
	return host, identity && lines == 1
}
