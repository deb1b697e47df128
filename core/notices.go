package core

import (
	"fmt"
	"time"

	"github.com/chronos-gpu/chronos/core/admission"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/ledger"
	"github.com/chronos-gpu/chronos/core/notice"
	"github.com/chronos-gpu/chronos/storage"
)

// Notices reads, from the audit trail, the notices to the calling user
// about their own bookings recorded after event after; with after 0,
// those about the bookings a table shows (made within the policy's longest
// booking and a day), so that an app opened later shows what was issued
// before. It returns the newest event's number, to pass as after next
// time. Whether each is still worth showing is Notice.Moot's to say.
func (c *Client) Notices(after uint64) (notices []notice.Notice, upTo uint64, err error) {
	err = c.ledger.View(c.ctx, func(tx *storage.Tx) error {
		upTo = tx.LastEvent()
		if upTo <= after {
			return nil
		}
		var evs []domain.Event
		if after > 0 {
			if evs, err = tx.Events(after, 0); err != nil {
				return err
			}
		} else if evs, err = c.recentNoticeEvents(tx); err != nil {
			return err
		}
		notices, err = c.noticesOf(tx, evs)
		return err
	})
	return notices, upTo, err
}

// recentNoticeEvents reads back the audit trail as far as the oldest of
// the user's bookings a table shows, oldest first.
func (c *Client) recentNoticeEvents(tx *storage.Tx) ([]domain.Event, error) {
	pol, err := ledger.Policy(tx)
	if err != nil {
		return nil, err
	}
	parts, err := tx.PartitionsSince(c.now().Add(-(pol.MaxLength + admission.AttributionWindow)))
	if err != nil {
		return nil, err
	}
	var oldest time.Time
	for _, p := range parts {
		if p.UID == c.me.UID && (oldest.IsZero() || p.Created.Before(oldest)) {
			oldest = p.Created
		}
	}
	if oldest.IsZero() {
		return nil, nil // no bookings of theirs: nothing to tell
	}
	var evs []domain.Event
	err = tx.EventsBackward(func(e domain.Event) (bool, error) {
		if e.Time.Before(oldest) {
			return false, nil
		}
		if notice.IsNotice(e.Kind) {
			evs = append([]domain.Event{e}, evs...)
		}
		return true, nil
	})
	return evs, err
}

// noticesOf keeps, of evs, the notices about the user's own bookings. Their
// text is the event's, as `chronos events` shows it (escaped where drawn):
// the app shows a person their own ledger; what root writes to a terminal
// or posts is rendered from the records instead (noticeDetail).
func (c *Client) noticesOf(tx *storage.Tx, evs []domain.Event) ([]notice.Notice, error) {
	var ids []uint64
	for _, e := range evs {
		if notice.IsNotice(e.Kind) && e.Partition != 0 {
			ids = append(ids, e.Partition)
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	parts, err := tx.PartitionsByID(ids)
	if err != nil {
		return nil, err
	}
	owners := make(map[uint64]domain.Partition, len(parts))
	for _, p := range parts {
		owners[p.ID] = p
	}
	var out []notice.Notice
	for _, e := range evs {
		p, ok := owners[e.Partition]
		if !notice.IsNotice(e.Kind) || !ok || p.UID != c.me.UID {
			continue
		}
		out = append(out, notice.Notice{Seq: e.Seq, Time: e.Time, Kind: e.Kind, Partition: p.ID, Device: p.Device, UID: p.UID, User: p.User, Detail: e.Detail})
	}
	return out, nil
}

// DismissNotice records that the owner of booking id has read its notices
// up to event seq, so that none of their apps shows them again. Its owner
// or root may, whether the booking still runs or not.
func (c *Client) DismissNotice(id, seq uint64) error {
	return c.ledger.Update(c.ctx, func(tx *storage.Tx) error {
		p, err := getPartition(tx, id)
		if err != nil {
			return err
		}
		if !c.me.MayChange(p.UID) {
			return fmt.Errorf("%w: %d belongs to %s; only they or root may dismiss its notices", domain.ErrNotOwner, id, p.User)
		}
		if seq <= p.NoticesDismissed {
			return nil // another app of theirs did
		}
		p.NoticesDismissed = seq
		if err := tx.PutPartition(&p); err != nil {
			return err
		}
		return c.RecordEvent(tx, domain.EventDismissed, p, fmt.Sprintf("notices read up to event %d", seq))
	})
}
