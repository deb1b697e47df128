package storetest_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/storage"
	"github.com/chronos-gpu/chronos/storage/etcd/etcdtest"
	"github.com/chronos-gpu/chronos/storage/storetest"
)

func TestMain(m *testing.M) { etcdtest.Main(m) }

var errRollback = errors.New("roll back")

// Two buckets, one named as the other's prefix, and keys that end in and
// hold 0x00 and 0xff, since engines lay buckets and keys out as bytes.
var (
	buckets  = [][]byte{[]byte("b"), []byte("bb")}
	alphabet = []byte{0x00, 0x01, 'a', 0xff}
)

// randKey is a short key of letters, or a booking's or event's number
// (from below the first a sequence gives to above where it stands: an
// engine may read numbered buckets in windows of numbers), now and then
// with a tail.
func randKey(rng *rand.Rand) []byte {
	if rng.IntN(2) == 0 {
		k := storage.IDKey(uint64(rng.IntN(400)))
		if rng.IntN(8) == 0 {
			k = append(k, alphabet[rng.IntN(len(alphabet))])
		}
		return k
	}
	k := make([]byte, 1+rng.IntN(3))
	for i := range k {
		k[i] = alphabet[rng.IntN(len(alphabet))]
	}
	return k
}

// model is what a bucket should hold: key -> value, and the sequence.
type model struct {
	data map[string]map[string][]byte
	seq  map[string]uint64
}

func newModel() *model {
	return &model{data: map[string]map[string][]byte{}, seq: map[string]uint64{}}
}

func (m *model) clone() *model {
	c := newModel()
	for b, kv := range m.data {
		c.data[b] = map[string][]byte{}
		for k, v := range kv {
			c.data[b][k] = v
		}
	}
	for b, n := range m.seq {
		c.seq[b] = n
	}
	return c
}

