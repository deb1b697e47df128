// Package keeper is a guarded ledger's door: root's monitor (the keeper)
// serves a Unix socket, takes each caller's identity from the kernel
// (SO_PEERCRED) and runs their writes through core as them; members'
// commands send their writes there (see Client). Reads stay direct.
//
// The protocol: one request per connection, each message a frame of a
// 4-byte big-endian length and that many bytes of JSON, at most MaxFrame.
// The keeper answers with one final reply; a create that waits in line is
// first told where it stands (replies of kind joined and place) for as
// long as it waits, and leaves the line when its connection closes.
package keeper

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/core/admission"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/storage"
)

// Version is the protocol's; a keeper refuses a request of another.
const Version = 1

// MaxFrame bounds a frame: a request is a few hundred bytes, and a hold's
// reason is the longest thing in one.
const MaxFrame = 64 << 10

// Op is what a request asks the keeper to do.
type Op string

// The writes a member makes through the keeper.
const (
	OpCreate   Op = "create"    // book, or with Wait join the line and wait
	OpEnqueue  Op = "enqueue"   // book, or join the line with the caller's process as the waiter, and return (the app)
	OpRelease  Op = "release"   // end booking ID
	OpExtend   Op = "extend"    // give booking ID Duration more
	OpHold     Op = "hold"      // keep booking ID from idle reclaim for Duration
	OpCancel   Op = "cancel"    // take request ID out of the line
	OpHandOver Op = "hand-over" // make process PID, the caller's, the waiter of request ID (the app, as it quits)
	OpWait     Op = "wait"      // wait for request ID, already in line, as its waiter: a waiter back after the keeper restarted, or one the app hands its request to
	OpWrapper  Op = "wrapper"   // record the caller as the chronos run of booking ID, its command process group Group
	OpSignal   Op = "signal"    // claim Signal (SIGTERM, SIGKILL) for process group Group of booking ID: Reply.Claimed
	OpDismiss  Op = "dismiss"   // mark booking ID's notices read up to audit event Seq (the app's key)
)

// The reads a member makes through the keeper of a ledger it may not
// reach (etcd, whose key is root's): see RemoteStore.
const (
	OpSnapshot Op = "snapshot" // the whole ledger, unless its Version is Have: chunks, then done with Version
	OpPresent  Op = "present"  // the hosts' live statuses: chunks, then done
)

// Request is one request's frame. Who asks is never in it: the keeper
// takes that from the kernel.
type Request struct {
	V        int           `json:"v"`
	Op       Op            `json:"op"`
	ID       uint64        `json:"id,omitempty"`
	Duration time.Duration `json:"duration,omitempty"`
	Reason   string        `json:"reason,omitempty"`
	Create   *Create       `json:"create,omitempty"`
	Group    int           `json:"group,omitempty"`  // a run's command's process group, in the caller's pid namespace
	Signal   int           `json:"signal,omitempty"` // its number (15, 9)
	PID      int           `json:"pid,omitempty"`    // a process of the caller's, the waiter a request is handed to
	Seq      uint64        `json:"seq,omitempty"`    // an audit event's number: the last notice read
	Have     string        `json:"have,omitempty"`   // the snapshot's version the caller holds
}

// Create is a booking asked for (core.Request), and whether to wait in
// line for it.
type Create struct {
	Host     string        `json:"host,omitempty"`
	Device   int           `json:"device"`
	Devices  []int         `json:"devices,omitempty"` // several named GPUs
	Count    int           `json:"gpus,omitempty"`    // how many of any
	Fraction float64       `json:"fraction,omitempty"`
	Bytes    uint64        `json:"bytes,omitempty"`
	Duration time.Duration `json:"duration"`
	Compute  int           `json:"compute,omitempty"`
	For      string        `json:"for,omitempty"`
	Start    time.Time     `json:"start,omitzero"`
	Wait     bool          `json:"wait,omitempty"`
	Timeout  time.Duration `json:"timeout,omitempty"`
}

// ReplyKind says what a reply is.
type ReplyKind string

// The replies: the final one (done or error), and a waiter's news.
const (
	ReplyDone   ReplyKind = "done"
	ReplyError  ReplyKind = "error"
	ReplyJoined ReplyKind = "joined" // the request joined the line: Entry
	ReplyPlace  ReplyKind = "place"  // its place or ETA changed: Entry
	ReplyChunk  ReplyKind = "chunk"  // the next part of a read's answer: Data
)

