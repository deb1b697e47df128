package storage

import (
	"bytes"
	"slices"
	"sync"

	"github.com/chronos-gpu/chronos/core/domain"
)

// memoSize bounds the decodings kept: a busy ledger's live bookings many
// times over, a few hundred KiB at most.
const memoSize = 4096

// partitionMemo keeps each partition record's last decoding beside the
// bytes it came from. Every admission decodes every live booking, and
// between two writes nearly all of them are the very bytes decoded the
// time before; JSON decoding was a third of an 8-GPU create. The bytes
// are the key, so a record rewritten by this process or any other is
// decoded afresh, and what it hands out is a copy that shares nothing.
var partitionMemo = memo{kept: map[uint64]decoded{}}

type memo struct {
	mu   sync.Mutex
	kept map[uint64]decoded // by id: where the same record's bytes are found
}

type decoded struct {
	raw []byte
	p   domain.Partition
}

// decodePartition decodes the record of partition id from data.
func (m *memo) decodePartition(id uint64, data []byte) (domain.Partition, error) {
	m.mu.Lock()
	d, ok := m.kept[id]
	m.mu.Unlock()
	if ok && bytes.Equal(d.raw, data) {
		return clonePartition(d.p), nil
	}
	var p domain.Partition
	if err := Decode(data, &p); err != nil {
		return domain.Partition{}, err
	}
	m.mu.Lock()
	if len(m.kept) >= memoSize {
		clear(m.kept)
	}
	m.kept[id] = decoded{raw: bytes.Clone(data), p: clonePartition(p)}
	m.mu.Unlock()
	return p, nil
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
