// Package etcdtest starts real etcd servers for tests: one member or a
// cluster of several, on loopback ports with temporary data directories.
// No mock stands in for etcd. The server is Debian's etcd-server (make test
// installs it), or the binary named by $CHRONOS_ETCD.
package etcdtest

import (
	"crypto/tls"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Binary finds the etcd server: $CHRONOS_ETCD, else etcd on the PATH, else
// /usr/bin/etcd.
func Binary() (string, error) {
	if p := os.Getenv("CHRONOS_ETCD"); p != "" {
		return p, nil
	}
	if p, err := exec.LookPath("etcd"); err == nil {
		return p, nil
	}
	if _, err := os.Stat("/usr/bin/etcd"); err == nil {
		return "/usr/bin/etcd", nil
	}
	return "", errors.New("no etcd server: install Debian's etcd-server (make test does, as root) or set CHRONOS_ETCD")
}

// need skips t when there is no etcd server, unless CHRONOS_REQUIRE_ETCD is
// set (make test sets it, so that CI never skips these tests silently).
func need(t testing.TB) string {
	t.Helper()
	bin, err := Binary()
	if err != nil {
		if os.Getenv("CHRONOS_REQUIRE_ETCD") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	return bin
}

// Cluster is a running set of etcd members.
type Cluster struct {
	Members []*Member
}

// Member is one etcd server process.
type Member struct {
	Name      string
	ClientURL string
	DataDir   string
	args      []string
	bin       string
	tls       *tls.Config // the client's, to ask a TLS member for its health
	mu        sync.Mutex
	cmd       *exec.Cmd
	exited    chan struct{}
}

// Start starts a cluster of n members for the test and stops it when the
// test ends. It skips the test when no etcd server can be had.
func Start(t testing.TB, n int) *Cluster {
	t.Helper()
	bin := need(t)
	c, err := StartIn(bin, t.TempDir(), n)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	return c
}

// StartTLS starts one member that serves clients over TLS only, with the
// certificates certs holds; clientCerts makes it require a client
// certificate signed by the same CA. It stops when the test ends.
func StartTLS(t testing.TB, certs *Certs, clientCerts bool) *Cluster {
	t.Helper()
	return StartTLSMembers(t, certs, clientCerts, 1)
}

// StartTLSMembers is StartTLS for a cluster of n members.
func StartTLSMembers(t testing.TB, certs *Certs, clientCerts bool, n int) *Cluster {
	t.Helper()
	bin := need(t)
	var c *Cluster
	var err error
	for range 3 { // as StartIn: a port picked free may be taken meanwhile
		if c, err = startOnce(bin, t.TempDir(), n, &tlsServer{certs, clientCerts}); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	return c
}

// tlsServer is how a member serves clients over TLS.
type tlsServer struct {
	certs       *Certs
	clientCerts bool
}

var shared struct {
	sync.Mutex
	c   *Cluster
	dir string
}

// Shared is one single-member etcd for the whole test binary, so that each
// test need not wait for a server of its own: tests keep apart by key
// prefix. StopShared (from TestMain) stops it.
func Shared(t testing.TB) *Cluster {
	t.Helper()
	bin := need(t)
	shared.Lock()
	defer shared.Unlock()
	if shared.c != nil {
		return shared.c
	}
	dir, err := os.MkdirTemp("", "chronos-etcd-")
	if err != nil {
		t.Fatal(err)
	}
	c, err := StartIn(bin, dir, 1)
	if err != nil {
		os.RemoveAll(dir)
		t.Fatal(err)
	}
	shared.c, shared.dir = c, dir
	return c
}

// Main runs a package's tests and then stops the shared server: call it
// from TestMain.
func Main(m *testing.M) {
	code := m.Run()
	StopShared()
	os.Exit(code)
}

// StopShared stops the shared server, if one was started.
func StopShared() {
	shared.Lock()
	defer shared.Unlock()
	if shared.c != nil {
		shared.c.Stop()
		os.RemoveAll(shared.dir)
		shared.c = nil
	}
}

// StartIn starts n members with data under dir and waits until the cluster
// has a leader.
func StartIn(bin, dir string, n int) (*Cluster, error) {
	var lastErr error
	// A port picked free may be taken by another test process before
	// etcd binds it: pick again.
	for range 3 {
		c, err := startOnce(bin, dir, n, nil)
		if err == nil {
			return c, nil
		}
		lastErr = err
	}
	return nil, lastErr
}

func startOnce(bin, dir string, n int, secure *tlsServer) (*Cluster, error) {
	ports, err := freePorts(2 * n)
	if err != nil {
		return nil, err
	}
	token := fmt.Sprintf("chronos-test-%d-%d", os.Getpid(), time.Now().UnixNano())
	var initial []string
	for i := range n {
		initial = append(initial, fmt.Sprintf("m%d=http://127.0.0.1:%d", i, ports[2*i+1]))
	}
	scheme := "http"
	var clientTLS *tls.Config
	if secure != nil {
		scheme = "https"
		if clientTLS, err = secure.certs.ClientTLS(); err != nil {
			return nil, err
		}
	}
	c := &Cluster{}
	for i := range n {
		client := fmt.Sprintf("%s://127.0.0.1:%d", scheme, ports[2*i])
		peer := fmt.Sprintf("http://127.0.0.1:%d", ports[2*i+1])
		m := &Member{Name: fmt.Sprintf("m%d", i), ClientURL: client, DataDir: filepath.Join(dir, fmt.Sprintf("%s-m%d", token, i)), bin: bin}
		m.args = []string{
			"--name", m.Name, "--data-dir", m.DataDir,
			"--listen-client-urls", client, "--advertise-client-urls", client,
			"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
			"--initial-cluster", strings.Join(initial, ","), "--initial-cluster-state", "new",
			"--initial-cluster-token", token,
			"--logger", "zap", "--log-level", "error", "--log-outputs", "stderr",
		}
		if secure != nil {
			m.tls = clientTLS
			m.args = append(m.args, "--cert-file", secure.certs.ServerCert, "--key-file", secure.certs.ServerKey)
			if secure.clientCerts {
				m.args = append(m.args, "--client-cert-auth", "--trusted-ca-file", secure.certs.CA)
			}
		}
		if err := m.start(); err != nil {
			c.Stop()
			return nil, err
		}
		c.Members = append(c.Members, m)
	}
	if err := c.WaitHealthy(30 * time.Second); err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

// freePorts picks n ports free now. They lie below the kernel's range of
// ephemeral ports where it can: a member restarted on its port (Restart)
// would otherwise find it taken by some test's outgoing connection.
func freePorts(n int) ([]int, error) {
	var ports []int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	lo, hi := fixedPorts()
	for tries := 0; len(ports) < n; tries++ {
		addr := "127.0.0.1:0"
		if hi > lo && tries < 100*n {
			addr = fmt.Sprintf("127.0.0.1:%d", lo+rand.IntN(hi-lo))
		}
		l, err := net.Listen("tcp", addr)
		if err != nil {
			if addr == "127.0.0.1:0" {
				return nil, err
			}
			continue // taken: pick another
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// fixedPorts is the range [lo, hi) the kernel never hands out to an
// outgoing connection: from 10000 to the start of its ephemeral range, or
// none if that range cannot be read or leaves too little room.
func fixedPorts() (lo, hi int) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0, 0
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 0, 0
	}
	first, err := strconv.Atoi(f[0])
	if err != nil || first < 11000 {
		return 0, 0
	}
	return 10000, first
}

func (m *Member) start() error {
	if err := os.MkdirAll(m.DataDir, 0o700); err != nil {
		return err
	}
	logf, err := os.OpenFile(m.DataDir+".log", os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	cmd := exec.Command(m.bin, m.args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	// Die with the test binary, whatever ends it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("start etcd: %w", err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		logf.Close()
		close(exited)
	}()
	m.mu.Lock()
	m.cmd, m.exited = cmd, exited
	m.mu.Unlock()
	return nil
}

// Endpoint is the member's client address, host:port.
func (m *Member) Endpoint() string {
	_, hostPort, _ := strings.Cut(m.ClientURL, "://")
	return hostPort
}

// Endpoints are every member's client address.
func (c *Cluster) Endpoints() []string {
	var eps []string
	for _, m := range c.Members {
		eps = append(eps, m.Endpoint())
	}
	return eps
}

// URL is the cluster as a chronos store URL: etcd://h1:p1,h2:p2.
func (c *Cluster) URL() string { return "etcd://" + strings.Join(c.Endpoints(), ",") }

// Kill ends the member with SIGKILL, as a crash would.
func (m *Member) Kill() {
	m.mu.Lock()
	cmd, exited := m.cmd, m.exited
	m.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Kill()
	<-exited
	m.mu.Lock()
	m.cmd = nil
	m.mu.Unlock()
}

// Pause stops the member (SIGSTOP): it holds its connections but answers
// nothing. Resume continues it.
// It returns once the kernel shows the process stopped: a signal is
// delivered when the process next runs, and a test that starts a request
// before then would find it answered.
func (m *Member) Pause() {
	m.signal(syscall.SIGSTOP)
	m.mu.Lock()
	cmd := m.cmd
	m.mu.Unlock()
	if cmd == nil {
		return
	}
	stat := fmt.Sprintf("/proc/%d/stat", cmd.Process.Pid)
	for range 1000 {
		b, err := os.ReadFile(stat)
		// The state follows the command's closing parenthesis: "T" stopped.
		if i := strings.LastIndexByte(string(b), ')'); err != nil || i >= 0 && strings.HasPrefix(string(b[i:]), ") T") {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// Resume continues a paused member.
func (m *Member) Resume() { m.signal(syscall.SIGCONT) }

func (m *Member) signal(sig syscall.Signal) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd != nil {
		_ = m.cmd.Process.Signal(sig)
	}
}

// Restart starts a killed member again on its data directory.
func (m *Member) Restart() error {
	m.Kill()
	for i, a := range m.args {
		if a == "--initial-cluster-state" {
			m.args[i+1] = "existing"
		}
	}
	return m.start()
}

// get asks the member for path on its client URL, as this test's client
// would (TLS and all), waiting a second at most.
func (m *Member) get(path string) (*http.Response, error) {
	cl := http.Client{Timeout: time.Second, Transport: &http.Transport{TLSClientConfig: m.tls, DisableKeepAlives: true}}
	return cl.Get(m.ClientURL + path)
}

// Healthy reports whether the member answers and sees a leader.
func (m *Member) Healthy() bool {
	resp, err := m.get("/health")
	if err != nil {
		return false
	}
	defer func() { _ = resp.Body.Close() }()
	var buf [128]byte
	n, _ := resp.Body.Read(buf[:])
	return resp.StatusCode == http.StatusOK && strings.Contains(string(buf[:n]), `"health":"true"`)
}

// WaitHealthy waits until every running member is healthy.
func (c *Cluster) WaitHealthy(within time.Duration) error {
	deadline := time.Now().Add(within)
	for _, m := range c.Members {
		m.mu.Lock()
		killed := m.cmd == nil
		m.mu.Unlock()
		for !killed && !m.Healthy() {
			select {
			case <-m.exited:
				log, _ := os.ReadFile(m.DataDir + ".log")
				return fmt.Errorf("etcd member %s exited: %s", m.Name, lastLines(string(log), 5))
			default:
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("etcd member %s not healthy within %s", m.Name, within)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return nil
}

// Stop kills every member.
func (c *Cluster) Stop() {
	for _, m := range c.Members {
		m.Resume()
		m.Kill()
	}
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