// Reply is one frame of the keeper's answer.
type Reply struct {
	V         int                   `json:"v"`
	Kind      ReplyKind             `json:"kind"`
	Partition *domain.Partition     `json:"partition,omitempty"`
	Room      *core.Availability    `json:"room,omitempty"`
	Entry     *admission.QueueEntry `json:"entry,omitempty"`
	Usage     *domain.BookingUsage  `json:"usage,omitempty"`
	Claimed   bool                  `json:"claimed,omitempty"` // a signal's claim went to the caller
	Data      []byte                `json:"data,omitempty"`    // a chunk of a read's answer
	Version   string                `json:"version,omitempty"` // a snapshot's
	Error     string                `json:"error,omitempty"`
	Class     string                `json:"class,omitempty"` // which of classes the error is
	// A refusal of what would fit later (admission.FitsLaterError): the
	// refusal alone, when it would fit, and the keeper's now, so that the
	// app offers to wait in line as on an open ledger.
	Why    string    `json:"why,omitempty"`
	FitsAt time.Time `json:"fits_at,omitzero"`
	Now    time.Time `json:"now,omitzero"`
}

// classes are the errors a caller tells apart (the exit status, the
// advice printed), by a name that crosses the socket; the first that
// matches names an error.
var classes = []struct {
	name string
	err  error
}{
	{"input", domain.ErrInput}, {"quota", domain.ErrQuota}, {"too-far-ahead", domain.ErrTooFarAhead}, {"left-line", domain.ErrLeftLine},
	{"no-request", domain.ErrNoRequest}, {"overbooked", domain.ErrOverbooked}, {"not-owner", domain.ErrNotOwner}, {"not-root", domain.ErrNotRoot},
	{"not-live", domain.ErrNotLive}, {"no-booking", domain.ErrNoPartition}, {"no-device", domain.ErrNoDevice}, {"too-long", domain.ErrTooLong},
	{"unknown-user", domain.ErrUnknownUser}, {"other-host", domain.ErrOtherHost}, {"memory-in-use", domain.ErrMemoryInUse},
	{"busy", storage.ErrBusy}, {"damaged", storage.ErrDamaged}, {"unavailable", storage.ErrUnavailable}, {"refused", ErrRefused},
}

// ErrRefused says the keeper would not serve the caller (not in the
// group) or the request (a malformed frame).
var ErrRefused = errors.New("the keeper refused the request")

// errorReply is the final reply for err.
func errorReply(err error) Reply {
	r := Reply{V: Version, Kind: ReplyError, Error: err.Error()}
	for _, c := range classes {
		if errors.Is(err, c.err) {
			r.Class = c.name
			break
		}
	}
	var later *admission.FitsLaterError
	if errors.As(err, &later) {
		r.Why, r.FitsAt, r.Now = later.Why.Error(), later.At, later.Now
	}
	return r
}

// remoteError is an error the keeper replied: its words, and its class
// for errors.Is.
type remoteError struct {
	msg   string
	class error
}

func (e *remoteError) Error() string { return e.msg }
func (e *remoteError) Unwrap() error { return e.class }

func (r Reply) err() error {
	e := &remoteError{msg: r.Error}
	for _, c := range classes {
		if c.name == r.Class {
			e.class = c.err
		}
	}
	if !r.FitsAt.IsZero() {
		e.msg = r.Why
		return &admission.FitsLaterError{Why: e, At: r.FitsAt, Now: r.Now}
	}
	return e
}

// Frame errors: what a peer sent that is not a frame.
var (
	ErrFrameTooLarge = fmt.Errorf("%w: a frame longer than %d bytes", ErrRefused, MaxFrame)
	ErrFrameEmpty    = fmt.Errorf("%w: an empty frame", ErrRefused)
)

// WriteFrame sends v as one frame.
func WriteFrame(w io.Writer, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if len(data) > MaxFrame {
		return ErrFrameTooLarge
	}
	buf := make([]byte, 4+len(data))
	binary.BigEndian.PutUint32(buf, uint32(len(data)))
	copy(buf[4:], data)
	_, err = w.Write(buf)
	return err
}

// ReadFrame reads one frame into v. A frame cut short is
// io.ErrUnexpectedEOF; a length over MaxFrame is refused before anything
// of it is read.
func ReadFrame(r io.Reader, v any) error {
	var head [4]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return err
	}
	n := binary.BigEndian.Uint32(head[:])
	switch {
	case n == 0:
		return ErrFrameEmpty
	case n > MaxFrame:
		return ErrFrameTooLarge
	}
	data := make([]byte, n)
	if _, err := io.ReadFull(r, data); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%w: a frame that is not a request's JSON: %w", ErrRefused, err)
	}
	return nil
}
