package main

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/setup"
	"github.com/chronos-gpu/chronos/core/view"
	"github.com/chronos-gpu/chronos/storage"
	"github.com/chronos-gpu/chronos/storage/etcd"
	"github.com/chronos-gpu/chronos/storage/etcd/etcdtest"
)

// etcdLab is a lab's ledger on an etcd that asks for client certificates,
// its TLS files as an admin left them (the key readable by all), this
// host's store file and where its keeper listens.
type etcdLab struct {
	store, file, sock string
	certs             *etcdtest.Certs
	cluster           *etcdtest.Cluster
}

func newEtcdLab(t *testing.T) etcdLab {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to run the binary as other uids")
	}
	dir, err := os.MkdirTemp("", "chronos-etcdlab-") // root's, as /etc is
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	require.NoError(t, os.Chmod(dir, 0o755))
	certDir := filepath.Join(dir, "tls")
	require.NoError(t, os.Mkdir(certDir, 0o755))
	certs, err := etcdtest.NewCerts(certDir)
	require.NoError(t, err)
	require.NoError(t, os.Chmod(certs.ClientKey, 0o644), "a key every member could read")
	lab := etcdLab{file: filepath.Join(dir, "store"), sock: filepath.Join(dir, "run", "chronos.sock"), certs: certs}
	lab.cluster = etcdtest.StartTLS(t, certs, true)
	lab.store = lab.cluster.URL() + "/lab"
	return lab
}

// env is the environment of the binary on host gpu1 of the lab.
func (l etcdLab) env() []string {
	return []string{"CHRONOS_STORE_FILE=" + l.file, "CHRONOS_SOCKET=" + l.sock, "CHRONOS_HOST=gpu1"}
}

// as runs the binary on gpu1 as cred (nil: root).
func (l etcdLab) as(t *testing.T, cred *syscall.Credential, args ...string) result {
	t.Helper()
	return runWith(t, chronosBin, "", cred, l.env(), 0, args...)
}

// initGuarded is root's init of the guarded ledger on gpu1.
func (l etcdLab) initGuarded(t *testing.T, cred *syscall.Credential) result {
	t.Helper()
	return l.as(t, cred, "init", "--store", l.store, "--cacert", l.certs.CA, "--cert", l.certs.ClientCert, "--key", l.certs.ClientKey,
		"--guarded", "--group", "daemon")
}

// startKeeper starts root's monitor on gpu1 and returns once its socket
// answers; stop ends it (and the test's end does, if stop did not).
func (l etcdLab) startKeeper(t *testing.T) (stop func()) {
	t.Helper()
	cmd := exec.Command(chronosBin, "--monitor", "--sample-every", "100ms")
	cmd.Env = append(append(os.Environ(), binEnv("")...), l.env()...)
	require.NoError(t, cmd.Start())
	stop = func() {
		if cmd.Process.Signal(syscall.SIGTERM) == nil {
			_ = cmd.Wait()
		}
	}
	t.Cleanup(stop)
	require.Eventually(t, func() bool {
		conn, err := net.Dial("unix", l.sock)
		if err == nil {
			conn.Close()
		}
		return err == nil
	}, patience, 10*time.Millisecond, "the keeper's socket")
	return stop
}

