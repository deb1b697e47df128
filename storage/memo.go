package storage

import (
	"bytes"
	"slices"
	"sync"

	"github.com/chronos-gpu/chronos/core/domain"
)

// memoSize bounds the decodings a memo keeps: a busy ledger's live
// bookings many times over, a few hundred KiB at most.
const memoSize = 4096

// Every admission decodes every live booking and the host's inventory,
// and between two writes nearly all of them are the very bytes decoded the
// time before: JSON decoding was a third of an 8-GPU create. A memo keeps
// each record's last decoding beside the bytes it came from. The bytes are
// the key, so a record rewritten by this process or any other is decoded
// afresh, and what it hands out is a copy that shares nothing.
var (
	partitionMemo = newMemo[uint64](clonePartition)
	inventoryMemo = newMemo[string](cloneInventory)
)

type memo[K comparable, T any] struct {
	mu    sync.Mutex
	kept  map[K]decoded[T] // by where the record is found: its id or key
	clone func(T) T
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
	if len(m.kept) >= memoSize {
		clear(m.kept)
	}
	m.kept[k] = decoded[T]{raw: bytes.Clone(data), v: m.clone(v)}
	m.mu.Unlock()
	return v, nil
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
