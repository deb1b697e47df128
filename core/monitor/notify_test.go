package monitor

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/core/clock"
	"github.com/chronos-gpu/chronos/core/coretest"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/notice"
	"github.com/chronos-gpu/chronos/core/policy"
	"github.com/chronos-gpu/chronos/core/servicetest"
	"github.com/chronos-gpu/chronos/storage/bolt"
)

var nobody = domain.Identity{UID: 65534, User: "nobody"}

// writeUtmp writes a utmp file listing each login, as glibc lays it out.
func writeUtmp(t *testing.T, logins ...notice.Login) string {
	t.Helper()
	var data []byte
	for _, l := range logins {
		rec := make([]byte, notice.UtmpRecord)
		binary.NativeEndian.PutUint16(rec, notice.UtmpUserProcess)
		copy(rec[notice.UtmpLineAt:notice.UtmpLineAt+notice.UtmpFieldLen], l.Line)
		copy(rec[notice.UtmpUserAt:notice.UtmpUserAt+notice.UtmpFieldLen], l.User)
		data = append(data, rec...)
	}
	// A dead process's record (type 8) names nobody.
	dead := make([]byte, notice.UtmpRecord)
	binary.NativeEndian.PutUint16(dead, 8)
	copy(dead[notice.UtmpUserAt:], "nobody")
	copy(dead[notice.UtmpLineAt:], "pts/999")
	data = append(data, dead...)
	path := filepath.Join(t.TempDir(), "utmp")
	require.NoError(t, os.WriteFile(path, data, 0o644))
	return path
}

func TestLogins(t *testing.T) {
	t.Parallel()
	path := writeUtmp(t, notice.Login{User: "alice", Line: "pts/3"}, notice.Login{User: strings.Repeat("x", 32), Line: "tty1"})
	got, err := notice.Logins(path)
	require.NoError(t, err)
	require.Equal(t, []notice.Login{{User: "alice", Line: "pts/3"}, {User: strings.Repeat("x", 32), Line: "tty1"}}, got)
}

// pty is a real pseudo-terminal, its terminal end owned by uid with the
// mode a login gives it (0620: mesg y).
type pty struct {
	master, slave *os.File
	line          string
}

func openPty(t *testing.T, uid int) *pty {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	require.NoError(t, err)
	t.Cleanup(func() { master.Close() })
	conn, err := master.SyscallConn()
	require.NoError(t, err)
	var n int
	var ioErr error
	require.NoError(t, conn.Control(func(fd uintptr) {
		if ioErr = unix.IoctlSetPointerInt(int(fd), unix.TIOCSPTLCK, 0); ioErr == nil {
			n, ioErr = unix.IoctlGetInt(int(fd), unix.TIOCGPTN)
		}
	}))
	require.NoError(t, ioErr)
	line := "pts/" + strconv.Itoa(n)
	slave, err := os.OpenFile("/dev/"+line, os.O_RDWR|unix.O_NOCTTY, 0)
	require.NoError(t, err)
	t.Cleanup(func() { slave.Close() })
	require.NoError(t, os.Chown("/dev/"+line, uid, -1))
	require.NoError(t, os.Chmod("/dev/"+line, 0o620))
	return &pty{master: master, slave: slave, line: line}
}

// read returns what the terminal showed within d.
func (p *pty) read(t *testing.T, d time.Duration, until string) string {
	t.Helper()
	require.NoError(t, p.master.SetReadDeadline(time.Now().Add(d)))
	var got []byte
	buf := make([]byte, 4096)
	for until == "" || !strings.Contains(string(got), until) {
		n, err := p.master.Read(buf)
		got = append(got, buf[:n]...)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			break
		}
		require.NoError(t, err)
	}
	return string(got)
}