// rootStore is the lab's ledger as root's own process opens it.
func (l etcdLab) rootStore(t *testing.T) *etcd.Store {
	t.Helper()
	tc, err := etcd.TLSConfig(l.certs.CA, l.certs.ClientCert, l.certs.ClientKey)
	require.NoError(t, err)
	s, err := etcd.Open(etcd.Config{Endpoints: l.cluster.Endpoints(), Prefix: "/lab", TLS: tc})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// readableBy says whether cred may open path for reading.
func readableBy(cred *syscall.Credential, path string) (bool, string) {
	sh := exec.Command("cat", path)
	sh.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	out, err := sh.CombinedOutput()
	return err == nil, string(out)
}

const keeperDown = "chronos: the keeper is not running: ask root to start chronos-monitor\n"

// On a guarded ledger on etcd the client key is root's alone, and a
// member reads and writes only through their host's keeper: nobody books
// and lists through it, daemon cannot release nobody's booking, every
// write is in the audit trail as its member's; with no keeper a member's
// reads and writes say so in one line. Only root may guard the ledger.
func TestGuardedEtcdMembersGoThroughTheKeeper(t *testing.T) {
	t.Parallel()
	lab := newEtcdLab(t)
	ok, _ := readableBy(member, lab.certs.ClientKey)
	require.True(t, ok, "before init any member reads the key")

	r := lab.initGuarded(t, member)
	require.Equal(t, 1, r.code, r.stderr)
	require.Equal(t, "chronos: only root may do that: writing "+lab.file+" (try sudo chronos init --store …)\n", r.stderr)
	require.NoFileExists(t, lab.file)

	r = lab.initGuarded(t, nil)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "guarded: "+lab.certs.ClientKey+" is root's alone (mode 0600)")
	st, err := os.Stat(lab.certs.ClientKey)
	require.NoError(t, err)
	require.Equal(t, fs.FileMode(0o600), st.Mode().Perm())
	require.Equal(t, uint32(0), st.Sys().(*syscall.Stat_t).Uid)
	ok, out := readableBy(member, lab.certs.ClientKey)
	require.False(t, ok, "nobody read the key: %s", out)
	require.Contains(t, out, "Permission denied")
	file, err := os.ReadFile(lab.file)
	require.NoError(t, err)
	require.Contains(t, string(file), "\nguarded=daemon\n")

	// No keeper: reads and writes say so, once.
	for _, args := range [][]string{{"list"}, {"create", "0", "0.2", "1h"}, {"doctor"}} {
		r = lab.as(t, member, args...)
		require.Equal(t, 1, r.code, "%v: %s", args, r.stdout)
		require.Equal(t, keeperDown, r.stderr, args)
	}

	stop := lab.startKeeper(t)
	// Outside the group: not even where the ledger is.
	r = lab.as(t, &syscall.Credential{Uid: 65534, Gid: 65534}, "list")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "permission denied (it names this lab's shared ledger: members of its group may read it)")
	r = lab.as(t, member, "create", "0", "0.2", "1h")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "Booked 1: 20% (16.0 GiB) of GPU 0 for nobody")
	r = lab.as(t, daemonMember, "create", "1", "0.3", "1h")
	require.Equal(t, 0, r.code, r.stderr)
	r = lab.as(t, member, "list", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	var parts []view.PartitionJSON
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &parts))
	require.Len(t, parts, 2)
	require.Equal(t, "nobody", parts[0].Owner)
	require.Equal(t, "gpu1", parts[0].Host)

	// Straight to etcd, as a modified chronos would: the key is root's.
	r = runWith(t, chronosBin, "", member, []string{"CHRONOS_STORE_FILE=/nonexistent", "CHRONOS_HOST=gpu1"}, 0,
		"release", "1", "--store", lab.store, "--cacert", lab.certs.CA, "--cert", lab.certs.ClientCert, "--key", lab.certs.ClientKey)
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "permission denied")
	r = lab.as(t, daemonMember, "release", "1")
	require.Equal(t, 1, r.code)
	require.Equal(t, "chronos: not your booking: 1 belongs to nobody; only they or root may release it\n", r.stderr)
	for _, args := range [][]string{{"extend", "1", "10m"}, {"hold", "1", "1h", "--reason", "training"}, {"release", "1"}} {
		r = lab.as(t, member, args...)
		require.Equal(t, 0, r.code, "%v: %s", args, r.stderr)
	}
	r = lab.as(t, member, "events")
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `created +#1 by nobody: 20%`, r.stdout)
	require.Regexp(t, `created +#2 by daemon: 30%`, r.stdout)
	require.Regexp(t, `extended +#1 by nobody`, r.stdout)
	require.Regexp(t, `held +#1 by nobody`, r.stdout)
	require.Regexp(t, `released +#1 by nobody`, r.stdout)
	require.NotContains(t, r.stdout, "#1 by daemon", "a refusal wrote nothing")
	r = lab.as(t, member, "doctor")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "Ledger "+lab.store+": healthy. 2 bookings (1 live)")

	stop()
	r = lab.as(t, member, "release", "2")
	require.Equal(t, 1, r.code)
	require.Equal(t, keeperDown, r.stderr)
	r = lab.as(t, nil, "list", "--json")
	require.Equal(t, 0, r.code, "root reads etcd itself: %s", r.stderr)
}

