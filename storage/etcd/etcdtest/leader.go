package etcdtest

import (
	"bufio"
	"fmt"
	"strconv"
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
	v, err := m.Metric("etcd_server_is_leader")
	return err == nil && v == 1
}

// Metric is the sum of the member's samples of the named metric whose
// labels include every one given (as `name="value"`), from its /metrics.
func (m *Member) Metric(name string, labels ...string) (float64, error) {
	m.mu.Lock()
	running := m.cmd != nil
	m.mu.Unlock()
	if !running {
		return 0, fmt.Errorf("%s is not running", m.Name)
	}
	resp, err := m.get("/metrics")
	if err != nil {
		return 0, err
	}
	defer func() { _ = resp.Body.Close() }()
	sum := 0.0
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 2 {
			continue
		}
		metric, labelled, _ := strings.Cut(f[0], "{")
		if metric != name || !allIn(labelled, labels) {
			continue
		}
		v, err := strconv.ParseFloat(f[1], 64)
		if err != nil {
			return 0, fmt.Errorf("%s: %s: %w", m.Name, f[0], err)
		}
		sum += v
	}
	return sum, sc.Err()
}

func allIn(s string, parts []string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}