// A notice reaches the owner's real terminal, and not a terminal of
// another user, even one a forged utmp line puts under the owner's name;
// nor the owner's terminal where they said `mesg n`.
func TestNoticeReachesOwnersTerminalOnly(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("needs root to give terminals to other uids")
	}
	mine, quiet, theirs := openPty(t, nobody.UID), openPty(t, nobody.UID), openPty(t, 1)
	require.NoError(t, os.Chmod("/dev/"+quiet.line, 0o600)) // mesg n
	utmp := writeUtmp(t, notice.Login{User: "nobody", Line: mine.line}, notice.Login{User: "nobody", Line: quiet.line},
		notice.Login{User: "daemon", Line: theirs.line}, notice.Login{User: "nobody", Line: theirs.line}, notice.Login{User: "nobody", Line: "../etc/passwd"})

	r := newIdleRig(t, nobody)
	id, _ := r.book(true)
	var log actLog
	yes := true
	m := r.monitor(ladderPolicy(policy.ReclaimAlways), Options{Root: &yes, OnAct: log.add, Notify: NotifyOptions{Utmp: utmp, Host: "gpu\x1b]0;box"}})
	r.run(2*time.Minute, 10*time.Second, m)
	require.Equal(t, []string{"created", "idle"}, servicetest.EventKinds(t, r.c, id))
	r.run(10*time.Second, 10*time.Second, m) // the monitor that recorded it claims it

	got := mine.read(t, 5*time.Second, "--reason")
	require.Contains(t, got, "your booking #1 on GPU 3: idle on GPU 3 and may be released")
	require.Contains(t, got, `chronos on gpu\x1b]0;box`, "the escape in the host name is defused")
	require.Eventually(t, func() bool {
		r.run(time.Second, time.Second, m)
		return strings.Contains(strings.Join(log.kinds(), " "), "notified")
	}, 5*time.Second, 20*time.Millisecond)
	require.Empty(t, theirs.read(t, 200*time.Millisecond, ""), "another user's terminal")
	require.Empty(t, quiet.read(t, 200*time.Millisecond, ""), "mesg n")

	// Once told, never again: the next monitor finds the delivery claimed.
	again := r.monitor(ladderPolicy(policy.ReclaimAlways), Options{Root: &yes, Notify: NotifyOptions{Utmp: utmp}})
	r.run(30*time.Second, 10*time.Second, again)
	require.Empty(t, mine.read(t, 300*time.Millisecond, ""))
}

// hook is a local webhook that records what it is sent, answering with
// the statuses queued (then 200).
type hook struct {
	*httptest.Server
	mu       sync.Mutex
	bodies   []notice.WebhookBody
	statuses []int
}

func newHook(t *testing.T, statuses ...int) *hook {
	h := &hook{statuses: statuses}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, _ := io.ReadAll(r.Body)
		var b notice.WebhookBody
		_ = json.Unmarshal(data, &b)
		h.mu.Lock()
		defer h.mu.Unlock()
		h.bodies = append(h.bodies, b)
		if len(h.statuses) > 0 {
			w.WriteHeader(h.statuses[0])
			h.statuses = h.statuses[1:]
		}
	}))
	t.Cleanup(h.Close)
	return h
}

func (h *hook) received() []notice.WebhookBody {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]notice.WebhookBody(nil), h.bodies...)
}

