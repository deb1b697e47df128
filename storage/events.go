package storage

import (
	"encoding/binary"
	"fmt"

	"github.com/chronos-gpu/chronos/core/domain"
)

// StoredEventKinds are the kinds the audit trail holds, in the order
// people meet them (chronos events --kind takes these).
var StoredEventKinds = []domain.EventKind{domain.EventCreated, domain.EventExtended, domain.EventReleased, domain.EventExpired, domain.EventWarned, domain.EventSignalled,
	domain.EventDenied, domain.EventOverBudget, domain.EventUnbooked, domain.EventQueued, domain.EventLeft, domain.EventOrphaned, domain.EventIdle, domain.EventHeld, domain.EventReclaimed,
	domain.EventRun, domain.EventDismissed, domain.EventNotified, domain.EventPolicy, domain.EventInventory, domain.EventRepaired}

// AddEvent appends e to the audit trail, numbering it.
func (tx *Tx) AddEvent(e domain.Event) error {
	raw, err := tx.writable("add event")
	if err != nil {
		return err
	}
	seq, err := raw.NextSequence(BucketEvents)
	if err != nil {
		return err
	}
	e.Seq = seq
	return PutRecord(raw, BucketEvents, IDKey(seq), e)
}

// Events returns the events numbered after seq, oldest first, at most limit
// of them (0: all).
func (tx *Tx) Events(after uint64, limit int) ([]domain.Event, error) {
	var out []domain.Event
	err := tx.scan(BucketEvents, IDKey(after+1), false, func(k, v []byte) (bool, error) {
		var e domain.Event
		if err := Decode(v, &e); err != nil {
			return false, fmt.Errorf("event %x: %w", k, err)
		}
		out = append(out, e)
		return limit <= 0 || len(out) < limit, nil
	})
	return out, err
}

// EventsBackward visits the audit trail from the newest event back, until
// fn says stop.
func (tx *Tx) EventsBackward(fn func(domain.Event) (more bool, err error)) error {
	return tx.scan(BucketEvents, nil, true, func(k, v []byte) (bool, error) {
		var e domain.Event
		if err := Decode(v, &e); err != nil {
			return false, fmt.Errorf("event %x: %w", k, err)
		}
		return fn(e)
	})
}

// LastEvent returns the sequence number of the newest event (0: none).
func (tx *Tx) LastEvent() uint64 {
	var last uint64
	_ = tx.scan(BucketEvents, nil, true, func(k, _ []byte) (bool, error) {
		if len(k) == 8 {
			last = binary.BigEndian.Uint64(k)
		}
		return false, nil
	})
	return last
}
