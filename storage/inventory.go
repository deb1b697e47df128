package storage

// The GPUs each host last saw, and their latest memory readings.

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"
	"time"
)

// Device is one GPU of the cached inventory.
type Device struct {
	Index       int    `json:"index"`
	UUID        string `json:"uuid"`
	Name        string `json:"name"`
	MemoryTotal uint64 `json:"memory_total_bytes"`
}

// Inventory is the device list last seen by a process that opened a GPU
// backend, kept so that `create` can validate a device without paying for
// NVML's start. It says which backend, on which host, wrote it.
type Inventory struct {
	Backend string    `json:"backend"`
	Host    string    `json:"host,omitempty"`
	Updated time.Time `json:"updated"`
	Devices []Device  `json:"devices"`
}

// DeviceReading is the latest compact reading of one GPU's memory, stored
// by the processes that sample the GPUs anyway (monitors, the app, stats),
// so that `create` can say what is physically free without starting NVML.
// Each GPU's is a record of its own: create decodes only the one it books.
type DeviceReading struct {
	Time        time.Time `json:"time"`
	Backend     string    `json:"backend"`
	Index       int       `json:"index"`
	UUID        string    `json:"uuid"`
	MemoryTotal uint64    `json:"memory_total_bytes"`
	MemoryUsed  uint64    `json:"memory_used_bytes"`
	// Holders are the largest users of the memory, largest first.
	Holders []Holder `json:"holders,omitempty"`
}

// Holder is the memory one user's processes use on a GPU under one live
// booking (Partition 0: under none).
type Holder struct {
	User      string `json:"user"`
	UID       int    `json:"uid"`
	Partition uint64 `json:"partition,omitempty"`
	Bytes     uint64 `json:"bytes"`
	// PIDs are the largest of the processes, largest first.
	PIDs []int `json:"pids"`
}

// Inventory returns the cached device inventory; ok is false when none was
// stored yet.
func (tx *Tx) Inventory() (inv Inventory, ok bool, err error) { return tx.HostInventory("") }

// PutInventory caches the device inventory.
func (tx *Tx) PutInventory(inv Inventory) error { return tx.PutHostInventory("", inv) }

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
func (tx *Tx) HostInventory(host string) (inv Inventory, ok bool, err error) {
	ok, err = tx.getMeta(inventoryKey(host), &inv)
	return inv, ok, err
}

// PutHostInventory caches host's device inventory.
func (tx *Tx) PutHostInventory(host string, inv Inventory) error {
	return tx.putMeta(inventoryKey(host), inv)
}

// HostInventories returns the inventory of every host of a shared ledger,
// by host name.
func (tx *Tx) HostInventories() (map[string]Inventory, error) {
	out := map[string]Inventory{}
	from := inventoryKey("")
	from = append(from, '/')
	err := tx.scan(BucketMeta, from, false, func(k, v []byte) (bool, error) {
		host, ok := bytes.CutPrefix(k, from)
		if !ok {
			return false, nil
		}
		var inv Inventory
		if err := Decode(v, &inv); err != nil {
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
func (tx *Tx) DeviceReading(index int) (r DeviceReading, ok bool, err error) {
	ok, err = tx.getMeta(readingKey(index), &r)
	return r, ok, err
}

// DeviceReadings returns every stored GPU reading.
func (tx *Tx) DeviceReadings() ([]DeviceReading, error) {
	var out []DeviceReading
	err := tx.scan(BucketMeta, keyReadingPrefix, false, func(k, v []byte) (bool, error) {
		if !bytes.HasPrefix(k, keyReadingPrefix) {
			return false, nil
		}
		var r DeviceReading
		if err := Decode(v, &r); err != nil {
			return false, fmt.Errorf("%s: %w", k, err)
		}
		out = append(out, r)
		return true, nil
	})
	slices.SortFunc(out, func(a, b DeviceReading) int { return cmp.Compare(a.Index, b.Index) })
	return out, err
}

// PutDeviceReadings replaces the stored GPU readings with rs.
func (tx *Tx) PutDeviceReadings(rs []DeviceReading) error {
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
