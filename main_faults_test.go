package main

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/storage/etcd/etcdtest"
)

// An attempt of `chronos create` in a fault test: what it asked (its length
// names it in the ledger) and what the user saw.
type attempt struct {
	minutes    int
	start, end time.Time
	r          result
}

// outcome sorts what a create said into the three things it may say: it
// booked (the id), nothing was written, or it does not know. Anything else
// (a raw gRPC error, a second line, a panic) fails the test.
func outcome(t *testing.T, a attempt) (id uint64, written string) {
	t.Helper()
	if a.r.code == 0 {
		m := regexp.MustCompile(`^Booked (\d+): 1% `).FindStringSubmatch(a.r.stdout)
		require.NotNil(t, m, "a create that exits 0 says what it booked: %q", a.r.stdout)
		id, _ = strconv.ParseUint(m[1], 10, 64)
		return id, "yes"
	}
	require.Equal(t, 1, a.r.code, a.r.stderr)
	require.Equal(t, 1, strings.Count(strings.TrimSpace(a.r.stderr), "\n")+1, "one line: %q", a.r.stderr)
	switch {
	case strings.Contains(a.r.stderr, "nothing was written"):
		return 0, "no"
	case strings.Contains(a.r.stderr, "it is not known whether this change was written"):
		return 0, "unknown"
	}
	t.Fatalf("create %dm said: %q", a.minutes, a.r.stderr)
	return 0, ""
}

// The leader of a three-member cluster killed while hosts book: creates
// go on once the others elect a new leader, within a command's timeout;
// each create either booked (and its booking is there, once), wrote
// nothing (and nothing of it is there), or said it does not know (and it
// is there at most once); no id is handed out twice and the GPU is never
// past 100%.
func TestLeaderKilledMidLoad(t *testing.T) {
	t.Parallel()
	c := etcdtest.Start(t, 3)
	lab := c.URL() + "/lab"
	require.Equal(t, 0, onHost(t, lab, "gpu1", "available").code, "gpu1's GPUs are known")
	leader := c.WaitLeader(10 * time.Second)
	require.GreaterOrEqual(t, leader, 0)

	var mu sync.Mutex
	var attempts []attempt
	var killed time.Time
	stop := make(chan struct{})
	var wg sync.WaitGroup
	next := 0
	for w := range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				mu.Lock()
				next++
				a := attempt{minutes: 10 + next}
				mu.Unlock()
				host := []string{"gpu1", "gpu2"}[w%2]
				a.start = time.Now()
				a.r = onHost(t, lab, host, "create", "gpu1:0", "1%", fmt.Sprintf("%dm", a.minutes))
				a.end = time.Now()
				mu.Lock()
				attempts = append(attempts, a)
				mu.Unlock()
			}
		})
	}
	// Some creates before, then the leader goes, then creates started
	// after the kill must succeed.
	okSince := func(since time.Time) int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, a := range attempts {
			if a.r.code == 0 && !since.IsZero() && a.start.After(since) {
				n++
			}
		}
		return n
	}
	start := time.Now()
	require.Eventually(t, func() bool { return okSince(start) >= 2 }, patience, 20*time.Millisecond)
	c.Members[leader].Kill()
	killed = time.Now()
	require.Eventually(t, func() bool { return okSince(killed) >= 3 }, patience, 20*time.Millisecond, "creates go on without the old leader")
	close(stop)
	wg.Wait()
	t.Logf("new leader m%d", c.WaitLeader(10*time.Second))

	parts := onHostList(t, lab)
	byMinutes := map[int][]uint64{}
	ids := map[uint64]bool{}
	var share float64
	for _, p := range parts {
		require.False(t, ids[p.ID], "id %d handed out twice", p.ID)
		ids[p.ID] = true
		m := int(p.Expires.Sub(p.Start).Round(time.Minute) / time.Minute)
		byMinutes[m] = append(byMinutes[m], p.ID)
		share += p.Share
	}
	require.LessOrEqual(t, share, 1.0+1e-9, "never past 100%")
	var firstOK time.Time
	said := map[string]int{}
	unknownFound := 0
	for _, a := range attempts {
		id, written := outcome(t, a)
		said[written]++
		got := byMinutes[a.minutes]
		switch written {
		case "yes":
			require.Equal(t, []uint64{id}, got, "create %dm said it booked %d", a.minutes, id)
			if a.start.After(killed) && (firstOK.IsZero() || a.end.Before(firstOK)) {
				firstOK = a.end
			}
		case "no":
			require.Empty(t, got, "create %dm said nothing was written: %s", a.minutes, a.r.stderr)
		case "unknown":
			require.LessOrEqual(t, len(got), 1, "create %dm", a.minutes)
			unknownFound += len(got)
		}
	}
	t.Logf("%d creates: %v; first success after the kill %s after it", len(attempts), said, firstOK.Sub(killed).Round(time.Millisecond))
	// An election, then a create's own time: within a command's 5 s, and
	// a race-built process starting on a loaded machine.
	require.Less(t, firstOK.Sub(killed), 12*time.Second)
	require.Equal(t, len(parts), said["yes"]+unknownFound, "no booking that no create made")
}

// Two members of three stopped: the one left cannot commit or read
// (no majority), and every command says, on one line and within its
// timeout, that the ledger cannot be reached and whether anything was
// written; once the two are back, everything written before is there and
// writing goes on.
func TestQuorumLostAndRestored(t *testing.T) {
	t.Parallel()
	c := etcdtest.Start(t, 3)
	lab := c.URL() + "/lab"
	r := onHost(t, lab, "gpu1", "create", "0", "10%", "1h")
	require.Equal(t, 0, r.code, r.stderr)
	c.Members[1].Kill()
	c.Members[2].Kill()

	var wg sync.WaitGroup
	var create, list result
	var tookCreate, tookList time.Duration
	for _, op := range []struct {
		r    *result
		took *time.Duration
		args []string
	}{
		{&create, &tookCreate, []string{"create", "0", "10%", "1h"}},
		{&list, &tookList, []string{"list"}},
	} {
		wg.Go(func() {
			start := time.Now()
			*op.r = onHost(t, lab, "gpu1", op.args...)
			*op.took = time.Since(start)
		})
	}
	wg.Wait()
	for name, r := range map[string]result{"create": create, "list": list} {
		require.Equal(t, 1, r.code, "%s: %s", name, r.stderr)
		require.Regexp(t, `^chronos: the ledger cannot be reached: etcd at 127\.0\.0\.1:\d+,127\.0\.0\.1:\d+,127\.0\.0\.1:\d+ did not answer within 5s`, r.stderr, name)
		require.Equal(t, 1, strings.Count(r.stderr, "\n"), "%s: one line: %q", name, r.stderr)
	}
	require.Contains(t, create.stderr, "nothing was written")
	t.Logf("create said after %s: %s", tookCreate.Round(time.Millisecond), strings.TrimSpace(create.stderr))
	// The timeout, and a race-built process starting on a loaded machine.
	require.Less(t, tookCreate, 12*time.Second)
	require.Less(t, tookList, 12*time.Second)

	require.NoError(t, c.Members[1].Restart())
	require.NoError(t, c.Members[2].Restart())
	require.NoError(t, c.WaitHealthy(20*time.Second))
	require.Len(t, onHostList(t, lab), 1, "the booking before is there; the refused one is not")
	r = onHost(t, lab, "gpu1", "create", "0", "10%", "1h")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "Booked 2: ")
}
