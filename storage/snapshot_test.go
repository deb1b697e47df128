package storage

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Whatever bytes arrive as a snapshot, decoding them never panics nor
// allocates beyond them; what decodes encodes to a snapshot that decodes
// the same.
func FuzzDecodeSnapshot(f *testing.F) {
	good, _, err := (&Snapshot{
		Buckets:   map[string][]Pair{"meta": {{K: []byte("guard"), V: []byte(`{"group":"gpu"}`)}}, "events": {{K: []byte{0, 1}, V: []byte{}}, {K: []byte{0, 2}, V: []byte("x")}}},
		Sequences: map[string]uint64{"events": 2},
	}).Encode()
	require.NoError(f, err)
	f.Add(good)
	f.Add([]byte{})
	f.Add([]byte{1, 4, 'm', 'e', 't', 'a', 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Add(good[:len(good)-3])
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := DecodeSnapshot(data)
		if err != nil {
			require.ErrorIs(t, err, ErrDamaged)
			return
		}
		again, _, err := s.Encode()
		require.NoError(t, err)
		back, err := DecodeSnapshot(again)
		require.NoError(t, err)
		require.Equal(t, len(s.Buckets), len(back.Buckets))
		for b, pairs := range s.Buckets {
			require.Equal(t, len(pairs), len(back.Buckets[b]))
		}
		require.Equal(t, s.Sequences, back.Sequences)
	})
}
