package main

import (
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core/view"
	"github.com/chronos-gpu/chronos/storage/etcd/etcdtest"
	"github.com/chronos-gpu/chronos/storage/storetest"
)

// labStore is a fresh ledger on the test binary's etcd, as a store URL.
func labStore(t *testing.T) string {
	t.Helper()
	return etcdtest.Shared(t).URL() + storetest.NewPrefix()
}

// onHost runs the real binary as if on host, with the ledger at store and
// no ledger file or store file of the machine's in the way.
func onHost(t testing.TB, store, host string, args ...string) result {
	t.Helper()
	return runEnv(t, []string{"CHRONOS_STORE=" + store, "CHRONOS_HOST=" + host, "CHRONOS_STORE_FILE=/nonexistent"}, args...)
}

// runEnv runs the real binary with env, and no ledger file (CHRONOS_DB
// empty).
func runEnv(t testing.TB, env []string, args ...string) result {
	t.Helper()
	return runWith(t, chronosBin, "", nil, env, 0, args...)
}

// From any host of a lab a person books any host's GPU as HOST:INDEX; lists
// say whose GPU each booking holds; chronos run refuses another host's.
func TestHostsOnTheCommandLine(t *testing.T) {
	t.Parallel()
	lab := labStore(t)
	r := onHost(t, lab, "gpu1", "create", "0", "60%", "1h")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "Booked 1: 60% (48.0 GiB) of GPU 0 for")

	r = onHost(t, lab, "gpu2", "create", "gpu1:0", "50%", "1h")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "GPU gpu1:0 has 40% (32.0 GiB) free, 50% asked")
	r = onHost(t, lab, "gpu2", "create", "gpu1:0", "40%", "1h")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "Booked 2: 40% (32.0 GiB) of GPU gpu1:0")
	r = onHost(t, lab, "gpu2", "create", "0", "10%", "1h")
	require.Equal(t, 0, r.code, r.stderr)
	r = onHost(t, lab, "gpu2", "create", "gpu7:0", "10%", "1h")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "no GPUs of host gpu7 are known")

	r = onHost(t, lab, "gpu2", "list", "--host", "gpu1")
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `(?m)^ID\s+HOST\s+OWNER\s+GPU`, r.stdout)
	require.Regexp(t, `(?m)^1\s+gpu1\s+\S+\s+0\s+60%`, r.stdout)
	require.Regexp(t, `(?m)^2\s+gpu1\s+\S+\s+0\s+40%`, r.stdout)
	require.NotContains(t, r.stdout, "gpu2")
	r = onHost(t, lab, "gpu1", "list", "--json")
	var parts []view.PartitionJSON
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &parts))
	require.Equal(t, []string{"gpu1", "gpu1", "gpu2"}, []string{parts[0].Host, parts[1].Host, parts[2].Host})
	require.Contains(t, r.stdout, `"host": "gpu1"`)

	r = onHost(t, lab, "gpu1", "available", "gpu2:")
	require.Equal(t, "90% (72.0 GiB) free on GPU gpu2:0\n100% (80.0 GiB) free on GPU gpu2:1\n", r.stdout)

	r = onHost(t, lab, "gpu2", "run", "--partition", "2", "--", "true")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "booking 2 is on gpu1")
	r = onHost(t, lab, "gpu2", "run", "gpu1:1", "10%", "1h", "--", "true")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "run it on gpu1")
	r = onHost(t, lab, "gpu2", "run", "0", "10%", "1h", "--", "sh", "-c", "echo $CHRONOS_PARTITION_ID")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "4\n", r.stdout)

	// release --mine names each GPU as list does: another host's by host.
	r = onHost(t, lab, "gpu2", "release", "--mine")
	require.Equal(t, 2, r.code)
	require.Contains(t, r.stderr, "#1 (GPU gpu1:0, 60%), #2 (GPU gpu1:0, 40%), #3 (GPU 0, 10%)")
}

