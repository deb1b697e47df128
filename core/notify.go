package core

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/chronos-gpu/chronos/core/clock"
	"github.com/chronos-gpu/chronos/storage"
)

// Notice is something an owner is told about their booking before (or as)
// it happens to it: "ends in 5m", an idle warning, a reclaim. Each is an
// audit event first; monitors then tell the owner on their terminals, in
// their open apps and through the policy's webhook, each channel once
// however many monitors run.
type Notice struct {
	Seq       uint64            `json:"seq"`
	Time      time.Time         `json:"time"`
	Kind      storage.EventKind `json:"kind"`
	Partition uint64            `json:"booking"`
	Device    int               `json:"gpu"`
	UID       int               `json:"uid"`
	User      string            `json:"user"`
	Detail    string            `json:"detail"`
}

func (n Notice) String() string {
	return fmt.Sprintf("booking #%d of %s (GPU %d): %s", n.Partition, n.User, n.Device, n.Detail)
}

// isNotice says which events their owner is told of.
func isNotice(k storage.EventKind) bool {
	return k == storage.EventWarned || k == storage.EventIdle || k == storage.EventReclaimed
}

// NotifyOptions say how notices leave the monitor. Zero fields take the
// defaults.
type NotifyOptions struct {
	// Utmp lists who is logged in on which terminal; /run/utmp when empty.
	Utmp string
	// HTTP posts to the webhook; a client with a 10 s timeout when nil.
	HTTP *http.Client
	// Tries is how many times a webhook post is attempted (3), RetryWait
	// the pause after the first failure (2 s), doubling after each.
	Tries     int
	RetryWait time.Duration
	// Host names this machine in messages; the hostname when empty.
	Host string
}

// Where a notice goes, besides the owner's open apps.
const (
	toTerminals = "tty"
	toWebhook   = "webhook"
)

// notifier keeps a monitor's place in the audit trail and sends what it
// claimed, never blocking the monitor: sends run on their own goroutines,
// a few at a time, and report back through results.
type notifier struct {
	o       NotifyOptions
	started bool   // seen is set
	seen    uint64 // the newest event handled
	upto    uint64 // the newest event of the current snapshot
	mine    []Notice
	want    []delivery
	won     []delivery
	slots   chan struct{}
	results chan Act
	clock   clock.Clock
}

type delivery struct {
	key, to string
	notice  Notice
}

// noticeReplay is how far back a monitor that starts looks for notices
// that may not have gone out (their sender stopped first).
const noticeReplay = 2 * time.Minute

func newNotifier(o NotifyOptions, c clock.Clock) notifier {
	if o.Utmp == "" {
		o.Utmp = "/run/utmp"
		if _, err := os.Stat(o.Utmp); err != nil {
			o.Utmp = "/var/run/utmp"
		}
	}
	if o.HTTP == nil {
		o.HTTP = &http.Client{Timeout: 10 * time.Second}
	}
	if o.Tries <= 0 {
		o.Tries = 3
	}
	if o.RetryWait <= 0 {
		o.RetryWait = 2 * time.Second
	}
	if o.Host == "" {
		o.Host, _ = os.Hostname()
	}
	return notifier{o: o, slots: make(chan struct{}, 4), results: make(chan Act, 64), clock: c}
}

// events reads the audit events this monitor has not handled yet.
func (n *notifier) events(tx *storage.Tx, now time.Time) ([]storage.Event, error) {
	if n.started {
		return tx.Events(n.seen, 0)
	}
	last := tx.LastEvent()
	evs, err := tx.Events(max(last, 50)-50, 0)
	var recent []storage.Event
	for _, e := range evs {
		if !e.Time.Before(now.Add(-noticeReplay)) {
			recent = append(recent, e)
		}
	}
	n.started, n.seen = true, last-uint64(len(recent))
	if len(recent) > 0 {
		n.seen = recent[0].Seq - 1
	}
	return recent, err
}

// prepare finds, in a fresh snapshot, the notices this monitor has not
// handled: those for its own user (its app shows them) and the deliveries
// it may make that no monitor has claimed.
func (n *notifier) prepare(s *snapshot, me Identity, root bool) {
	n.mine, n.want, n.upto = nil, nil, n.seen
	if len(s.events) == 0 || s.events[len(s.events)-1].Seq <= n.seen {
		return // nothing new: the common tick
	}
	owners := map[uint64]storage.Partition{}
	for _, p := range s.parts {
		owners[p.ID] = p
	}
	for _, e := range s.events {
		if e.Seq <= n.seen {
			continue
		}
		n.upto = max(n.upto, e.Seq)
		p, ok := owners[e.Partition]
		if !isNotice(e.Kind) || !ok {
			continue
		}
		nt := Notice{Seq: e.Seq, Time: e.Time, Kind: e.Kind, Partition: p.ID, Device: p.Device, UID: p.UID, User: p.User, Detail: e.Detail}
		if p.UID == me.UID {
			n.mine = append(n.mine, nt)
		}
		// Only root, or the owner, may write to the owner's terminals; and
		// only while they are logged in is there anything to claim.
		if (root || p.UID == me.UID) && loggedIn(n.o.Utmp, p.User) {
			n.wantDelivery(s.claims, toTerminals, nt)
		}
		if s.pol.NotifyURL != "" {
			n.wantDelivery(s.claims, toWebhook, nt)
		}
	}
}

