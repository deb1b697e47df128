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
	V  int    `json:"v"`
	ID uint64 `json:"id"`
	// Host is the machine whose GPU is asked for, as in Partition (empty
	// in a host's own ledger file); Device its index, or AnyDevice for the
	// first of its GPUs with room.
	Host   string `json:"host,omitempty"`
	Device int    `json:"device"`
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
	// Waiter is the waiting process, which may run on another host than
	// the GPU's: when it is gone, the request leaves the line. PID 0: none.
	Waiter Process `json:"waiter,omitzero"`

	State     RequestState `json:"state"`
	Partition uint64       `json:"partition,omitempty"` // the booking it got
	Ended     time.Time    `json:"ended,omitzero"`      // when it left the line
	Reason    string       `json:"reason,omitempty"`    // why it left without a booking
}

// Request returns the request with that id, or ErrNotFound.
func (tx *Tx) Request(id uint64) (Request, error) {
	var r Request
	v, err := tx.get(BucketRequests, IDKey(id))
	if err != nil {
		return r, err
	}
	if v == nil {
		return r, ErrNotFound
	}
	if err := Decode(v, &r); err != nil {
		return r, fmt.Errorf("request %d: %w", id, err)
	}
	return r, nil
}

// Requests returns every request the ledger holds, oldest first: the
// line's history.
func (tx *Tx) Requests() ([]Request, error) {
	var out []Request
	err := each(tx, BucketRequests, func(_ []byte, r Request) error {
		out = append(out, r)
		return nil
	})
	return out, err
}