// Three monitors, three notices (two warnings and the reclaim): the
// webhook gets each once, as Slack-compatible JSON.
func TestWebhookGetsEachNoticeOnce(t *testing.T) {
	t.Parallel()
	h := newHook(t)
	r := newIdleRig(t, coretest.Alice)
	id, _ := r.book(true)
	r.notifyAt(notifyFileFor(t, h.URL))
	pol := ladderPolicy(policy.ReclaimAlways)
	var ms []*Monitor
	yes := true
	for range 3 {
		ms = append(ms, r.monitor(pol, Options{Root: &yes, Notify: NotifyOptions{Host: "gpu1"}}))
	}
	r.run(6*time.Minute+20*time.Second, 10*time.Second, ms...)
	require.Equal(t, []string{"created", "idle", "idle", "reclaimed", "signalled"}, servicetest.EventKinds(t, r.c, id),
		"its process is ended as at expiry")
	require.Eventually(t, func() bool { return len(h.received()) == 3 }, 5*time.Second, 10*time.Millisecond)
	time.Sleep(100 * time.Millisecond)
	got := h.received()
	require.Len(t, got, 3, "no notice twice")
	kinds := []domain.EventKind{got[0].Chronos.Kind, got[1].Chronos.Kind, got[2].Chronos.Kind}
	require.ElementsMatch(t, []domain.EventKind{domain.EventIdle, domain.EventIdle, domain.EventReclaimed}, kinds)
	for _, b := range got {
		require.True(t, strings.HasPrefix(b.Text, "chronos on gpu1: booking #1 of alice (GPU 3): "), b.Text)
		require.Equal(t, id, b.Chronos.Partition)
		require.Equal(t, "alice", b.Chronos.User)
	}
}

// notifyFileFor writes a notify file naming address, as `policy set
// notify-url=` does (the tests run as root), and returns its path.
func notifyFileFor(t *testing.T, address string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "notify")
	require.NoError(t, notice.WriteNotifyFile(path, address))
	return path
}

// A webhook that refuses a notice (4xx) is not asked again; one that
// fails (5xx, 429) is worth another try (see TestRootRetriesAFailedWebhook).
func TestWebhookRefusals(t *testing.T) {
	t.Parallel()
	n := newNotifier(NotifyOptions{Host: "h"}, clock.System(), "")
	refusing := newHook(t, http.StatusForbidden)
	err := n.post(refusing.URL, notice.Notice{Partition: 7})
	require.ErrorContains(t, err, "the webhook answered 403 Forbidden")
	var refused *notice.Refusal
	require.ErrorAs(t, err, &refused)
	require.False(t, refused.Retry())
	require.Len(t, refusing.received(), 1)

	// The pauses between tries double, up to a bound, however many.
	for tries, want := range map[int]time.Duration{1: 2 * time.Second, 2: 4 * time.Second, 5: 32 * time.Second, 9: maxRetryWait, 200: maxRetryWait} {
		require.Equal(t, want, n.retryWait(tries), "after try %d", tries)
	}
	for _, status := range []int{http.StatusBadGateway, http.StatusTooManyRequests} {
		err := n.post(newHook(t, status).URL, notice.Notice{Partition: 7})
		require.ErrorAs(t, err, &refused)
		require.True(t, refused.Retry(), "%d", status)
	}
}

// Every open app of the owner shows the notice, whichever monitor recorded
// it; another user's app does not.
func TestAppsOfTheOwnerSeeTheNotice(t *testing.T) {
	t.Parallel()
	r := newIdleRig(t, coretest.Alice)
	id, _ := r.book(true)
	recorder := r.monitor(ladderPolicy(policy.ReclaimAlways), Options{})

	var mu sync.Mutex
	seen := map[string][]notice.Notice{}
	app := func(who domain.Identity) *Monitor {
		c := core.NewClient(core.Options{Ledger: bolt.New(r.path), As: &who, Clock: r.clock})
		return New(c, Options{OnNotice: func(n notice.Notice) {
			mu.Lock()
			defer mu.Unlock()
			seen[who.User] = append(seen[who.User], n)
		}})
	}
	alices, bobs := app(coretest.Alice), app(coretest.Bob)
	r.run(2*time.Minute, 10*time.Second, recorder, alices, bobs)
	r.run(10*time.Second, 10*time.Second, recorder, alices, bobs)
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, seen["alice"], 1)
	require.Empty(t, seen["bob"])
	n := seen["alice"][0]
	require.Equal(t, domain.EventIdle, n.Kind)
	require.Equal(t, id, n.Partition)
	require.Equal(t, coretest.IdleGPU, n.Device)
	require.Contains(t, n.String(), "booking #1 of alice (GPU 3): idle on GPU 3 and may be released")
}
