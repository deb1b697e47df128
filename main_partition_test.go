package main

import (
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/storage/etcd/etcdtest"
)

// netPartition is a host cut off by the network: a network namespace of
// its own joined to this one by a veth pair, through which it reaches the
// cluster's members (relays on this side's end of the pair forward to
// them on loopback). Cut drops every packet the namespace sends, in its
// own firewall: connections hang as across a broken network, rather than
// being refused. Nothing outside the namespace is touched.
type netPartition struct {
	ns    string
	store string // the cluster as seen from the namespace, an etcd URL
}

// newPartition sets one up for c, or skips the test where network
// namespaces cannot be made (not root, no ip(8)).
func newPartition(t *testing.T, c *etcdtest.Cluster, path string) *netPartition {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("network namespaces need root")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("no ip(8) to make a network namespace")
	}
	tag := fmt.Sprintf("chr%05d", rand.IntN(100000))
	a, b := 1+rand.IntN(250), rand.IntN(64)*4 // a /30 of 10.201.0.0/16
	here, there := fmt.Sprintf("10.201.%d.%d", a, b+1), fmt.Sprintf("10.201.%d.%d", a, b+2)
	p := &netPartition{ns: tag}
	ip := func(args ...string) {
		t.Helper()
		out, err := exec.Command("ip", args...).CombinedOutput()
		require.NoError(t, err, "ip %s: %s", strings.Join(args, " "), out)
	}
	ip("netns", "add", tag)
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", tag).Run() })
	ip("link", "add", tag+"h", "type", "veth", "peer", "name", tag+"n")
	t.Cleanup(func() { _ = exec.Command("ip", "link", "del", tag+"h").Run() })
	ip("link", "set", tag+"n", "netns", tag)
	ip("addr", "add", here+"/30", "dev", tag+"h")
	ip("link", "set", tag+"h", "up")
	ip("netns", "exec", tag, "ip", "addr", "add", there+"/30", "dev", tag+"n")
	ip("netns", "exec", tag, "ip", "link", "set", tag+"n", "up")
	ip("netns", "exec", tag, "ip", "link", "set", "lo", "up")
	var eps []string
	for _, ep := range c.Endpoints() {
		eps = append(eps, relay(t, here, ep))
	}
	p.store = "etcd://" + strings.Join(eps, ",") + path
	return p
}

// relay forwards connections to on's address at to, until the test ends.
func relay(t *testing.T, on, to string) string {
	t.Helper()
	l, err := net.Listen("tcp", on+":0")
	require.NoError(t, err)
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		_ = l.Close()
		mu.Lock()
		for _, c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
	})
	go func() {
		for {
			in, err := l.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", to)
			if err != nil {
				_ = in.Close()
				continue
			}
			mu.Lock()
			conns = append(conns, in, out)
			mu.Unlock()
			go func() { _, _ = io.Copy(out, in); _ = out.Close() }()
			go func() { _, _ = io.Copy(in, out); _ = in.Close() }()
		}
	}()
	return l.Addr().String()
}

func (p *netPartition) firewall(t *testing.T, op string) {
	t.Helper()
	out, err := exec.Command("ip", "netns", "exec", p.ns, "iptables", op, "OUTPUT", "-j", "DROP").CombinedOutput()
	require.NoError(t, err, "%s", out)
}

// Cut drops everything the namespace sends; Heal lets it through again.
func (p *netPartition) Cut(t *testing.T)  { p.firewall(t, "-A") }
func (p *netPartition) Heal(t *testing.T) { p.firewall(t, "-D") }

// run runs the real binary in the namespace, as host.
func (p *netPartition) run(t *testing.T, host string, args ...string) result {
	t.Helper()
	env := []string{"CHRONOS_STORE=" + p.store, "CHRONOS_HOST=" + host, "CHRONOS_STORE_FILE=/nonexistent"}
	return runWith(t, "ip", "", nil, env, 0, append([]string{"netns", "exec", p.ns, chronosBin}, args...)...)
}

// A host cut off from the cluster by the network: its commands say, on one
// line and within their timeout, that the ledger cannot be reached and
// that nothing was written; the other hosts go on booking, its GPUs too;
// once the network is back it sees what they did, and nothing of what it
// was refused.
func TestNetworkPartitionOfOneHost(t *testing.T) {
	t.Parallel()
	c := etcdtest.Start(t, 3)
	lab := c.URL() + "/lab"
	p := newPartition(t, c, "/lab")
	r := p.run(t, "gpuP", "create", "0", "10%", "1h")
	require.Equal(t, 0, r.code, "through the namespace's network: %s", r.stderr)

	p.Cut(t)
	var cut, other result
	var took time.Duration
	var wg sync.WaitGroup
	wg.Go(func() {
		start := time.Now()
		cut = p.run(t, "gpuP", "create", "0", "10%", "1h")
		took = time.Since(start)
	})
	wg.Go(func() { other = onHost(t, lab, "gpuA", "create", "gpuP:0", "20%", "1h") })
	wg.Wait()
	require.Equal(t, 1, cut.code, cut.stderr)
	require.Equal(t, "chronos: the ledger cannot be reached: etcd at "+strings.TrimPrefix(strings.TrimSuffix(p.store, "/lab"), "etcd://")+
		" did not answer within 5s (read: context deadline exceeded); nothing was written\n", cut.stderr)
	require.Less(t, took, 12*time.Second, "the timeout, and a race-built process starting on a loaded machine")
	require.Equal(t, 0, other.code, "the other hosts carry on: %s", other.stderr)
	require.Contains(t, other.stdout, "Booked 2: 20% (16.0 GiB) of GPU gpuP:0")
	r = onHost(t, lab, "gpuA", "list", "--host", "gpuP")
	require.Equal(t, 0, r.code, r.stderr)

	p.Heal(t)
	r = p.run(t, "gpuP", "list", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, `"id": 2`, "it sees what the others booked meanwhile")
	require.NotContains(t, r.stdout, `"id": 3`, "and nothing of what it was refused")
}
