package domain

import (
	"fmt"
	"time"
	"unicode/utf8"
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
	// A booking's owner's own records: a chronos run of it began (the
	// process the monitor watches and signals), and its notices were read.
	EventRun       EventKind = "run"
	EventDismissed EventKind = "dismissed"
	// Acts a monitor reports that are not stored as events.
	EventError   EventKind = "error"
	EventStarted EventKind = "started"
	EventStopped EventKind = "stopped"
	// This host's clock came to disagree with the lab's, or to agree again.
	EventClock EventKind = "clock"
	// A notice delivered to its owner's terminals or the webhook.
	EventNotified EventKind = "notified"
)

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

// MaxDetail bounds what an event or a monitor's act says: a command line
// can run to hundreds of kilobytes (one was 220 KB), and the audit trail
// and a screen need only its start.
const MaxDetail = 1024

// BoundDetail cuts detail to MaxDetail bytes, at a character's start, and
// says how much was left out.
func BoundDetail(detail string) string {
	if len(detail) <= MaxDetail {
		return detail
	}
	cut := MaxDetail
	for cut > 0 && !utf8.RuneStart(detail[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… (%d more bytes)", detail[:cut], len(detail)-cut)
}