// Sixteen chronos processes on two hosts race for 10% of one GPU each:
// exactly ten win, whichever host they run on.
func TestSixteenProcessesOnTwoHostsNeverOverbook(t *testing.T) {
	t.Parallel()
	lab := labStore(t)
	// gpuA's chronos has run once, so its GPUs are known to gpuB.
	require.Equal(t, 0, onHost(t, lab, "gpuA", "available").code)
	race(t, 16, func(i int) result {
		return onHost(t, lab, []string{"gpuA", "gpuB"}[i%2], "create", "gpuA:1", "0.1", "1h")
	})
	require.Equal(t, "0% (0 MiB) free on GPU gpuA:1\n", onHost(t, lab, "gpuB", "available", "gpuA:1").stdout)
	require.Equal(t, "100% (80.0 GiB) free on GPU 1\n", onHost(t, lab, "gpuB", "available", "1").stdout)
}

// etcd that cannot be reached gives a clear error and exit 1 within the
// timeout (TestEtcdStopsAnswering: one that stops answering).
func TestEtcdDown(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	nobody := "etcd://" + l.Addr().String()
	_ = l.Close()
	start := time.Now()
	r := onHost(t, nobody, "gpu1", "list")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "chronos: the ledger cannot be reached: etcd at "+strings.TrimPrefix(nobody, "etcd://")+" did not answer within 5s")
	// Not long past the timeout (errors once came after 20 s and more);
	// the rest is a race-built process starting on a loaded machine.
	require.Less(t, time.Since(start), 12*time.Second)
}

// etcd that stops answering gives a clear error and exit 1 within the
// timeout; nothing is written, and once it answers again everything
// carries on. (Apart from TestEtcdDown so that their timeouts, real
// seconds of etcd's client, run side by side.)
func TestEtcdStopsAnswering(t *testing.T) {
	t.Parallel()
	c := etcdtest.Start(t, 1)
	lab := c.URL() + "/lab"
	require.Equal(t, 0, onHost(t, lab, "gpu1", "create", "0", "10%", "1h").code)
	c.Members[0].Pause()
	r := onHost(t, lab, "gpu1", "create", "0", "10%", "1h")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "did not answer within 5s")
	require.Contains(t, r.stderr, "nothing was written")
	c.Members[0].Resume()
	r = onHost(t, lab, "gpu1", "list", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	var parts []view.PartitionJSON
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &parts))
	require.Len(t, parts, 1)
}

// sudo chronos init --store checks that etcd answers, then writes the store
// file, root:group 0640; every chronos on the host then uses that ledger.
func TestInitStore(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	lab := labStore(t)
	file := filepath.Join(t.TempDir(), "store")
	env := []string{"CHRONOS_STORE_FILE=" + file, "CHRONOS_HOST=gpu1"}
	r := runEnv(t, env, "init", "--store", lab, "--group", "daemon")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "answers")
	st, err := os.Stat(file)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o640), st.Mode().Perm())

	require.Equal(t, 0, runEnv(t, env, "create", "0", "10%", "1h").code)
	r = onHost(t, lab, "gpu2", "list", "--json")
	require.Contains(t, r.stdout, `"host": "gpu1"`, "the booking went to the lab's ledger")

	r = runEnv(t, env, "init", "--store", "/tmp/x.db")
	require.Equal(t, 2, r.code)
	require.Contains(t, r.stderr, "give an etcd URL")
}

// init --store writes nothing for an etcd that does not answer. (Apart from
// TestInitStore so that etcd's client's timeout, 5 real seconds, runs
// beside it.)
func TestInitStoreRefusesAnEtcdThatDoesNotAnswer(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	file := filepath.Join(t.TempDir(), "store")
	r := runEnv(t, []string{"CHRONOS_STORE_FILE=" + file, "CHRONOS_HOST=gpu1"}, "init", "--store", "etcd://127.0.0.1:1", "--group", "daemon")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "cannot be reached")
	require.NoFileExists(t, file, "nothing is written for an etcd that does not answer")
}

