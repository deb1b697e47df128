package storage

import (
	"fmt"
	"time"

	"github.com/chronos-gpu/chronos/core/domain"
)

// Claims returns every claim by key.
func (tx *Tx) Claims() (map[string]domain.Claim, error) {
	out := map[string]domain.Claim{}
	err := tx.scan(BucketClaims, nil, false, func(k, v []byte) (bool, error) {
		var c domain.Claim
		if err := Decode(v, &c); err != nil {
			return false, fmt.Errorf("claim %q: %w", k, err)
		}
		out[string(k)] = c
		return true, nil
	})
	return out, err
}

// Claim returns the claim on key; ok is false when there is none.
func (tx *Tx) Claim(key string) (c domain.Claim, ok bool, err error) {
	v, err := tx.get(BucketClaims, []byte(key))
	if err != nil || v == nil {
		return c, false, err
	}
	if err := Decode(v, &c); err != nil {
		return c, false, fmt.Errorf("claim %q: %w", key, err)
	}
	return c, true, nil
}

// PutClaim stores (or replaces) the claim on key.
func (tx *Tx) PutClaim(key string, c domain.Claim) error {
	raw, err := tx.writable("put claim")
	if err != nil {
		return err
	}
	return PutRecord(raw, BucketClaims, []byte(key), c)
}

// DropMax is the most records one call of DropClaims or DropGPUMinutes
// deletes, so that a transaction stays small enough for every engine (etcd
// takes 128 writes in one by default); later calls delete the rest.
const DropMax = 16

// DropClaims deletes claims made before cutoff: the acts they guarded are
// long done, and the processes they named long gone.
func (tx *Tx) DropClaims(cutoff time.Time) error {
	raw, err := tx.writable("drop claims")
	if err != nil {
		return err
	}
	return deleteWhere(tx, raw, BucketClaims, nil, nil, DropMax, func(_, v []byte) (bool, bool) {
		var c domain.Claim
		return Decode(v, &c) != nil || c.At.Before(cutoff), true
	})
}