// A member's doctor, through the keeper, names what a holder of the key
// could forge on etcd: a booking without a state (hidden from list, yet
// counted by admission through the live index) and a release that left
// no event. And a ledger larger than a frame reads whole.
func TestGuardedEtcdDoctorNamesForgeries(t *testing.T) {
	t.Parallel()
	lab := newEtcdLab(t)
	r := lab.initGuarded(t, nil)
	require.Equal(t, 0, r.code, r.stderr)
	lab.startKeeper(t)
	r = lab.as(t, member, "create", "0", "0.2", "1h")
	require.Equal(t, 0, r.code, r.stderr)

	s := lab.rootStore(t)
	now := time.Now()
	require.NoError(t, s.Update(context.Background(), func(tx *storage.Tx) error {
		id := make([]byte, 8)
		binary.BigEndian.PutUint64(id, 7)
		forged := fmt.Sprintf(`{"v":1,"id":7,"device":1,"share_ppm":1000000,"uid":65534,"user":"nobody","created":%q,"expires":%q}`,
			now.Add(-time.Minute).Format(time.RFC3339), now.Add(time.Hour).Format(time.RFC3339))
		require.NoError(t, tx.Raw().Put(storage.BucketPartitions, id, []byte(forged)))
		require.NoError(t, tx.Raw().Put(storage.BucketLive, id, []byte{}))
		p, err := tx.Partition(1)
		require.NoError(t, err)
		p.State = domain.Released
		require.NoError(t, tx.Raw().Delete(storage.BucketLive, storage.IDKey(1)))
		return tx.PutPartition(&p)
	}))
	// Events enough to make the ledger many frames long.
	for range 4 {
		require.NoError(t, s.Update(context.Background(), func(tx *storage.Tx) error {
			for range 60 {
				if err := tx.AddEvent(domain.Event{Time: now, Kind: domain.EventPolicy, Detail: strings.Repeat("x", 1000)}); err != nil {
					return err
				}
			}
			return nil
		}))
	}

	r = lab.as(t, member, "doctor")
	require.Equal(t, 1, r.code, r.stderr)
	require.Contains(t, r.stdout, "partition 7: has no state: list hides it, yet the live index may make admission count it")
	require.Contains(t, r.stdout, "partition 1 ended with no event saying who ended it")
	r = lab.as(t, member, "events", "--last", "0", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	var events []struct{ Detail string }
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &events))
	long := 0
	for _, e := range events {
		if e.Detail == strings.Repeat("x", 1000) {
			long++
		}
	}
	require.Equal(t, 240, long, "the ledger read whole (%d bytes of events)", len(r.stdout))
}