// chronos backends lists the lab's other hosts, whether their monitors are
// publishing, and their clocks as the monitors measure them; a host whose
// monitor is killed is shown as not seen once its status lapses.
func TestBackendsShowsHostsAndClocks(t *testing.T) {
	t.Parallel()
	lab := labStore(t)
	monitor := func(host string) *exec.Cmd {
		cmd := exec.Command(chronosBin, "--monitor")
		cmd.Env = append(os.Environ(), "CHRONOS_DB=", "CHRONOS_BACKEND=sim", "CHRONOS_SIM_GPUS=2", "CHRONOS_STORE="+lab,
			"CHRONOS_HOST="+host, "CHRONOS_STORE_FILE=/nonexistent")
		require.NoError(t, cmd.Start())
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		return cmd
	}
	monitor("gpu1")
	other := monitor("gpu2")
	require.Eventually(t, func() bool {
		return regexp.MustCompile(`host gpu2:\s+live, 2 GPUs, clock [+-]0\.0`).MatchString(onHost(t, lab, "gpu1", "backends").stdout)
	}, patience, 200*time.Millisecond)
	r := onHost(t, lab, "gpu1", "backends", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	var rep view.BackendsJSON
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep))
	require.Len(t, rep.Hosts, 1)
	require.True(t, rep.Hosts[0].Live)
	require.Empty(t, rep.ClockWarnings, "one machine's clock agrees with itself")

	require.NoError(t, other.Process.Kill())
	require.Eventually(t, func() bool {
		return strings.Contains(onHost(t, lab, "gpu1", "backends").stdout, "host gpu2:           not seen")
	}, patience, 200*time.Millisecond)
}

// A host whose clock runs 90 s ahead of the other two says in its monitor's
// log, once, that it judges only its own bookings; chronos backends shows
// it there, and the others see its clock ahead of theirs.
func TestBackendsShowsAClockInDoubt(t *testing.T) {
	t.Parallel()
	lab := labStore(t)
	dir := t.TempDir()
	monitor := func(host string, env ...string) string {
		log := filepath.Join(dir, host+".log")
		f, err := os.Create(log)
		require.NoError(t, err)
		cmd := exec.Command(chronosBin, "--monitor")
		cmd.Env = append(append(os.Environ(), "CHRONOS_DB=", "CHRONOS_BACKEND=sim", "CHRONOS_SIM_GPUS=2", "CHRONOS_STORE="+lab,
			"CHRONOS_HOST="+host, "CHRONOS_STORE_FILE=/nonexistent"), env...)
		cmd.Stderr = f
		require.NoError(t, cmd.Start())
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait(); f.Close() })
		return log
	}
	monitor("gpu1")
	monitor("gpu2")
	fast := clockSetBack(t, -90*time.Second)
	fastLog := monitor("gpu3", fast...)
	doubt := regexp.MustCompile(`warning:\s+gpu3's clock is (89|9\d)\.\d s ahead of the other hosts' \(1 of 3 hosts within 2s of it\): its monitor ends only gpu3's bookings`)
	require.Eventually(t, func() bool {
		return doubt.MatchString(runEnv(t, append(fast, "CHRONOS_STORE="+lab, "CHRONOS_HOST=gpu3", "CHRONOS_STORE_FILE=/nonexistent"), "backends").stdout)
	}, patience, 200*time.Millisecond)
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(fastLog)
		require.NoError(t, err)
		return strings.Contains(string(b), "kind=clock")
	}, patience, 100*time.Millisecond)
	b, err := os.ReadFile(fastLog)
	require.NoError(t, err)
	require.Equal(t, 1, strings.Count(string(b), "kind=clock"), "said once:\n%s", b)
	require.Contains(t, string(b), "level=WARN detail=\"gpu3's clock is ")

	// backends measures the hosts' clocks as their statuses arrive: once
	// it has measured both, gpu1 is one of two that agree.
	var r result
	require.Eventually(t, func() bool {
		r = onHost(t, lab, "gpu1", "backends")
		return r.code == 0 && !strings.Contains(r.stdout, "not measured yet")
	}, patience, 200*time.Millisecond, "gpu1's backends measures both hosts")
	require.Regexp(t, `host gpu3:\s+live, 2 GPUs, clock \+(89|9\d)\.\d\d s`, r.stdout)
	require.Contains(t, r.stdout, "gpu3's clock is ")
	require.NotContains(t, r.stdout, "gpu1's clock", "gpu1's clock agrees with gpu2's")
}