// scan is what Scan should visit, in order.
func (m *model) scan(bucket, from []byte, reverse bool) [][2][]byte {
	var keys []string
	for k := range m.data[string(bucket)] {
		switch {
		case from == nil,
			!reverse && k >= string(from),
			reverse && k <= string(from):
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	if reverse {
		slices.Reverse(keys)
	}
	out := make([][2][]byte, 0, len(keys))
	for _, k := range keys {
		out = append(out, [2][]byte{[]byte(k), m.data[string(bucket)][k]})
	}
	return out
}

func scanAll(t *testing.T, raw storage.RawTx, bucket, from []byte, reverse bool, stop int) [][2][]byte {
	t.Helper()
	out := [][2][]byte{}
	err := raw.Scan(bucket, from, reverse, func(k, v []byte) (bool, error) {
		require.NotNil(t, v, "a stored value reads as empty, never as nil")
		out = append(out, [2][]byte{slices.Clone(k), slices.Clone(v)})
		return stop <= 0 || len(out) < stop, nil
	})
	require.NoError(t, err)
	return out
}

func requireScan(t *testing.T, want, got [][2][]byte, what string) {
	t.Helper()
	require.Equal(t, len(want), len(got), "%s: %d keys, want %d", what, len(got), len(want))
	for i := range want {
		require.True(t, bytes.Equal(want[i][0], got[i][0]) && bytes.Equal(want[i][1], got[i][1]),
			"%s: item %d is %x=%x, want %x=%x", what, i, got[i][0], got[i][1], want[i][0], want[i][1])
	}
}

// TestRawTxConformance drives each engine and a model with the same random
// transactions — puts, deletes, reads (one key, or many where the engine
// reads many at once), scans forward and back from any key, sequences —
// committed or rolled back, and requires the same answers
// inside each transaction (its own writes included) and after it.
func TestRawTxConformance(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, open storetest.Opener) {
		s := open()
		rng := rand.New(rand.NewPCG(1, 2))
		committed := newModel()
		// The small buckets too, which an engine may read whole: the model
		// starts with what they hold (the schema).
		buckets := append(slices.Clone(buckets), storage.SmallBuckets...)
		require.NoError(t, s.Update(context.Background(), func(tx *storage.Tx) error {
			for _, b := range storage.SmallBuckets {
				committed.data[string(b)] = map[string][]byte{}
				for _, kv := range scanAll(t, tx.Raw(), b, nil, false, 0) {
					committed.data[string(b)][string(kv[0])] = kv[1]
				}
			}
			return nil
		}))
		for round := range 60 {
			m := committed.clone()
			rollback := rng.IntN(4) == 0
			err := s.Update(context.Background(), func(tx *storage.Tx) error {
				m = committed.clone() // fn may run again
				raw := tx.Raw()
				require.True(t, raw.Writable())
				for op := range 1 + rng.IntN(25) {
					b := buckets[rng.IntN(len(buckets))]
					what := fmt.Sprintf("round %d op %d bucket %s", round, op, b)
					switch r := rng.IntN(10); {
					case r < 4:
						k, v := randKey(rng), []byte(fmt.Sprintf("v%d.%d", round, op))
						if rng.IntN(5) == 0 {
							v = []byte{}
						}
						require.NoError(t, raw.Put(b, k, v))
						if m.data[string(b)] == nil {
							m.data[string(b)] = map[string][]byte{}
						}
						m.data[string(b)][string(k)] = v
					case r < 6:
						k := randKey(rng)
						require.NoError(t, raw.Delete(b, k))
						delete(m.data[string(b)], string(k))
					case r < 7:
						keys := [][]byte{randKey(rng)}
						many, batch := raw.(storage.ManyGetter)
						if batch && rng.IntN(2) == 0 {
							for range rng.IntN(6) {
								keys = append(keys, randKey(rng))
							}
						}
						got := make([][]byte, len(keys))
						if len(keys) > 1 {
							var err error
							got, err = many.GetMany(b, keys)
							require.NoError(t, err)
						} else {
							var err error
							got[0], err = raw.Get(b, keys[0])
							require.NoError(t, err)
						}
						for i, k := range keys {
							want, ok := m.data[string(b)][string(k)]
							require.Equal(t, ok, got[i] != nil, "%s: Get %x present", what, k)
							require.True(t, bytes.Equal(want, got[i]), "%s: Get %x = %x, want %x", what, k, got[i], want)
						}
					case r < 9:
						var from []byte
						if rng.IntN(2) == 0 {
							from = randKey(rng)
						}
						reverse := rng.IntN(2) == 0
						stop := rng.IntN(4) // 0: to the end
						want := m.scan(b, from, reverse)
						if stop > 0 && len(want) > stop {
							want = want[:stop]
						}
						requireScan(t, want, scanAll(t, raw, b, from, reverse, stop), fmt.Sprintf("%s: scan from %x reverse %v", what, from, reverse))
						// Up to a bound (an engine may read no further).
						to := randKey(rng)
						want = slices.DeleteFunc(m.scan(b, from, false), func(kv [2][]byte) bool { return string(kv[0]) >= string(to) })
						got := [][2][]byte{}
						require.NoError(t, storage.ScanTo(raw, b, from, to, func(k, v []byte) (bool, error) {
							got = append(got, [2][]byte{slices.Clone(k), slices.Clone(v)})
							return true, nil
						}))
						requireScan(t, want, got, fmt.Sprintf("%s: scan from %x to %x", what, from, to))
					default:
						for range 1 + rng.IntN(40) {
							n, err := raw.NextSequence(b)
							require.NoError(t, err)
							m.seq[string(b)]++
							require.Equal(t, m.seq[string(b)], n, what)
						}
					}
				}
				if rollback {
					return errRollback
				}
				return nil
			})
			if rollback {
				require.ErrorIs(t, err, errRollback)
			} else {
				require.NoError(t, err)
				committed = m
			}
			// What a new reader sees is exactly what was committed.
			require.NoError(t, open().View(context.Background(), func(tx *storage.Tx) error {
				raw := tx.Raw()
				require.False(t, raw.Writable())
				require.Error(t, raw.Put(buckets[0], []byte("x"), []byte("y")), "a read-only transaction refuses writes")
				for _, b := range buckets {
					requireScan(t, committed.scan(b, nil, false), scanAll(t, raw, b, nil, false, 0), fmt.Sprintf("round %d: after, bucket %s", round, b))
					requireScan(t, committed.scan(b, nil, true), scanAll(t, raw, b, nil, true, 0), fmt.Sprintf("round %d: after, reverse, bucket %s", round, b))
				}
				return nil
			}))
		}
		// Sequences are never handed out twice, even for keys deleted since.
		require.NoError(t, s.Update(context.Background(), func(tx *storage.Tx) error {
			n, err := tx.Raw().NextSequence(buckets[0])
			require.Equal(t, committed.seq[string(buckets[0])]+1, n)
			return err
		}))
	})
}

