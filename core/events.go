package core

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/storage"
)

// EventFilter picks audit events; its zero value picks every one.
type EventFilter struct {
	// Booking: only events about this booking (0: any).
	Booking uint64
	// User: only events about this user, by login name or uid: those they
	// caused, those about their processes, and those about their
	// bookings.
	User string
	// Since: only events recorded at or after this time (zero: all).
	Since time.Time
	// Kinds: only events of these kinds (none: any).
	Kinds []domain.EventKind
}

// keeps says whether the filter picks e; owner finds a booking's owner.
func (f EventFilter) keeps(e domain.Event, owner func(uint64) (domain.Partition, bool)) bool {
	if f.Booking != 0 && e.Partition != f.Booking {
		return false
	}
	if len(f.Kinds) > 0 && !slices.Contains(f.Kinds, e.Kind) {
		return false
	}
	if f.User == "" {
		return true
	}
	is := func(name string, uid int) bool { return name == f.User || strconv.Itoa(uid) == f.User }
	if is(e.User, e.UID) || (e.Process != nil && is(e.Process.User, e.Process.UID)) {
		return true
	}
	p, ok := owner(e.Partition)
	return ok && is(p.User, p.UID)
}

// ParseEventKinds reads a comma-separated list of event kinds.
func ParseEventKinds(s string) ([]domain.EventKind, error) {
	var kinds []domain.EventKind
	for _, w := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' }) {
		k := domain.EventKind(strings.ToLower(strings.TrimSpace(w)))
		if !slices.Contains(storage.StoredEventKinds, k) {
			names := make([]string, len(storage.StoredEventKinds))
			for i, k := range storage.StoredEventKinds {
				names[i] = string(k)
			}
			return nil, domain.InputErr("event kind %s: use %s", human.Quote(w), strings.Join(names, ", "))
		}
		kinds = append(kinds, k)
	}
	if len(kinds) == 0 {
		return nil, domain.InputErr("--kind needs an event kind, such as created or expired")
	}
	return kinds, nil
}

// FindEvents returns the newest limit (0: all) events the filter picks,
// oldest first. It reads the trail from its end back, only as far as it
// must: the trail grows for as long as the machine is used.
func (c *Client) FindEvents(f EventFilter, limit int) ([]domain.Event, error) {
	var out []domain.Event
	err := c.ledger.View(c.ctx, func(tx *storage.Tx) error {
		owners := map[uint64]domain.Partition{}
		owner := func(id uint64) (domain.Partition, bool) {
			if id == 0 {
				return domain.Partition{}, false
			}
			p, ok := owners[id]
			if !ok {
				var err error
				p, err = tx.Partition(id)
				ok = err == nil
				owners[id] = p
			}
			return p, ok && p.ID != 0
		}
		return tx.EventsBackward(func(e domain.Event) (bool, error) {
			if !f.Since.IsZero() && e.Time.Before(f.Since) {
				return false, nil
			}
			if f.keeps(e, owner) {
				out = append(out, e)
			}
			return limit <= 0 || len(out) < limit, nil
		})
	})
	slices.Reverse(out)
	return out, err
}
