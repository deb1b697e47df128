package monitor

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
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/notice"
	"github.com/chronos-gpu/chronos/storage"
)

// NotifyOptions say how notices leave the monitor. Zero fields take the
// defaults.
type NotifyOptions struct {
	// Utmp lists who is logged in on which terminal; /run/utmp when empty.
	Utmp string
	// HTTP posts to the webhook; a client with a 10 s timeout when nil.
	// It never follows a redirect, whatever client is given.
	HTTP *http.Client
	// Tries is how many times a webhook post is attempted (6), RetryWait
	// the pause after the first failure (2 s), doubling after each up to
	// maxRetryWait. The pauses are the monitor's clock's.
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
	mine    []notice.Notice
	want    []delivery
	won     []delivery
	slots   chan struct{}
	results chan sent
	clock   clock.Clock

	// Root's monitor alone posts to the webhook, at the address in the
	// notify file (file); address is the one last read.
	file, address string
	said          map[string]bool // problems with the webhook's address, logged once
	retries       []delivery      // failed posts, to try again at their time
}

type delivery struct {
	key, to string
	notice  notice.Notice
	tries   int       // posts made so far
	at      time.Time // when to try again
}

// sent is what a send finished with: an act to report, and the delivery
// when it failed in a way worth trying again.
type sent struct {
	act   Act
	retry *delivery
}

// maxRetryWait bounds the pause between two posts of one notice.
const maxRetryWait = 5 * time.Minute

// noticeReplay is how far back a monitor that starts looks for notices
// that may not have gone out (their sender stopped first).
const noticeReplay = 2 * time.Minute

func newNotifier(o NotifyOptions, c clock.Clock, file string) notifier {
	if o.Utmp == "" {
		o.Utmp = "/run/utmp"
		if _, err := os.Stat(o.Utmp); err != nil {
			o.Utmp = "/var/run/utmp"
		}
	}
	client := &http.Client{Timeout: 10 * time.Second}
	if o.HTTP != nil {
		c := *o.HTTP
		client = &c
	}
	// A redirect is a failed delivery: following one would post the
	// notice wherever the answer points.
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	o.HTTP = client
	if o.Tries <= 0 {
		o.Tries = 6
	}
	if o.RetryWait <= 0 {
		o.RetryWait = 2 * time.Second
	}
	if o.Host == "" {
		o.Host, _ = os.Hostname()
	}
	return notifier{o: o, slots: make(chan struct{}, 4), results: make(chan sent, 64), clock: c, file: file, said: map[string]bool{}}
}

