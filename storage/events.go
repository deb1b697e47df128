package storage

// The audit trail: what each event records, appended in order.

import (
	"encoding/binary"
	"fmt"
	"time"
)

// EventKind says what an audit event records. The words are stored and
// printed as they are, so they never change.
type EventKind string

// The audit trail's kinds, and the monitor's acts (which become events).
const (
	EventCreated    EventKind = "created"
	EventReleased   EventKind = "released"
	EventExtended   EventKind = "extended"
	EventExpired    EventKind = "expired"
	EventWarned     EventKind = "warned"
	EventSignalled  EventKind = "signalled"
	EventDenied     EventKind = "denied"
	EventOverBudget EventKind = "overbudget"
	EventUnbooked   EventKind = "unbooked"
	EventPolicy     EventKind = "policy"
	EventRepaired   EventKind = "repaired"
	// The waiting line: a request joined it, or left it without a booking
	// (cancelled, timed out, its process gone, or it can never fit). A
	// request granted leaves with the booking's "created" event.
	EventQueued    EventKind = "queued"
	EventLeft      EventKind = "left"
	EventOrphaned  EventKind = "orphaned"
	EventInventory EventKind = "inventory" // the machine's GPUs changed
	// The idle ladder: a warning to the owner of an idle booking, the
	// booking released for being idle, and a hold that exempts it.
	EventIdle      EventKind = "idle"
	EventReclaimed EventKind = "reclaimed"
	EventHeld      EventKind = "held"
	// Acts a monitor reports that are not stored as events.
	EventError   EventKind = "error"
	EventStarted EventKind = "started"
	EventStopped EventKind = "stopped"
	// This host's clock came to disagree with the lab's, or to agree again.
	EventClock EventKind = "clock"
	// A notice delivered to its owner's terminals or the webhook.
	EventNotified EventKind = "notified"
)

// StoredEventKinds are the kinds the audit trail holds, in the order
// people meet them (chronos events --kind takes these).
var StoredEventKinds = []EventKind{EventCreated, EventExtended, EventReleased, EventExpired, EventWarned, EventSignalled,
	EventDenied, EventOverBudget, EventUnbooked, EventQueued, EventLeft, EventOrphaned, EventIdle, EventHeld, EventReclaimed,
	EventNotified, EventPolicy, EventInventory, EventRepaired}

// Event is one line of the audit trail. UID and User are who acted (a
// monitor's user, for its acts); Process is the process an act was about.
type Event struct {
	Seq       uint64        `json:"seq"`
	Time      time.Time     `json:"time"`
	Kind      EventKind     `json:"kind"`
	Partition uint64        `json:"partition,omitempty"`
	UID       int           `json:"uid"`
	User      string        `json:"user"`
	Process   *EventProcess `json:"process,omitempty"`
	Detail    string        `json:"detail,omitempty"`
}

// EventProcess is the process an event is about, and its owner: for an
// unbooked or over-budget process, the one whose process it is.
type EventProcess struct {
	PID  int    `json:"pid"`
	UID  int    `json:"uid"`
	User string `json:"user"`
}

// AddEvent appends e to the audit trail, numbering it.
func (tx *Tx) AddEvent(e Event) error {
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
func (tx *Tx) Events(after uint64, limit int) ([]Event, error) {
	var out []Event
	err := tx.scan(BucketEvents, IDKey(after+1), false, func(k, v []byte) (bool, error) {
		var e Event
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
func (tx *Tx) EventsBackward(fn func(Event) (more bool, err error)) error {
	return tx.scan(BucketEvents, nil, true, func(k, v []byte) (bool, error) {
		var e Event
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