func (n *notifier) wantDelivery(claims map[string]storage.Claim, to string, nt Notice) {
	key := fmt.Sprintf("notify/%s/%d", to, nt.Seq)
	if _, taken := claims[key]; !taken {
		n.want = append(n.want, delivery{key: key, to: to, notice: nt})
	}
}

// claim takes, inside tx, the deliveries nobody took since the snapshot
// (fresh holds the claims as tx sees them).
func (n *notifier) claim(tx *storage.Tx, fresh map[string]storage.Claim, m *Monitor, now time.Time) error {
	n.won = nil
	for _, d := range n.want {
		if _, taken := fresh[d.key]; taken {
			continue
		}
		if err := m.claim(tx, d.key, false, now); err != nil {
			return err
		}
		n.won = append(n.won, d)
	}
	return nil
}

// done hands the snapshot's notices on: the owner's to onNotice, the
// deliveries won to their channels.
func (n *notifier) done(notifyURL string, onNotice func(Notice)) {
	for _, d := range n.won {
		n.send(d, notifyURL)
	}
	if onNotice != nil {
		for _, nt := range n.mine {
			onNotice(nt)
		}
	}
	n.seen, n.mine, n.want, n.won = n.upto, nil, nil, nil
}

// send delivers on a goroutine of its own; when too many are in flight
// the notice is dropped from that channel (the ledger keeps it), rather
// than the monitor waiting.
func (n *notifier) send(d delivery, notifyURL string) {
	select {
	case n.slots <- struct{}{}:
	default:
		n.result(Act{Time: n.clock.Now(), Kind: storage.EventError, Partition: d.notice.Partition, User: d.notice.User,
			Detail: fmt.Sprintf("too many notices in flight; not sent to the %s: %s", d.to, d.notice.Detail)})
		return
	}
	go func() {
		defer func() { <-n.slots }()
		a := Act{Kind: storage.EventNotified, Partition: d.notice.Partition, User: d.notice.User}
		var err error
		switch d.to {
		case toTerminals:
			var told int
			told, err = tellTerminals(n.o.Utmp, d.notice.UID, d.notice.User, n.terminalText(d.notice))
			if told == 0 && err == nil {
				return // not logged in: nothing to report
			}
			a.Detail = fmt.Sprintf("on %d terminal(s) of %s: %s", told, d.notice.User, d.notice.Detail)
		case toWebhook:
			err = n.post(notifyURL, d.notice)
			a.Detail = "to the webhook: " + d.notice.Detail
		}
		if err != nil {
			a.Kind, a.Detail = storage.EventError, fmt.Sprintf("notice of booking #%d to the %s: %v", d.notice.Partition, d.to, err)
		}
		a.Time = n.clock.Now()
		n.result(a)
	}()
}

func (n *notifier) result(a Act) {
	select {
	case n.results <- a:
	default: // the monitor is behind on reading; the ledger has the notice
	}
}

// drain reports what the sends finished with since the last tick.
func (n *notifier) drain(report func(Act)) {
	for {
		select {
		case a := <-n.results:
			report(a)
		default:
			return
		}
	}
}

func (n *notifier) terminalText(nt Notice) string {
	return fmt.Sprintf("chronos on %s at %s: your booking #%d on GPU %d: %s",
		n.o.Host, nt.Time.Local().Format("15:04"), nt.Partition, nt.Device, nt.Detail)
}

// webhookBody is a Slack-compatible message: Slack, Mattermost and
// Rocket.Chat show text; the notice itself rides along for other readers.
type webhookBody struct {
	Text    string `json:"text"`
	Chronos Notice `json:"chronos"`
}

// post sends a notice to the webhook, trying again after a network error,
// a 5xx or a 429, and not after any other refusal.
func (n *notifier) post(url string, nt Notice) error {
	body, err := json.Marshal(webhookBody{Text: fmt.Sprintf("chronos on %s: %s", n.o.Host, nt), Chronos: nt})
	if err != nil {
		return err
	}
	wait := n.o.RetryWait
	for try := 1; ; try++ {
		err = postOnce(n.o.HTTP, url, body)
		var refused *refusal
		if err == nil || try >= n.o.Tries || (errors.As(err, &refused) && !refused.retry()) {
			return err
		}
		<-clock.Kernel.After(wait) // a network's back-off, in real time
		wait *= 2
	}
}

// refusal is an answer from the webhook that is not 2xx.
type refusal struct{ status int }

func (r *refusal) Error() string {
	return fmt.Sprintf("the webhook answered %d %s", r.status, http.StatusText(r.status))
}
func (r *refusal) retry() bool { return r.status >= 500 || r.status == http.StatusTooManyRequests }

func postOnce(client *http.Client, url string, body []byte) error {
	resp, err := client.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }() // only read: nothing to lose
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode/100 != 2 {
		return &refusal{status: resp.StatusCode}
	}
	return nil
}