// events reads the audit events this monitor has not handled yet.
func (n *notifier) events(tx *storage.Tx, now time.Time) ([]domain.Event, error) {
	if n.started {
		return tx.Events(n.seen, 0)
	}
	last := tx.LastEvent()
	evs, err := tx.Events(max(last, 50)-50, 0)
	var recent []domain.Event
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
func (n *notifier) prepare(s *snapshot, me domain.Identity, root bool) {
	n.mine, n.want, n.upto = nil, nil, n.seen
	if root && s.ledgerNotifyURL != "" {
		n.sayOnce(fmt.Sprintf("the ledger's policy names a webhook (notify-url=%s): ignored; root's monitor posts only to the address in %s", s.ledgerNotifyURL, n.file))
	}
	if len(s.events) == 0 || s.events[len(s.events)-1].Seq <= n.seen {
		return // nothing new: the common tick
	}
	address, asked := "", false
	webhook := func() string {
		if !asked {
			address, asked = n.webhook(), true
		}
		return address
	}
	owners := map[uint64]domain.Partition{}
	for _, p := range s.parts {
		owners[p.ID] = p
	}
	for _, e := range s.events {
		if e.Seq <= n.seen {
			continue
		}
		n.upto = max(n.upto, e.Seq)
		p, ok := owners[e.Partition]
		if !notice.IsNotice(e.Kind) || !ok {
			continue
		}
		nt := notice.Notice{Seq: e.Seq, Time: e.Time, Kind: e.Kind, Partition: p.ID, Device: p.Device, UID: p.UID, User: p.User, Detail: notice.NoticeDetail(e, p)}
		if p.UID == me.UID {
			n.mine = append(n.mine, nt)
		}
		// Only root, or the owner, may write to the owner's terminals; and
		// only while they are logged in is there anything to claim.
		if (root || p.UID == me.UID) && notice.LoggedIn(n.o.Utmp, p.User) {
			n.wantDelivery(s.claims, toTerminals, nt)
		}
		// Only root's monitor posts, and claims, a webhook delivery: a
		// member's monitor that took one might never deliver it (its
		// own network namespace, say).
		if root && webhook() != "" {
			n.wantDelivery(s.claims, toWebhook, nt)
		}
	}
}

// webhook reads the webhook's address from the notify file, saying once
// in the log why an address cannot be used. (A notify-url in the ledger's
// policy is ignored: whoever writes the ledger could have put it there.)
func (n *notifier) webhook() string {
	address, err := notice.ReadNotifyFile(n.file)
	if err != nil {
		address = ""
		n.sayOnce(fmt.Sprintf("the webhook's address is not used: %v", err))
	}
	n.address = address
	return address
}

func (n *notifier) sayOnce(detail string) {
	if !n.said[detail] {
		n.said[detail] = true
		n.result(sent{act: Act{Time: n.clock.Now(), Kind: domain.EventError, Detail: detail}})
	}
}

func (n *notifier) wantDelivery(claims map[string]domain.Claim, to string, nt notice.Notice) {
	key := fmt.Sprintf("notify/%s/%d", to, nt.Seq)
	if _, taken := claims[key]; !taken {
		n.want = append(n.want, delivery{key: key, to: to, notice: nt})
	}
}

// claim takes, inside tx, the deliveries nobody took since the snapshot
// (fresh holds the claims as tx sees them).
func (n *notifier) claim(tx *storage.Tx, fresh map[string]domain.Claim, m *Monitor, now time.Time) error {
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
func (n *notifier) done(onNotice func(notice.Notice)) {
	for _, d := range n.won {
		n.send(d)
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
func (n *notifier) send(d delivery) {
	select {
	case n.slots <- struct{}{}:
	default:
		if d.to == toWebhook {
			// A post waits for a free slot rather than be lost.
			d.at = n.clock.Now().Add(n.o.RetryWait)
			n.retries = append(n.retries, d)
			return
		}
		n.result(sent{act: Act{Time: n.clock.Now(), Kind: domain.EventError, Partition: d.notice.Partition, User: d.notice.User,
			Detail: fmt.Sprintf("too many notices in flight; not sent to the %s: %s", d.to, d.notice.Detail)}})
		return
	}
	address := n.address
	go func() {
		defer func() { <-n.slots }()
		a := Act{Kind: domain.EventNotified, Partition: d.notice.Partition, User: d.notice.User}
		var retry *delivery
		var err error
		switch d.to {
		case toTerminals:
			var told int
			told, err = notice.TellTerminals(n.o.Utmp, d.notice.UID, d.notice.User, n.terminalText(d.notice))
			if told == 0 && err == nil {
				return // not logged in: nothing to report
			}
			a.Detail = fmt.Sprintf("on %d terminal(s) of %s: %s", told, d.notice.User, d.notice.Detail)
		case toWebhook:
			d.tries++
			err = n.post(address, d.notice)
			a.Detail = "to the webhook: " + d.notice.Detail
			var refused *notice.Refusal
			if err != nil && d.tries < n.o.Tries && (!errors.As(err, &refused) || refused.Retry()) {
				retry = &d
				err = fmt.Errorf("%w (try %d of %d; trying again)", err, d.tries, n.o.Tries)
			}
		}
		if err != nil {
			a.Kind, a.Detail = domain.EventError, fmt.Sprintf("notice of booking #%d to the %s: %v", d.notice.Partition, d.to, err)
		}
		a.Time = n.clock.Now()
		n.result(sent{act: a, retry: retry})
	}()
}

func (n *notifier) result(s sent) {
	select {
	case n.results <- s:
	default: // the monitor is behind on reading; the ledger has the notice
	}
}

// drain reports what the sends finished with since the last tick, and
// posts again the failed deliveries whose time has come: the delivery is
// this monitor's claim, so nobody else would.
func (n *notifier) drain(report func(Act)) {
	now := n.clock.Now()
	for drained := false; !drained; {
		select {
		case s := <-n.results:
			report(s.act)
			if d := s.retry; d != nil {
				d.at = now.Add(n.retryWait(d.tries))
				n.retries = append(n.retries, *d)
			}
		default:
			drained = true
		}
	}
	var due, later []delivery
	for _, d := range n.retries {
		if now.Before(d.at) {
			later = append(later, d)
		} else {
			due = append(due, d)
		}
	}
	n.retries = later
	for _, d := range due {
		n.send(d)
	}
}

// retryWait is the pause after a delivery's tries-th failed post:
// RetryWait, doubling after each, at most maxRetryWait.
func (n *notifier) retryWait(tries int) time.Duration {
	wait := n.o.RetryWait
	for i := 1; i < tries && wait < maxRetryWait; i++ {
		wait *= 2
	}
	return min(wait, maxRetryWait)
}

func (n *notifier) terminalText(nt notice.Notice) string {
	return fmt.Sprintf("chronos on %s at %s: your booking #%d on GPU %d: %s",
		n.o.Host, nt.Time.Local().Format("15:04"), nt.Partition, nt.Device, nt.Detail)
}

// post sends a notice to the webhook once. A network error, a 5xx or a
// 429 is worth another try later (see drain); any other answer but 2xx is
// a refusal, a redirect among them.
func (n *notifier) post(url string, nt notice.Notice) error {
	body, err := json.Marshal(notice.WebhookBody{Text: fmt.Sprintf("chronos on %s: %s", n.o.Host, nt), Chronos: nt})
	if err != nil {
		return err
	}
	resp, err := n.o.HTTP.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }() // only read: nothing to lose
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode/100 != 2 {
		return &notice.Refusal{Status: resp.StatusCode, Location: resp.Header.Get("Location")}
	}
	return nil
}