// On a guarded ledger on etcd a member's run, create --wait and backends
// work through the keeper: the run's records and its release are the
// member's, a waiter is booked when root's release makes room.
func TestGuardedEtcdRunAndWaitThroughTheKeeper(t *testing.T) {
	t.Parallel()
	lab := newEtcdLab(t)
	require.Equal(t, 0, lab.initGuarded(t, nil).code)
	lab.startKeeper(t)

	r := lab.as(t, member, "run", "1", "0.5", "1h", "--", "sh", "-c", `echo "visible=$CUDA_VISIBLE_DEVICES uid=$(id -u)"; exit 3`)
	require.Equal(t, 3, r.code, "the command's status: %s", r.stderr)
	require.Equal(t, "visible=1 uid=65534\n", r.stdout)
	r = lab.as(t, member, "events", "--booking", "1")
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `run +#1 by nobody: process \d+ runs its command`, r.stdout)
	require.Regexp(t, `released +#1 by nobody`, r.stdout)

	r = lab.as(t, nil, "create", "0", "1", "1h")
	require.Equal(t, 0, r.code, r.stderr)
	var out strings.Builder
	wait := exec.Command(chronosBin, "create", "0", "0.5", "1h", "--wait")
	wait.Env = append(append(append(os.Environ(), binEnv("")...), lab.env()...), "HOME=/nonexistent")
	wait.SysProcAttr = &syscall.SysProcAttr{Credential: member}
	wait.Stdout, wait.Stderr = &out, &out
	require.NoError(t, wait.Start())
	t.Cleanup(func() { _ = wait.Process.Kill(); _ = wait.Wait() })
	require.Eventually(t, func() bool {
		r := lab.as(t, member, "queue", "--json")
		return r.code == 0 && strings.Count(r.stdout, `"position"`) == 1
	}, patience, 20*time.Millisecond, "the member's request joined the line")
	r = lab.as(t, nil, "release", "2")
	require.Equal(t, 0, r.code, r.stderr)
	require.NoError(t, wait.Wait(), out.String())
	require.Contains(t, out.String(), "Booked 3: 50% (40.0 GiB) of GPU 0 for nobody")

	r = lab.as(t, member, "backends")
	require.Equal(t, 0, r.code, r.stderr)
}

// A member's app on a guarded ledger on etcd reads through the keeper,
// sees what root books meanwhile, and books through the keeper.
func TestGuardedEtcdApp(t *testing.T) {
	t.Parallel()
	lab := newEtcdLab(t)
	require.Equal(t, 0, lab.initGuarded(t, nil).code)
	lab.startKeeper(t)
	r := lab.as(t, nil, "create", "0", "0.5", "1h")
	require.Equal(t, 0, r.code, r.stderr)
	cover, collect := otherUserCoverDir(t)
	t.Cleanup(collect)
	env := append(append(binEnv(""), lab.env()...), "GOCOVERDIR="+cover, "HOME=/nonexistent", "XDG_STATE_HOME="+openDir(t), "PS1=$ ")
	s := newTmux(t, 220, 30, env...)
	s.keys("runuser -u nobody -G daemon -- "+chronosBin, "Enter")
	s.waitFor("guarded: root's keeper keeps this ledger; your writes go through it")
	s.waitFor("GPU 1  Simulated")
	require.NotContains(t, s.screen(), "daemon")
	r = lab.as(t, nil, "create", "1", "0.25", "1h", "--user", "daemon")
	require.Equal(t, 0, r.code, r.stderr)
	s.waitFor("daemon")
	s.keys("n")
	s.waitFor("New booking")
	s.keys("Up", "1", "Down", "2", "0", "%", "Enter")
	require.Eventually(t, func() bool {
		r := lab.as(t, nil, "list", "--json")
		return r.code == 0 && strings.Contains(r.stdout, `"owner": "nobody"`)
	}, patience, 50*time.Millisecond, "the app's booking went through the keeper: %s", s.screen())
}

// The keeper of a guarded ledger on etcd warns at its start when this
// host's key is not root's alone: a host init'ed without --guarded.
func TestKeeperWarnsOfAKeyMembersMayRead(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("the key is root's")
	}
	key := filepath.Join(t.TempDir(), "client-key.pem")
	require.NoError(t, os.WriteFile(key, []byte("key"), 0o644))
	require.NoError(t, os.Chmod(key, 0o644))
	cfg := setup.StoreConfig{Store: "etcd://127.0.0.1:2379", Key: key}
	require.Equal(t, "; WARNING: the etcd key "+key+" is mode 0644, not root's alone: members may reach etcd directly "+
		"(run sudo chronos init --store … --guarded --group NAME on this host)", keyWarning(cfg))
	require.NoError(t, os.Chmod(key, 0o600))
	require.Empty(t, keyWarning(cfg))
	require.Empty(t, keyWarning(setup.StoreConfig{Store: key}), "a ledger file has no key")
}
