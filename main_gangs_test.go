package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core/view"
)

// fourGPUs is the environment of a machine of four simulated GPUs.
var fourGPUs = []string{"CHRONOS_SIM_GPUS=4"}

// on4 runs the binary against db on four simulated GPUs.
func on4(t *testing.T, db string, args ...string) result {
	t.Helper()
	return runWith(t, chronosBin, db, nil, fourGPUs, 0, args...)
}

// Sixteen processes race to book several GPUs at once, on overlapping
// sets: no GPU is ever over 100%, every booking holds all its GPUs, and a
// process refused was refused because one of its GPUs had no room — so
// its GPUs are still short of room when the race is over (bookings only
// accumulate here).
func TestGangsRacingAreAllOrNothing(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "chronos.db")
	require.Equal(t, 0, on4(t, db, "available").code)
	sets := []string{"0,1", "1,2", "2,3", "0-3", "0,2", "1,3", "3", "0"}
	results := make([]result, 16)
	var wg sync.WaitGroup
	for i := range results {
		wg.Go(func() { results[i] = on4(t, db, "create", sets[i%len(sets)], "30%", "1h", "--json") })
	}
	wg.Wait()

	parts := listJSON4(t, db)
	held := map[int]float64{}
	won := 0
	for _, p := range parts {
		gpus := []int{p.Device}
		if len(p.Devices) > 0 {
			gpus = p.Devices
			require.Equal(t, p.Device, p.Devices[0])
			require.Len(t, p.DeviceUUIDs, len(p.Devices))
		}
		for _, g := range gpus {
			held[g] += p.Share
		}
	}
	for g, share := range held {
		require.LessOrEqual(t, share, 1.0+1e-9, "GPU %d over 100%%: %v", g, parts)
	}
	for i, r := range results {
		set := sets[i%len(sets)]
		if r.code == 0 {
			won++
			var p view.PartitionJSON
			require.NoError(t, json.Unmarshal([]byte(r.stdout), &p))
			require.Equal(t, set, gpuList(p), "booked the GPUs it named")
			continue
		}
		require.Equal(t, 1, r.code, r.stderr)
		require.Contains(t, r.stderr, "not enough free share", set)
		short := false
		for _, g := range parseList(t, set) {
			short = short || held[g] > 0.7+1e-9
		}
		require.True(t, short, "%s was refused, but each of its GPUs has room now: %v", set, held)
	}
	require.Equal(t, won, len(parts))
}

// listJSON4 is `list --json` on four GPUs.
func listJSON4(t *testing.T, db string) []view.PartitionJSON {
	t.Helper()
	r := on4(t, db, "list", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	var out []view.PartitionJSON
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &out))
	return out
}

// gpuList writes a booking's GPUs as its owner named them.
func gpuList(p view.PartitionJSON) string {
	if len(p.Devices) == 0 {
		return fmt.Sprint(p.Device)
	}
	s := make([]string, len(p.Devices))
	for i, d := range p.Devices {
		s[i] = fmt.Sprint(d)
	}
	out := strings.Join(s, ",")
	if out == "0,1,2,3" {
		return "0-3"
	}
	return out
}

func parseList(t *testing.T, s string) []int {
	t.Helper()
	if s == "0-3" {
		return []int{0, 1, 2, 3}
	}
	var out []int
	for _, f := range strings.Split(s, ",") {
		var g int
		_, err := fmt.Sscan(f, &g)
		require.NoError(t, err)
		out = append(out, g)
	}
	return out
}

