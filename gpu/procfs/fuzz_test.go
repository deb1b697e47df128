package procfs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chronos-gpu/chronos/core/coretest"
)

func FuzzContainerFromCgroup(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join("..", "testdata", "drm", "*", "proc", "*", "cgroup"))
	for _, path := range seeds {
		if b, err := os.ReadFile(path); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("0::/kubepods.slice/kubepods-pod1.slice/cri-containerd-" + strings.Repeat("ab", 32) + ".scope\n"))
	f.Add([]byte("1:name=systemd:/lxc/x\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, ok := containerFromCgroup(b)
		if !ok {
			if c != (Container{}) {
				t.Fatalf("no container, yet %+v", c)
			}
			return
		}
		if c.ID == "" || !strings.Contains(string(b), c.ID) || c.Runtime == "" {
			t.Fatalf("%q gave %+v", b, c)
		}
		if c.Runtime != RuntimeLXC && !isContainerID(c.ID) {
			t.Fatalf("%q gave a container id that is not one: %q", b, c.ID)
		}
		if len(c.ShortID()) > len(c.ID) || c.Label() == "" {
			t.Fatalf("%+v: short id %q, label %q", c, c.ShortID(), c.Label())
		}
	})
}

func FuzzContainerFromMonitor(f *testing.F) {
	f.Add([]byte("/usr/bin/conmon\x00-c\x00" + strings.Repeat("c9", 32) + "\x00-n\x00web\x00"))
	f.Add([]byte("containerd-shim-runc-v2\x00-namespace\x00moby\x00-id\x00" + strings.Repeat("3f", 32) + "\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, ok := containerFromMonitor(b)
		if ok && !isContainerID(c.ID) {
			t.Fatalf("%q gave %+v", b, c)
		}
	})
}

func FuzzRootMapping(f *testing.F) {
	f.Add([]byte("         0          0 4294967295\n"))
	f.Add([]byte("         0       1000          1\n         1     100000      65536\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		host, identity := rootMapping(b)
		if identity && host != 0 {
			t.Fatalf("%q: the host's own map, yet root maps to %d", b, host)
		}
		if host < -1 {
			t.Fatalf("%q: host uid %d", b, host)
		}
	})
}

func FuzzParseStat(f *testing.F) {
	f.Add([]byte(coretest.FakeStat(42, "a) (b c) 7", 987654)))
	f.Add([]byte("100 (x S 1 2\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := parseStat(b)
		if err == nil && strings.Contains(st.comm, "\x00") && !strings.Contains(string(b), "\x00") {
			t.Fatalf("%q: comm %q", b, st.comm)
		}
	})
}
