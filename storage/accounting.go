package storage

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/chronos-gpu/chronos/core/domain"
)

// The monitors' accounting: per booking aggregates, one compact sample per
// GPU per minute (kept a day), and per user GPU time used with no booking.
var (
	BucketBookingUsage = []byte("booking-usage") // BookingUsage by booking id
	BucketSamples      = []byte("samples")       // GPUMinute by minute, then device UUID
	BucketUnbooked     = []byte("unbooked")      // UnbookedUse by day, then uid
)

// BookingUsage returns the booking's usage; ok is false when none was
// recorded.
func (tx *Tx) BookingUsage(id uint64) (u domain.BookingUsage, ok bool, err error) {
	v, err := tx.get(BucketBookingUsage, IDKey(id))
	if err != nil || v == nil {
		return domain.BookingUsage{Partition: id}, false, err
	}
	if err := Decode(v, &u); err != nil {
		return u, false, fmt.Errorf("usage of %d: %w", id, err)
	}
	return u, true, nil
}

// UsageOf returns the usage of each booking of ids, in that order (with no
// usage yet: zero, Partition set), in as few reads as the engine allows.
func (tx *Tx) UsageOf(ids []uint64) ([]domain.BookingUsage, error) {
	vals, err := tx.getMany(BucketBookingUsage, idKeys(ids))
	if err != nil {
		return nil, err
	}
	out := make([]domain.BookingUsage, len(ids))
	for i, v := range vals {
		out[i].Partition = ids[i]
		if v != nil {
			if err := Decode(v, &out[i]); err != nil {
				return nil, fmt.Errorf("usage of %d: %w", ids[i], err)
			}
		}
	}
	return out, nil
}

// PutBookingUsage stores a booking's usage.
func (tx *Tx) PutBookingUsage(u domain.BookingUsage) error {
	raw, err := tx.writable("put usage")
	if err != nil {
		return err
	}
	return PutRecord(raw, BucketBookingUsage, IDKey(u.Partition), u)
}

// BookingUsages returns every booking's usage by id.
func (tx *Tx) BookingUsages() (map[uint64]domain.BookingUsage, error) {
	out := map[uint64]domain.BookingUsage{}
	err := each(tx, BucketBookingUsage, func(_ []byte, u domain.BookingUsage) error {
		out[u.Partition] = u
		return nil
	})
	return out, err
}

// unixSeconds orders times as keys; times before 1970 sort as 1970.
func unixSeconds(t time.Time) uint64 { return uint64(max(t.Unix(), 0)) }

func minuteKey(t time.Time, uuid string) []byte {
	k := make([]byte, 8, 8+len(uuid))
	binary.BigEndian.PutUint64(k, unixSeconds(t))
	return append(k, uuid...)
}

// HasGPUMinute reports whether the GPU's minute starting at minute was
// recorded: the claim that makes many monitors account it once.
func (tx *Tx) HasGPUMinute(minute time.Time, uuid string) (bool, error) {
	v, err := tx.get(BucketSamples, minuteKey(minute, uuid))
	return v != nil, err
}

// PutGPUMinute stores one GPU's minute.
func (tx *Tx) PutGPUMinute(m domain.GPUMinute) error {
	raw, err := tx.writable("put GPU minute")
	if err != nil {
		return err
	}
	return PutRecord(raw, BucketSamples, minuteKey(m.Minute, m.UUID), m)
}

// GPUMinutes returns the minutes that started in [from, to), oldest first;
// uuid "" means every GPU's.
func (tx *Tx) GPUMinutes(from, to time.Time, uuid string) ([]domain.GPUMinute, error) {
	var out []domain.GPUMinute
	end := unixSeconds(to)
	err := tx.scan(BucketSamples, minuteKey(from, ""), false, func(k, v []byte) (bool, error) {
		if len(k) < 8 || binary.BigEndian.Uint64(k) >= end {
			return false, nil
		}
		if uuid != "" && string(k[8:]) != uuid {
			return true, nil
		}
		var m domain.GPUMinute
		if err := Decode(v, &m); err != nil {
			return false, fmt.Errorf("GPU minute %x: %w", k, err)
		}
		out = append(out, m)
		return true, nil
	})
	return out, err
}

// DropGPUMinutes deletes the minutes that started before cutoff.
func (tx *Tx) DropGPUMinutes(cutoff time.Time) error {
	raw, err := tx.writable("drop GPU minutes")
	if err != nil {
		return err
	}
	end := unixSeconds(cutoff)
	return deleteWhere(tx, raw, BucketSamples, nil, IDKey(end), DropMax, func(k, _ []byte) (bool, bool) {
		old := len(k) < 8 || binary.BigEndian.Uint64(k) < end
		return old, old
	})
}

func dayKey(day time.Time, uid int) []byte {
	k := make([]byte, 16)
	binary.BigEndian.PutUint64(k, unixSeconds(day))
	binary.BigEndian.PutUint64(k[8:], uint64(uid))
	return k
}

// AddUnbooked adds GPU time a user's processes used with no booking on the
// day of at.
func (tx *Tx) AddUnbooked(at time.Time, uid int, user string, d time.Duration) error {
	raw, err := tx.writable("add unbooked use")
	if err != nil {
		return err
	}
	y, m, dd := at.UTC().Date()
	day := time.Date(y, m, dd, 0, 0, 0, 0, time.UTC)
	k := dayKey(day, uid)
	u := domain.UnbookedUse{Day: day, UID: uid, User: user}
	v, err := raw.Get(BucketUnbooked, k)
	if err != nil {
		return err
	}
	if v != nil {
		if err := Decode(v, &u); err != nil {
			return fmt.Errorf("unbooked use %x: %w", k, err)
		}
	}
	u.GPUTime += d
	return PutRecord(raw, BucketUnbooked, k, u)
}

// Unbooked returns each user's daily unbooked use from the day of since on.
func (tx *Tx) Unbooked(since time.Time) ([]domain.UnbookedUse, error) {
	y, m, d := since.UTC().Date()
	var out []domain.UnbookedUse
	err := tx.scan(BucketUnbooked, dayKey(time.Date(y, m, d, 0, 0, 0, 0, time.UTC), 0), false, func(k, v []byte) (bool, error) {
		var u domain.UnbookedUse
		if err := Decode(v, &u); err != nil {
			return false, fmt.Errorf("unbooked use %x: %w", k, err)
		}
		out = append(out, u)
		return true, nil
	})
	return out, err
}
