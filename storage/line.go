package storage

import (
	"encoding/binary"
	"fmt"
	"time"
)

// RequestState is where a request in the waiting line is.
type RequestState string

// The states of a request. Only Waiting requests are in the line; the
// others say how it left.
const (
	Waiting   RequestState = "waiting"
	Granted   RequestState = "granted"
	Cancelled RequestState = "cancelled"
	TimedOut  RequestState = "timed out"
)

// AnyDevice in a request means whichever GPU has room first.
const AnyDevice = -1

// Request is an ask for a booking that did not fit when it was made and
// waits in line until it does.
type Request struct {
	V      int    `json:"v"`
	ID     uint64 `json:"id"`
	Device int    `json:"device"` // AnyDevice: the first GPU with room
	// The memory asked: a share of the GPU in parts per million, or a size.
	SharePPM   int64         `json:"share_ppm,omitempty"`
	Bytes      uint64        `json:"bytes,omitempty"`
	Duration   time.Duration `json:"duration"`
	ComputePct int           `json:"compute_percent,omitempty"`
	UID        int           `json:"uid"`
	User       string        `json:"user"`
	// NotBefore is the earliest start asked (--at); zero: as soon as it fits.
	NotBefore time.Time `json:"not_before,omitzero"`
	Created   time.Time `json:"created"`
	// Deadline is when it leaves the line unbooked (--timeout); zero: never.
	Deadline time.Time `json:"deadline,omitzero"`
	// The waiting process: when it is gone, the request leaves the line.
	Host     string `json:"host,omitempty"`
	PID      int    `json:"pid,omitempty"`
	PIDStart uint64 `json:"pid_start,omitempty"`

	State     RequestState `json:"state"`
	Partition uint64       `json:"partition,omitempty"` // the booking it got
	Ended     time.Time    `json:"ended,omitzero"`      // when it left the line
	Reason    string       `json:"reason,omitempty"`    // why it left without a booking
}

// Request returns the request with that id, or ErrNotFound.
func (tx *Tx) Request(id uint64) (Request, error) {
	var r Request
	v, err := tx.get(bucketRequests, key(id))
	if err != nil {
		return r, err
	}
	if v == nil {
		return r, ErrNotFound
	}
	if err := decode(v, &r); err != nil {
		return r, fmt.Errorf("request %d: %w", id, err)
	}
	return r, nil
}

// Requests returns every request the ledger holds, oldest first: the
// line's history.
func (tx *Tx) Requests() ([]Request, error) {
	var out []Request
	err := each(tx, bucketRequests, func(_ []byte, r Request) error {
		out = append(out, r)
		return nil
	})
	return out, err
}

// WaitingRequests returns the requests in the line, oldest first.
func (tx *Tx) WaitingRequests() ([]Request, error) {
	var out []Request
	err := tx.scan(bucketWaiting, nil, false, func(k, _ []byte) (bool, error) {
		if len(k) != 8 {
			return false, fmt.Errorf("%w: waiting index key %x", ErrDamaged, k)
		}
		r, err := tx.Request(binary.BigEndian.Uint64(k))
		if err != nil {
			return false, fmt.Errorf("waiting index: %w", err)
		}
		out = append(out, r)
		return true, nil
	})
	return out, err
}

// PutRequest stores r, giving it the next request id when it has none yet,
// and keeps the index of waiting requests.
func (tx *Tx) PutRequest(r *Request) error {
	raw, err := tx.writable("put request")
	if err != nil {
		return err
	}
	if r.ID == 0 {
		if r.ID, err = raw.NextSequence(bucketRequests); err != nil {
			return err
		}
	}
	r.V = SchemaVersion
	if err := put(raw, bucketRequests, key(r.ID), r); err != nil {
		return err
	}
	if r.State == Waiting {
		return raw.Put(bucketWaiting, key(r.ID), []byte{})
	}
	return raw.Delete(bucketWaiting, key(r.ID))
}

// Usage is one user's use of the GPUs: decayed GPU-seconds (a 50% booking
// held an hour is 1,800) as of At, which orders the line, and the
// intervals their bookings held that ended recently, which hours quotas
// and usage reports look back on without reading the history.
type Usage struct {
	UID        int       `json:"uid"`
	User       string    `json:"user"`
	GPUSeconds float64   `json:"gpu_seconds"`
	At         time.Time `json:"at"`
	Held       []Held    `json:"held,omitempty"` // oldest first
}

// Held is one interval a booking held its share, in parts per million of
// its GPU.
type Held struct {
	Start    time.Time `json:"start"`
	End      time.Time `json:"end"`
	SharePPM int64     `json:"share_ppm"`
}

// Usage returns every user's usage record, by uid.
func (tx *Tx) Usage() ([]Usage, error) {
	var out []Usage
	err := each(tx, bucketUsage, func(_ []byte, u Usage) error {
		out = append(out, u)
		return nil
	})
	return out, err
}

// PutUsage stores one user's usage record.
func (tx *Tx) PutUsage(u Usage) error {
	raw, err := tx.writable("put usage")
	if err != nil {
		return err
	}
	if u.UID < 0 {
		return fmt.Errorf("put usage: uid %d", u.UID)
	}
	return put(raw, bucketUsage, key(uint64(u.UID)), u)
}