// chronos migrate copies a host's file into the lab's ledger, once.
func TestMigrateCommand(t *testing.T) {
	t.Parallel()
	lab := labStore(t)
	db := filepath.Join(t.TempDir(), "chronos.db")
	require.Equal(t, 0, chronos(t, db, "create", "0", "0.5", "1h").code)
	require.Equal(t, 0, chronos(t, db, "create", "1", "0.5", "1h").code)
	require.Equal(t, 0, onHost(t, lab, "gpu1", "create", "0", "10%", "1h").code)

	r := onHost(t, lab, "gpu1", "migrate", "--from", db, "--to", lab, "--host", "gpu3")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "Copied 2 bookings (2 live) and 2 events of host gpu3")
	require.Contains(t, r.stdout, "Booking 1 is now 2.\nBooking 2 is now 3.\n")
	r = onHost(t, lab, "gpu1", "list", "--host", "gpu3")
	require.Regexp(t, `(?m)^2\s+gpu3\s+\S+\s+0\s+50%`, r.stdout)

	r = onHost(t, lab, "gpu1", "migrate", "--from", db, "--to", lab, "--host", "gpu3")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "holds 2 bookings of host gpu3")
	r = onHost(t, lab, "gpu1", "migrate", "--from", db, "--to", db)
	require.Equal(t, 2, r.code)
	require.Contains(t, r.stderr, "are both file ledgers")

	// And back out, into a file of gpu3's own.
	back := filepath.Join(t.TempDir(), "back.db")
	r = onHost(t, lab, "gpu1", "migrate", "--from", lab, "--to", back, "--host", "gpu3")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "Copied 2 bookings (2 live) and 2 events of host gpu3 from "+lab+" to "+back)
	require.Contains(t, r.stdout, "Read back and checked.")
	r = chronos(t, back, "list")
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `(?m)^1\s+\S+\s+0\s+50%`, r.stdout)
	require.Regexp(t, `(?m)^2\s+\S+\s+1\s+50%`, r.stdout)
}

// doctor checks a lab's ledger on etcd as it checks a file's records, and
// says a repair is etcd's own business.
func TestDoctorOnEtcd(t *testing.T) {
	t.Parallel()
	lab := labStore(t)
	require.Equal(t, 0, onHost(t, lab, "gpu1", "create", "0", "10%", "1h").code)
	require.Equal(t, 0, onHost(t, lab, "gpu1", "release", "1").code)
	r := onHost(t, lab, "gpu1", "doctor")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "Ledger "+lab+": healthy. 1 bookings (0 live), 2 events")
	r = onHost(t, lab, "gpu1", "doctor", "--repair")
	require.Equal(t, 2, r.code)
	require.Contains(t, r.stderr, "etcdutl snapshot restore")
}

// A command's "within 5s" is the whole command's: releasing three
// bookings while etcd stops answering ends within the timeout once, not
// once per booking (it took three timeouts).
func TestWholeCommandEndsWithinTheTimeout(t *testing.T) {
	t.Parallel()
	c := etcdtest.Start(t, 1)
	lab := c.URL() + "/lab"
	for range 3 {
		require.Equal(t, 0, onHost(t, lab, "gpu1", "create", "0", "10%", "1h").code)
	}
	c.Members[0].Pause()
	start := time.Now()
	r := onHost(t, lab, "gpu1", "release", "1", "2", "3")
	took := time.Since(start)
	c.Members[0].Resume()
	require.Equal(t, 1, r.code)
	require.Equal(t, 3, strings.Count(r.stderr, "did not answer within 5s"), r.stderr)
	// The timeout, and a race-built process starting on a loaded machine;
	// well short of two timeouts.
	require.Less(t, took, 9*time.Second)
	require.Len(t, onHostList(t, lab), 3, "nothing was released")
}

// onHostList is `list --json` of lab as gpu1 sees it.
func onHostList(t *testing.T, lab string) []view.PartitionJSON {
	t.Helper()
	r := onHost(t, lab, "gpu1", "list", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	var parts []view.PartitionJSON
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &parts))
	return parts
}
