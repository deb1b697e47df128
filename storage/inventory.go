package storage

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"

	"github.com/chronos-gpu/chronos/core/domain"
)

// Inventory returns the cached device inventory; ok is false when none was
// stored yet.
func (tx *Tx) Inventory() (inv domain.Inventory, ok bool, err error) { return tx.HostInventory("") }

// PutInventory caches the device inventory.
func (tx *Tx) PutInventory(inv domain.Inventory) error { return tx.PutHostInventory("", inv) }

// In a ledger many hosts share, each host's inventory has its own key:
// inventory/<host>. The ledger's own host (a file's) keeps "inventory".
func inventoryKey(host string) []byte {
	if host == "" {
		return KeyInventory
	}
	return append(slices.Clone(KeyInventory), "/"+host...)
}

// HostInventory returns host's cached device inventory ("" the ledger's own
// host); ok is false when none was stored yet.
func (tx *Tx) HostInventory(host string) (inv domain.Inventory, ok bool, err error) {
	k := inventoryKey(host)
	v, err := tx.get(BucketMeta, k)
	if err != nil || v == nil {
		return inv, false, err
	}
	if inv, err = inventoryMemo.decode(string(k), v); err != nil {
		return inv, false, fmt.Errorf("%s: %w", k, err)
	}
	return inv, true, nil
}

// PutHostInventory caches host's device inventory.
func (tx *Tx) PutHostInventory(host string, inv domain.Inventory) error {
	return tx.putMeta(inventoryKey(host), inv)
}

// HostInventories returns the inventory of every host of a shared ledger,
// by host name.
func (tx *Tx) HostInventories() (map[string]domain.Inventory, error) {
	out := map[string]domain.Inventory{}
	from := inventoryKey("")
	from = append(from, '/')
	err := tx.scan(BucketMeta, from, false, func(k, v []byte) (bool, error) {
		host, ok := bytes.CutPrefix(k, from)
		if !ok {
			return false, nil
		}
		inv, err := inventoryMemo.decode(string(k), v)
		if err != nil {
			return false, fmt.Errorf("%s: %w", k, err)
		}
		out[string(host)] = inv
		return true, nil
	})
	return out, err
}

func readingKey(index int) []byte { return fmt.Appendf(nil, "%s%d", keyReadingPrefix, index) }

// DeviceReading returns the stored reading of GPU index; ok is false when
// there is none.
func (tx *Tx) DeviceReading(index int) (r domain.DeviceReading, ok bool, err error) {
	ok, err = tx.getMeta(readingKey(index), &r)
	return r, ok, err
}

// DeviceReadings returns every stored GPU reading.
func (tx *Tx) DeviceReadings() ([]domain.DeviceReading, error) {
	var out []domain.DeviceReading
	err := tx.scan(BucketMeta, keyReadingPrefix, false, func(k, v []byte) (bool, error) {
		if !bytes.HasPrefix(k, keyReadingPrefix) {
			return false, nil
		}
		var r domain.DeviceReading
		if err := Decode(v, &r); err != nil {
			return false, fmt.Errorf("%s: %w", k, err)
		}
		out = append(out, r)
		return true, nil
	})
	slices.SortFunc(out, func(a, b domain.DeviceReading) int { return cmp.Compare(a.Index, b.Index) })
	return out, err
}

// PutDeviceReadings replaces the stored GPU readings with rs.
func (tx *Tx) PutDeviceReadings(rs []domain.DeviceReading) error {
	raw, err := tx.writable("put readings")
	if err != nil {
		return err
	}
	var old [][]byte
	err = tx.scan(BucketMeta, keyReadingPrefix, false, func(k, _ []byte) (bool, error) {
		if !bytes.HasPrefix(k, keyReadingPrefix) {
			return false, nil
		}
		old = append(old, append([]byte(nil), k...))
		return true, nil
	})
	if err != nil {
		return err
	}
	for _, k := range old {
		if err := raw.Delete(BucketMeta, k); err != nil {
			return err
		}
	}
	for _, r := range rs {
		if err := PutRecord(raw, BucketMeta, readingKey(r.Index), r); err != nil {
			return err
		}
	}
	return nil
}
