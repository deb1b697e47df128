package storage

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core/domain"
)

// The memo of decoded partitions is keyed by the record's bytes: a record
// rewritten under the same id reads as rewritten, and a caller changing
// what it was handed changes nothing another caller reads.
func TestPartitionMemoFollowsTheBytes(t *testing.T) {
	t.Parallel()
	m := newMemo[uint64](clonePartition)
	rec := func(p domain.Partition) []byte {
		b, err := json.Marshal(p)
		require.NoError(t, err)
		return b
	}
	first := domain.Partition{ID: 7, Devices: []int{0, 1}, SharePPM: 500_000, User: "alice",
		Wrapper: &domain.Wrapper{Process: domain.Process{PID: 42}}}
	got, err := m.decode(7, rec(first))
	require.NoError(t, err)
	require.Equal(t, []int{0, 1}, got.Devices)

	got.Devices[0], got.Wrapper.PID, got.User = 5, 1, "mallory"
	again, err := m.decode(7, rec(first))
	require.NoError(t, err)
	require.Equal(t, []int{0, 1}, again.Devices, "a copy handed out shares nothing with the memo")
	require.Equal(t, 42, again.Wrapper.PID)
	require.Equal(t, "alice", again.User)

	rewritten := first
	rewritten.Devices, rewritten.State = []int{2, 3}, domain.Released
	got, err = m.decode(7, rec(rewritten))
	require.NoError(t, err)
	require.Equal(t, []int{2, 3}, got.Devices)
	require.Equal(t, domain.Released, got.State)

	_, err = m.decode(7, []byte(`{"id":7,`))
	require.ErrorIs(t, err, ErrDamaged, "damaged bytes are never served from the memo")
}

// An inventory handed out by the memo is a copy too.
func TestInventoryMemoHandsOutCopies(t *testing.T) {
	t.Parallel()
	m := newMemo[string](cloneInventory)
	raw, err := json.Marshal(domain.Inventory{Backend: "nvml", Devices: []domain.Device{{Index: 0, UUID: "GPU-a"}},
		Topology: json.RawMessage(`{"n":1}`)})
	require.NoError(t, err)
	got, err := m.decode("inventory", raw)
	require.NoError(t, err)
	got.Devices[0].UUID, got.Topology[1] = "GPU-z", 'x'
	again, err := m.decode("inventory", raw)
	require.NoError(t, err)
	require.Equal(t, "GPU-a", again.Devices[0].UUID)
	require.JSONEq(t, `{"n":1}`, string(again.Topology))
}

// A memo full of other records keeps what is used: reading more records
// than a generation holds, as a day of bookings does, leaves the decodings
// read again meanwhile (the live bookings') in the memo, and it never holds
// more than two generations.
func TestMemoKeepsWhatIsUsed(t *testing.T) {
	t.Parallel()
	m := newMemo[uint64](clonePartition)
	rec := func(id uint64) []byte {
		b, err := json.Marshal(domain.Partition{ID: id, State: domain.Live})
		require.NoError(t, err)
		return b
	}
	hot := uint64(1)
	for id := uint64(1); id < 4*memoSize; id++ { // the last use, then a generation's worth of others
		_, err := m.decode(id, rec(id))
		require.NoError(t, err)
		if id%(memoSize/2) == 0 && id <= 3*memoSize {
			_, err := m.decode(hot, rec(hot)) // an admission between reads
			require.NoError(t, err)
		}
	}
	_, inKept := m.kept[hot]
	_, inOlder := m.older[hot]
	require.True(t, inKept || inOlder, "a decoding used all along was let go")
	require.LessOrEqual(t, len(m.kept)+len(m.older), 2*memoSize)
	_, cold := m.kept[2]
	_, coldOlder := m.older[2]
	require.False(t, cold || coldOlder, "a decoding used once, two generations ago, is still kept")
}
