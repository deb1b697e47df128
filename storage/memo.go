package storage

import (
	"bytes"
	"slices"
	"sync"

	"github.com/chronos-gpu/chronos/core/domain"
)

// memoSize bounds a memo's generation (see memo): a busy ledger's live
// bookings many times over. A memo keeps two generations, so at most twice
// this many decodings, a few MiB.
const memoSize = 4096

// Every admission decodes every live booking and the host's inventory,
// and between two writes nearly all of them are the very bytes decoded the
// time before: JSON decoding was a third of an 8-GPU create. The app's
// reads and the monitors' snapshots decode a day of bookings (see
// PartitionsSince), each the same bytes as the time before too. A memo
// keeps each record's last decoding beside the bytes it came from. The
// bytes are the key, so a record rewritten by this process or any other is
// decoded afresh, and what it hands out is a copy that shares nothing.
var (
	partitionMemo = newMemo[uint64](clonePartition)
	inventoryMemo = newMemo[string](cloneInventory)
)

// memo keeps decodings in two generations: a full one becomes the older,
// and what is used from the older moves to the newer. What is used keeps
// its decoding, however many others a long scan passes by, where emptying
// a full memo lost the live bookings' to every read of a day's bookings.
type memo[K comparable, T any] struct {
	mu          sync.Mutex
	kept, older map[K]decoded[T] // by where the record is found: its id or key
	clone       func(T) T
}

type decoded[T any] struct {
	raw []byte
	v   T
}

func newMemo[K comparable, T any](clone func(T) T) *memo[K, T] {
	return &memo[K, T]{kept: map[K]decoded[T]{}, clone: clone}
}

// decode decodes the record found at k from data.
func (m *memo[K, T]) decode(k K, data []byte) (T, error) {
	m.mu.Lock()
	d, ok := m.kept[k]
	if !ok {
		if d, ok = m.older[k]; ok && bytes.Equal(d.raw, data) {
			m.keep(k, d)
		}
	}
	m.mu.Unlock()
	if ok && bytes.Equal(d.raw, data) {
		return m.clone(d.v), nil
	}
	var v T
	if err := Decode(data, &v); err != nil {
		var zero T
		return zero, err
	}
	m.mu.Lock()
	m.keep(k, decoded[T]{raw: bytes.Clone(data), v: m.clone(v)})
	m.mu.Unlock()
	return v, nil
}

// keep puts d in the newer generation, which becomes the older when full.
func (m *memo[K, T]) keep(k K, d decoded[T]) {
	if len(m.kept) >= memoSize {
		m.older, m.kept = m.kept, make(map[K]decoded[T], memoSize)
	}
	m.kept[k] = d
}

// clonePartition copies p and what it points to.
func clonePartition(p domain.Partition) domain.Partition {
	p.Devices = slices.Clone(p.Devices)
	p.DeviceUUIDs = slices.Clone(p.DeviceUUIDs)
	if p.Wrapper != nil {
		w := *p.Wrapper
		p.Wrapper = &w
	}
	return p
}

// cloneInventory copies inv and what it points to.
func cloneInventory(inv domain.Inventory) domain.Inventory {
	inv.Devices = slices.Clone(inv.Devices)
	inv.Topology = slices.Clone(inv.Topology)
	return inv
}