// WaitingRequests returns the requests in the line, oldest first, in as
// few reads as the engine allows.
func (tx *Tx) WaitingRequests() ([]Request, error) {
	var ids []uint64
	err := tx.scan(BucketWaiting, nil, false, func(k, _ []byte) (bool, error) {
		if len(k) != 8 {
			return false, fmt.Errorf("%w: waiting index key %x", ErrDamaged, k)
		}
		ids = append(ids, binary.BigEndian.Uint64(k))
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	vals, err := tx.getMany(BucketRequests, idKeys(ids))
	if err != nil {
		return nil, err
	}
	out := make([]Request, len(ids))
	for i, v := range vals {
		if v == nil {
			return nil, fmt.Errorf("waiting index: request %d: %w", ids[i], ErrNotFound)
		}
		if err := Decode(v, &out[i]); err != nil {
			return nil, fmt.Errorf("waiting index: request %d: %w", ids[i], err)
		}
	}
	return out, nil
}

// PutRequest stores r, giving it the next request id when it has none yet,
// and keeps the index of waiting requests.
func (tx *Tx) PutRequest(r *Request) error {
	raw, err := tx.writable("put request")
	if err != nil {
		return err
	}
	if r.ID == 0 {
		if r.ID, err = raw.NextSequence(BucketRequests); err != nil {
			return err
		}
	}
	r.V = SchemaVersion
	if err := PutRecord(raw, BucketRequests, IDKey(r.ID), r); err != nil {
		return err
	}
	if r.State == Waiting {
		return raw.Put(BucketWaiting, IDKey(r.ID), []byte{})
	}
	return raw.Delete(BucketWaiting, IDKey(r.ID))
}

// UserUsage is one user's use of the GPUs, decayed: GPU-seconds (a 50%
// booking held an hour is 1,800) as of At. Fair-share order reads it.
type UserUsage struct {
	UID        int       `json:"uid"`
	User       string    `json:"user"`
	GPUSeconds float64   `json:"gpu_seconds"`
	At         time.Time `json:"at"`
}

// UserUsages returns every user's usage record, by uid.
func (tx *Tx) UserUsages() ([]UserUsage, error) {
	var out []UserUsage
	err := each(tx, BucketUsage, func(_ []byte, u UserUsage) error {
		out = append(out, u)
		return nil
	})
	return out, err
}

// UserUsage returns uid's usage record; ok is false when they have none.
func (tx *Tx) UserUsage(uid int) (u UserUsage, ok bool, err error) {
	if uid < 0 {
		return u, false, nil
	}
	v, err := tx.get(BucketUsage, IDKey(uint64(uid)))
	if err != nil || v == nil {
		return u, false, err
	}
	if err := Decode(v, &u); err != nil {
		return u, false, fmt.Errorf("usage of uid %d: %w", uid, err)
	}
	return u, true, nil
}

// PutUserUsage stores one user's usage record.
func (tx *Tx) PutUserUsage(u UserUsage) error {
	raw, err := tx.writable("put usage")
	if err != nil {
		return err
	}
	if u.UID < 0 {
		return fmt.Errorf("put usage: uid %d", u.UID)
	}
	return PutRecord(raw, BucketUsage, IDKey(uint64(u.UID)), u)
}

// Held is one interval an ended booking held its share, in parts per
// million of its GPU: what hours quotas and usage reports look back on.
// They are kept by user and end, so a look back reads only its window.
type Held struct {
	Partition uint64
	Start     time.Time
	End       time.Time
	SharePPM  int64
}

// heldKey orders held intervals by user, then end.
func heldKey(uid int, end time.Time, partition uint64) []byte {
	k := make([]byte, 24)
	binary.BigEndian.PutUint64(k, uint64(uid))
	binary.BigEndian.PutUint64(k[8:], uint64(max(end.UnixNano(), 0)))
	binary.BigEndian.PutUint64(k[16:], partition)
	return k
}

// AddHeld keeps the interval a user's booking held. Its value is 16
// bytes, the start and the share, not JSON: an hours quota reads hundreds
// of them in every admission.
func (tx *Tx) AddHeld(uid int, h Held) error {
	raw, err := tx.writable("add held")
	if err != nil {
		return err
	}
	if uid < 0 {
		return fmt.Errorf("add held: uid %d", uid)
	}
	v := make([]byte, 16)
	binary.BigEndian.PutUint64(v, uint64(max(h.Start.UnixNano(), 0)))
	binary.BigEndian.PutUint64(v[8:], uint64(max(h.SharePPM, 0)))
	return raw.Put(BucketHeld, heldKey(uid, h.End, h.Partition), v)
}

// HeldSince returns the intervals uid's bookings held that end at or
// after since, by end.
func (tx *Tx) HeldSince(uid int, since time.Time) ([]Held, error) {
	var out []Held
	prefix := heldKey(uid, time.Unix(0, 0), 0)[:8]
	err := tx.scan(BucketHeld, heldKey(uid, since, 0), false, func(k, v []byte) (bool, error) {
		if len(k) != 24 || string(k[:8]) != string(prefix) {
			return false, nil
		}
		h, err := decodeHeld(k, v)
		if err != nil {
			return false, err
		}
		out = append(out, h)
		return true, nil
	})
	return out, err
}

// decodeHeld reads one held interval: its key (user, end, booking) and
// its 16-byte value (start, share).
func decodeHeld(k, v []byte) (Held, error) {
	if len(k) != 24 || len(v) != 16 {
		return Held{}, fmt.Errorf("%w: held %x: key of %d bytes, value of %d", ErrDamaged, k, len(k), len(v))
	}
	return Held{
		Partition: binary.BigEndian.Uint64(k[16:]),
		Start:     time.Unix(0, int64(binary.BigEndian.Uint64(v))).UTC(),
		End:       time.Unix(0, int64(binary.BigEndian.Uint64(k[8:]))).UTC(),
		SharePPM:  int64(binary.BigEndian.Uint64(v[8:])),
	}, nil
}

// EachHeld visits every user's held intervals, by user, then end: what a
// migration copies.
func (tx *Tx) EachHeld(fn func(uid int, h Held) error) error {
	return tx.scan(BucketHeld, nil, false, func(k, v []byte) (bool, error) {
		h, err := decodeHeld(k, v)
		if err != nil {
			return false, err
		}
		return true, fn(int(binary.BigEndian.Uint64(k)), h)
	})
}

// HeldDropMax is the most intervals one call of DropHeld lets go of: a
// booking that ends adds one, so dropping up to two each time keeps up,
// and the transaction that ends it stays small (see WriteBudget).
const HeldDropMax = 2

// DropHeld lets go of uid's intervals that ended before cutoff, up to
// HeldDropMax of them.
func (tx *Tx) DropHeld(uid int, cutoff time.Time) error {
	raw, err := tx.writable("drop held")
	if err != nil {
		return err
	}
	end := heldKey(uid, cutoff, 0)
	return deleteWhere(tx, raw, BucketHeld, heldKey(uid, time.Unix(0, 0), 0), HeldDropMax, func(k, _ []byte) (bool, bool) {
		old := len(k) == 24 && string(k) < string(end)
		return old, old
	})
}
