package notice

import (
	"fmt"
	"net/http"
	"time"

	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
)

// Notice is something an owner is told about their booking before (or as)
// it happens to it: "ends in 5m", an idle warning, a reclaim. Each is an
// audit event first; monitors then tell the owner on their terminals and
// in their open apps, and root's monitor through the webhook, each channel
// once however many monitors run. Its text is rendered from the event's
// kind and the booking's record (see noticeDetail), never taken from the
// event's free text, which whoever writes the ledger could have written.
type Notice struct {
	Seq       uint64           `json:"seq"`
	Time      time.Time        `json:"time"`
	Kind      domain.EventKind `json:"kind"`
	Partition uint64           `json:"booking"`
	Device    int              `json:"gpu"`
	UID       int              `json:"uid"`
	User      string           `json:"user"`
	Detail    string           `json:"detail"`
}

func (n Notice) String() string {
	return fmt.Sprintf("booking #%d of %s (GPU %d): %s", n.Partition, n.User, n.Device, n.Detail)
}

// IsNotice says which events their owner is told of.
func IsNotice(k domain.EventKind) bool {
	return k == domain.EventWarned || k == domain.EventIdle || k == domain.EventReclaimed
}

// NoticeDetail renders what a notice says from the event's kind and the
// booking's record: the event's own text is not shown to its owner, nor
// posted, since whoever writes the ledger could have written it.
func NoticeDetail(e domain.Event, p domain.Partition) string {
	switch e.Kind {
	case domain.EventWarned:
		return fmt.Sprintf("%s (GPU %s)", human.EndsIn(p.Expires.Sub(e.Time)), human.FormatGPUs("", p.GPUs()))
	case domain.EventIdle:
		return fmt.Sprintf("idle on GPU %s and may be released: do GPU work, or `chronos hold %d DURATION --reason …` (`chronos show %d` says when)", human.FormatGPUs("", p.GPUs()), p.ID, p.ID)
	case domain.EventReclaimed:
		return fmt.Sprintf("released early: it sat idle on GPU %s; its processes are handled as at expiry", human.FormatGPUs("", p.GPUs()))
	}
	return string(e.Kind)
}

// WebhookBody is a Slack-compatible message: Slack, Mattermost and
// Rocket.Chat show text; the notice itself rides along for other readers.
type WebhookBody struct {
	Text    string `json:"text"`
	Chronos Notice `json:"chronos"`
}

// Refusal is an answer from the webhook that is not 2xx.
type Refusal struct {
	Status   int
	Location string // where a redirect pointed
}

func (r *Refusal) Error() string {
	msg := fmt.Sprintf("the webhook answered %d %s", r.Status, http.StatusText(r.Status))
	if r.Status/100 == 3 {
		msg += fmt.Sprintf(" to %s: not followed (chronos posts only to the address it was given)", human.Quote(r.Location))
	}
	return msg
}

func (r *Refusal) Retry() bool { return r.Status >= 500 || r.Status == http.StatusTooManyRequests }

// Moot says whether n no longer needs showing, given its booking p as read
// now: its owner dismissed it (in any app), or it warned of something
// that can no longer happen — an "ends in" whose booking was extended, a
// warning about a booking that has ended. A reclaim is news of the end
// itself: it stays until dismissed.
func (n Notice) Moot(p domain.Partition, now time.Time) bool {
	switch {
	case n.Seq > 0 && p.NoticesDismissed >= n.Seq:
		return true
	case n.Kind == domain.EventReclaimed:
		return false
	case n.Kind == domain.EventWarned && !p.Warned:
		return true
	}
	return p.EndedAt(now)
}
