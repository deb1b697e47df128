package storage

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/chronos-gpu/chronos/core/domain"
)

// Request returns the request with that id, or ErrNotFound.
func (tx *Tx) Request(id uint64) (domain.Request, error) {
	var r domain.Request
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
func (tx *Tx) Requests() ([]domain.Request, error) {
	var out []domain.Request
	err := each(tx, BucketRequests, func(_ []byte, r domain.Request) error {
		out = append(out, r)
		return nil
	})
	return out, err
}

// WaitingRequests returns the requests in the line, oldest first, in as
// few reads as the engine allows.
func (tx *Tx) WaitingRequests() ([]domain.Request, error) {
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
	out := make([]domain.Request, len(ids))
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
func (tx *Tx) PutRequest(r *domain.Request) error {
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
	if r.State == domain.Waiting {
		return raw.Put(BucketWaiting, IDKey(r.ID), []byte{})
	}
	return raw.Delete(BucketWaiting, IDKey(r.ID))
}

// UserUsages returns every user's usage record, by uid.
func (tx *Tx) UserUsages() ([]domain.UserUsage, error) {
	var out []domain.UserUsage
	err := each(tx, BucketUsage, func(_ []byte, u domain.UserUsage) error {
		out = append(out, u)
		return nil
	})
	return out, err
}

// UserUsage returns uid's usage record; ok is false when they have none.
func (tx *Tx) UserUsage(uid int) (u domain.UserUsage, ok bool, err error) {
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
func (tx *Tx) PutUserUsage(u domain.UserUsage) error {
	raw, err := tx.writable("put usage")
	if err != nil {
		return err
	}
	if u.UID < 0 {
		return fmt.Errorf("put usage: uid %d", u.UID)
	}
	return PutRecord(raw, BucketUsage, IDKey(uint64(u.UID)), u)
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
func (tx *Tx) AddHeld(uid int, h domain.Held) error {
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
func (tx *Tx) HeldSince(uid int, since time.Time) ([]domain.Held, error) {
	var out []domain.Held
	prefix := heldKey(uid, time.Unix(0, 0), 0)[:8]
	next := IDKey(uint64(uid) + 1) // the next user's, where uid's end
	err := tx.scanTo(BucketHeld, heldKey(uid, since, 0), next, func(k, v []byte) (bool, error) {
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
func decodeHeld(k, v []byte) (domain.Held, error) {
	if len(k) != 24 || len(v) != 16 {
		return domain.Held{}, fmt.Errorf("%w: held %x: key of %d bytes, value of %d", ErrDamaged, k, len(k), len(v))
	}
	return domain.Held{
		Partition: binary.BigEndian.Uint64(k[16:]),
		Start:     time.Unix(0, int64(binary.BigEndian.Uint64(v))).UTC(),
		End:       time.Unix(0, int64(binary.BigEndian.Uint64(k[8:]))).UTC(),
		SharePPM:  int64(binary.BigEndian.Uint64(v[8:])),
	}, nil
}

// EachHeld visits every user's held intervals, by user, then end: what a
// migration copies.
func (tx *Tx) EachHeld(fn func(uid int, h domain.Held) error) error {
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
	return deleteWhere(tx, raw, BucketHeld, heldKey(uid, time.Unix(0, 0), 0), end, HeldDropMax, func(k, _ []byte) (bool, bool) {
		old := len(k) == 24 && string(k) < string(end)
		return old, old
	})
}