// run on several GPUs shows the command exactly those, in every vendor
// runtime's variable, with the booking's id; list, show and --json say
// which.
func TestRunSeesExactlyItsGPUs(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "chronos.db")
	r := on4(t, db, "run", "1,3", "25%", "1h", "--", "sh", "-c", `echo "$CUDA_VISIBLE_DEVICES $CHRONOS_BOOKING_ID"`)
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "1,3 1\n", r.stdout)
	require.Contains(t, r.stderr, "booked 1: 25% (20.0 GiB) of GPU 1,3 until ")

	require.Equal(t, 0, on4(t, db, "create", "0", "100%", "1h").code)
	r = on4(t, db, "run", "any", "50%", "1h", "--gpus", "2", "--", "sh", "-c", `echo "$CUDA_VISIBLE_DEVICES"`)
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "2,3\n", r.stdout, "GPU 0 is full; of 1, 2 and 3 the simulated GPUs 2-3 are an NVLinked pair")

	r = on4(t, db, "create", "2,3", "50%", "1h")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "Booked 4: 50% (40.0 GiB) of GPU 2-3 for root")
	r = on4(t, db, "list")
	require.Regexp(t, `(?m)^4\s+root\s+2-3\s+50%\s+40\.0 GiB\s`, r.stdout)
	r = on4(t, db, "create", "any", "100%", "1h", "--gpus", "2")
	require.Equal(t, 1, r.code, "0 is full and 2-3 half full: only GPU 1 is free")
	require.Contains(t, r.stderr, "only 1 of the GPUs of this host has 100% free over its length, 2 asked. It would fit at ")
}

// A request for four GPUs at the head of the line keeps them from the
// moment they free: a one-GPU job that ends before then starts at once in
// the gap, one that would run into it waits; the release that frees the
// last GPU grants all four, and the waiter gets one booking of four.
func TestGangWaiterReservesWhileOthersBackfill(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "chronos.db")
	require.Equal(t, 0, on4(t, db, "create", "0", "100%", "1h").code)
	waiter := waiterCmd(db, "create", "0-3", "100%", "2h", "--wait", "--json")
	waiter.Env = append(waiter.Env, fourGPUs...)
	var out bytes.Buffer
	waiter.Stdout = &out
	said := saying(t, waiter)
	require.Regexp(t, `request 1 waits at position 1; should start at `+clockTime+` on GPU 0-3 \(GPU 0 has 0% free, 100% asked\)`, until(t, said, "waits"))

	r := on4(t, db, "queue", "--json")
	var line []view.QueueJSON
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &line))
	require.Len(t, line, 1)
	require.Equal(t, []int{0, 1, 2, 3}, line[0].Devices)
	require.Equal(t, []int{0, 1, 2, 3}, line[0].ETADevices)

	r = on4(t, db, "create", "1", "100%", "30m")
	require.Equal(t, 0, r.code, "it ends before the reservation: backfilled: %s", r.stderr)
	r = on4(t, db, "create", "2", "100%", "2h")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "GPU 2's free share is kept for requests waiting ahead of you")

	require.Equal(t, 0, on4(t, db, "release", "1").code)
	require.Equal(t, 0, on4(t, db, "release", "2").code)
	after := rest(said)
	require.NoError(t, waiter.Wait(), after)
	var p view.PartitionJSON
	require.NoError(t, json.Unmarshal(out.Bytes(), &p))
	require.Equal(t, []int{0, 1, 2, 3}, p.Devices)
	require.Equal(t, "Nobody is waiting.\n", on4(t, db, "queue").stdout)
}

// A waiter for several GPUs that dies gives up its reservation: what it
// kept becomes free to book at once.
func TestDeadGangWaiterFreesItsReservation(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "chronos.db")
	require.Equal(t, 0, on4(t, db, "create", "0", "100%", "1h").code)
	waiter := waiterCmd(db, "create", "0-3", "100%", "2h", "--wait")
	waiter.Env = append(waiter.Env, fourGPUs...)
	said := saying(t, waiter)
	until(t, said, "waits at position 1")
	require.Equal(t, 1, on4(t, db, "create", "2", "100%", "2h").code, "kept for the waiter")
	require.NoError(t, waiter.Process.Signal(syscall.SIGKILL))
	_ = waiter.Wait()
	r := on4(t, db, "create", "2", "100%", "2h")
	require.Equal(t, 0, r.code, "the dead waiter's place is free: %s", r.stderr)
}
