package etcdtest

import (
	"bufio"
	"net/http"
	"strings"
	"time"
)

// Leader is the index of the member that leads the cluster, as the members'
// own metrics say (etcd_server_is_leader), or -1 when none answers that it
// does: a test that kills the leader must know which member it is.
func (c *Cluster) Leader() int {
	for i, m := range c.Members {
		if m.isLeader() {
			return i
		}
	}
	return -1
}

// WaitLeader waits until some member leads, and returns its index.
func (c *Cluster) WaitLeader(within time.Duration) int {
	deadline := time.Now().Add(within)
	for {
		if i := c.Leader(); i >= 0 || time.Now().After(deadline) {
			return i
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (m *Member) isLeader() bool {
	m.mu.Lock()
	running := m.cmd != nil
	m.mu.Unlock()
	if !running {
		return false
	}
	cl := http.Client{Timeout: time.Second, Transport: &http.Transport{TLSClientConfig: m.tls, DisableKeepAlives: true}}
	resp, err := cl.Get(m.ClientURL + "/metrics")
	if err != nil {
		return false
	}
	defer func() { _ = resp.Body.Close() }()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 2 && f[0] == "etcd_server_is_leader" {
			return f[1] == "1"
		}
	}
	return false
}