// TestRawTxLongScans pages through more keys than one read returns, both
// ways, from keys that are and are not stored.
func TestRawTxLongScans(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, open storetest.Opener) {
		s := open()
		const n = 3000
		b := []byte("long")
		key := func(i int) []byte { return []byte(fmt.Sprintf("k%05d", i)) }
		// etcd takes at most 128 writes in one transaction by default.
		for start := 0; start < n; start += 200 {
			require.NoError(t, s.Update(context.Background(), func(tx *storage.Tx) error {
				for i := start; i < start+200; i += 2 {
					if err := tx.Raw().Put(b, key(i), key(i)); err != nil {
						return err
					}
				}
				return nil
			}))
		}
		require.ErrorIs(t, s.Update(context.Background(), func(tx *storage.Tx) error {
			raw := tx.Raw()
			// Odd keys only in this transaction's overlay (never
			// committed); every tenth stored key deleted in it.
			for i := 1; i < n; i += 2 {
				require.NoError(t, raw.Put(b, key(i), key(i)))
			}
			for i := 0; i < n; i += 10 {
				require.NoError(t, raw.Delete(b, key(i)))
			}
			want := func(from int, reverse bool) [][2][]byte {
				var out [][2][]byte
				for i := range n {
					j := i
					if reverse {
						j = n - 1 - i
					}
					if j%10 == 0 || (!reverse && j < from) || (reverse && j > from) {
						continue
					}
					out = append(out, [2][]byte{key(j), key(j)})
				}
				return out
			}
			requireScan(t, want(0, false), scanAll(t, raw, b, nil, false, 0), "forward")
			requireScan(t, want(n, true), scanAll(t, raw, b, nil, true, 0), "reverse")
			requireScan(t, want(1234, false), scanAll(t, raw, b, key(1234), false, 0), "forward from")
			requireScan(t, want(2345, true), scanAll(t, raw, b, key(2345), true, 0), "reverse from")
			return errRollback
		}), errRollback)
	})
}

// TestUpdatesAreSerializable has writers in parallel each add one to a
// counter, read and written in one transaction: no increment is lost.
func TestUpdatesAreSerializable(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, open storetest.Opener) {
		const writers, each = 8, 10
		b, k := []byte("counter"), []byte("n")
		var wg sync.WaitGroup
		errs := make(chan error, writers*each)
		for range writers {
			s := open()
			wg.Go(func() {
				for range each {
					errs <- s.Update(context.Background(), func(tx *storage.Tx) error {
						v, err := tx.Raw().Get(b, k)
						if err != nil {
							return err
						}
						n := 0
						if v != nil {
							_, _ = fmt.Sscan(string(v), &n)
						}
						return tx.Raw().Put(b, k, []byte(fmt.Sprint(n+1)))
					})
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
		require.NoError(t, open().View(context.Background(), func(tx *storage.Tx) error {
			v, err := tx.Raw().Get(b, k)
			require.Equal(t, fmt.Sprint(writers*each), string(v))
			return err
		}))
	})
}

// A numbered bucket full to its sequence (an engine may read it in windows
// of numbers; every window's edge holds a key), with keys that are not
// numbers among them: every scan, from anywhere, either way, up to a
// bound or not, visits what the model says, in order.
func TestNumberedBucketScans(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, open storetest.Opener) {
		s := open()
		b := buckets[0]
		m := newModel()
		m.data[string(b)] = map[string][]byte{}
		const top = 1500
		put := func(keys ...[]byte) func(tx *storage.Tx) error {
			return func(tx *storage.Tx) error {
				for _, k := range keys {
					v := []byte(fmt.Sprintf("v%x", k))
					require.NoError(t, tx.Raw().Put(b, k, v))
					m.data[string(b)][string(k)] = v
				}
				return nil
			}
		}
		require.NoError(t, s.Update(context.Background(), put([]byte{0x00}, []byte{'a'}, storage.IDKey(0), storage.IDKey(top+7),
			append(storage.IDKey(64), 'x'), append(storage.IDKey(320), 0x00))))
		for range top / 100 { // an etcd transaction holds 128 operations at most
			require.NoError(t, s.Update(context.Background(), func(tx *storage.Tx) error {
				var keys [][]byte
				for range 100 {
					n, err := tx.Raw().NextSequence(b)
					require.NoError(t, err)
					keys = append(keys, storage.IDKey(n))
				}
				return put(keys...)(tx)
			}))
		}
		require.NoError(t, s.View(context.Background(), func(tx *storage.Tx) error {
			raw := tx.Raw()
			for _, from := range [][]byte{nil, {0x00}, storage.IDKey(1), storage.IDKey(63), storage.IDKey(64), append(storage.IDKey(64), 'x'), storage.IDKey(700), storage.IDKey(top), storage.IDKey(top + 100), {'a'}} {
				for _, reverse := range []bool{false, true} {
					requireScan(t, m.scan(b, from, reverse), scanAll(t, raw, b, from, reverse, 0), fmt.Sprintf("scan from %x reverse %v", from, reverse))
				}
				to := storage.IDKey(1000)
				want := slices.DeleteFunc(m.scan(b, from, false), func(kv [2][]byte) bool { return string(kv[0]) >= string(to) })
				got := [][2][]byte{}
				require.NoError(t, storage.ScanTo(raw, b, from, to, func(k, v []byte) (bool, error) {
					got = append(got, [2][]byte{slices.Clone(k), slices.Clone(v)})
					return true, nil
				}))
				requireScan(t, want, got, fmt.Sprintf("scan from %x to %x", from, to))
			}
			return nil
		}))
	})
}
