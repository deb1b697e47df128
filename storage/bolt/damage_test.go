package bolt

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.etcd.io/bbolt"

	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/storage"
)

// withBackup is a ledger of n bookings and a backup of it as it stands.
func withBackup(t *testing.T, n int) *Ledger {
	t.Helper()
	l := New(filepath.Join(t.TempDir(), "chronos.db"))
	l.BackupEvery = -1
	for range n {
		addOne(t, l)
	}
	l.BackupEvery = time.Nanosecond
	addOne(t, l) // writes the backup
	l.BackupEvery = -1
	return l
}

// A member can cut the backup short (it is group-writable); bbolt's check
// of it used to fault in the goroutine the check starts, which no recover
// catches, and the doctor died. Now the doctor says the backup is damaged.
func TestDoctorSurvivesTruncatedBackup(t *testing.T) {
	t.Parallel()
	s := newShared(t)
	l := s.ledger(t)
	require.NoError(t, l.Update(context.Background(), func(tx *storage.Tx) error {
		for i := range 100 {
			if err := tx.AddEvent(domain.Event{Kind: domain.EventCreated, Detail: strings.Repeat("x", i*5)}); err != nil {
				return err
			}
		}
		return nil
	}))
	st, err := os.Stat(storage.BackupPath(l.Path))
	require.NoError(t, err)
	require.Greater(t, st.Size(), int64(12288))
	out, err := s.member(t, `truncate -s 12288 chronos.db.backup`)
	require.NoError(t, err, out)

	d, err := l.Diagnose()
	require.NoError(t, err)
	require.True(t, d.Healthy, "%v", d.Problems)
	require.Contains(t, d.Backup, "cut short")
	require.True(t, d.BackupDamaged)
	problems, err := l.Check()
	require.NoError(t, err)
	require.Empty(t, problems)
	_, err = (&Ledger{Path: storage.BackupPath(l.Path)}).Check()
	require.NoError(t, err)
}

// An empty ledger beside a backup that holds bookings has lost them: the
// doctor says so, nothing writes a fresh ledger over the loss (which would
// hand out the same ids again), and a repair brings them back.
func TestEmptyLedgerBesideItsBackupIsDamage(t *testing.T) {
	t.Parallel()
	for name, lose := range map[string]func(path string) error{
		"emptied": func(p string) error { return os.Truncate(p, 0) },
		"removed": os.Remove,
	} {
		t.Run(name, func(t *testing.T) {
			l := withBackup(t, 4)
			require.NoError(t, lose(l.Path))

			d, err := l.Diagnose()
			require.NoError(t, err)
			require.False(t, d.Healthy)
			require.Contains(t, strings.Join(d.Problems, "\n"), "the backup "+storage.BackupPath(l.Path)+" is newer than the ledger")
			for _, err := range []error{l.Update(context.Background(), func(*storage.Tx) error { return nil }), l.View(context.Background(), func(*storage.Tx) error { return nil })} {
				require.ErrorIs(t, err, storage.ErrDamaged)
				require.ErrorContains(t, err, "chronos doctor --repair")
			}

			r, err := l.Repair()
			require.NoError(t, err)
			require.True(t, r.After.Healthy, "%v", r.After.Problems)
			require.Equal(t, 5, r.Partitions)
			require.Equal(t, uint64(6), addOne(t, l).ID, "ids go on from where they were")
		})
	}
}

// One flipped byte in the newest meta page makes bbolt read the file as it
// was before its last commit: that commit's booking would vanish and its id
// be handed out again. The doctor names the damaged page, writers refuse to
// carry on from the older state, and a repair keeps the lost booking, found
// in the file's bytes.
func TestDamagedNewestMetaPage(t *testing.T) {
	t.Parallel()
	l := withBackup(t, 3)
	last := addOne(t, l) // after the backup
	data, err := os.ReadFile(l.Path)
	require.NoError(t, err)
	pageSize, m, valid := metas(data)
	require.Equal(t, [2]bool{true, true}, valid)
	newest := 0
	if m[1].txid > m[0].txid {
		newest = 1
	}
	data[newest*pageSize+pageHeader+20] ^= 0x01 // in the root bucket's page id
	require.NoError(t, os.WriteFile(l.Path, data, 0o600))

	d, err := l.Diagnose()
	require.NoError(t, err)
	require.False(t, d.Healthy)
	require.Contains(t, strings.Join(d.Problems, "\n"), "meta page")
	err = l.Update(context.Background(), func(*storage.Tx) error { return nil })
	require.ErrorIs(t, err, storage.ErrDamaged)
	require.ErrorContains(t, err, "chronos doctor")
	// A reader still reads the older state, and is warned that it is older.
	var warned []string
	l.Warn = func(msg string) { warned = append(warned, msg) }
	require.NoError(t, l.View(context.Background(), func(tx *storage.Tx) error {
		_, err := tx.Partition(last.ID)
		require.ErrorIs(t, err, storage.ErrNotFound)
		return nil
	}))
	require.Equal(t, []string{fmt.Sprintf("the ledger's newest write may be missing: meta page %d of %s is damaged; run `chronos doctor`", newest, l.Path)}, warned)

	r, err := l.Repair()
	require.NoError(t, err)
	require.True(t, r.After.Healthy, "%v", r.After.Problems)
	require.NoError(t, l.View(context.Background(), func(tx *storage.Tx) error {
		p, err := tx.Partition(last.ID)
		require.NoError(t, err, "the last commit's booking was lost")
		require.Equal(t, domain.Live, p.State)
		return nil
	}))
	require.Greater(t, addOne(t, l).ID, last.ID, "an id was handed out twice")
	warned = nil
	require.NoError(t, l.View(context.Background(), func(*storage.Tx) error { return nil }))
	require.Empty(t, warned, "a repaired ledger reads without a warning")
}

var baseImage = sync.OnceValues(func() ([]byte, []byte) {
	dir, err := os.MkdirTemp("", "chronos-damage-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	l := New(filepath.Join(dir, "chronos.db"))
	l.BackupEvery = -1
	now := time.Now()
	for i := range 120 {
		p := domain.Partition{Device: i % 4, SharePPM: 1000, User: strings.Repeat("u", 40), State: domain.Live, Created: now, Expires: now.Add(time.Hour)}
		if err := l.Update(context.Background(), func(tx *storage.Tx) error {
			if err := tx.PutPartition(&p); err != nil {
				return err
			}
			if i == 60 {
				l.BackupEvery = time.Nanosecond
			}
			return tx.AddEvent(domain.Event{Kind: domain.EventCreated, Partition: p.ID, Detail: strings.Repeat("d", i)})
		}); err != nil {
			panic(err)
		}
		l.BackupEvery = -1
	}
	ledger, _ := os.ReadFile(l.Path)
	backup, _ := os.ReadFile(storage.BackupPath(l.Path))
	return ledger, backup
})

// damage changes data the ways files get damaged: bit flips, a cut, zeroed
// pages, damage to the meta pages, and wild page numbers.
func damage(data []byte, kind uint8, at uint32, n uint16, val byte) []byte {
	data = append([]byte(nil), data...)
	if len(data) == 0 {
		return data
	}
	pos := int(at) % len(data)
	switch kind % 5 {
	case 0: // bit flips
		for i := range int(n%64) + 1 {
			data[(pos+i*int(val)+i)%len(data)] ^= 1 << (i % 8)
		}
	case 1: // cut short
		return data[:pos]
	case 2: // zeroed pages
		start := pos / 4096 * 4096
		clear(data[start:min(len(data), start+4096*(int(n%3)+1))])
	case 3: // the meta pages
		data[(pos%2)*4096+16+int(n)%64] ^= max(val, 1)
	case 4: // a page number pointing anywhere
		if pos+8 <= len(data) {
			binary.LittleEndian.PutUint64(data[pos:], uint64(n)<<uint(val%40))
		}
	}
	return data
}

// doctorAndRepair runs the doctor and a repair on a damaged ledger and
// backup: neither may crash, a repair gives a ledger that passes every
// check, and no id counter goes below the good backup's.
func doctorAndRepair(t *testing.T, ledger, backup []byte) {
	l := New(filepath.Join(t.TempDir(), "chronos.db"))
	l.BackupEvery = -1
	require.NoError(t, os.WriteFile(l.Path, ledger, 0o600))
	require.NoError(t, os.WriteFile(storage.BackupPath(l.Path), backup, 0o600))
	d, err := l.Diagnose()
	require.NoError(t, err)
	if !d.Healthy && len(d.Problems) == 0 {
		t.Fatal("unhealthy with no problem named")
	}
	_ = l.View(context.Background(), func(tx *storage.Tx) error { _, err := tx.Partitions(); return err })
	r, err := l.Repair()
	require.NoError(t, err)
	if !r.Done {
		require.True(t, d.Healthy)
		return
	}
	require.True(t, r.After.Healthy, "%v", r.After.Problems)
	problems, err := l.Check()
	require.NoError(t, err)
	require.Empty(t, problems)
	_, good := baseImage()
	_, okBackup := checkPages(backup)
	if okBackup && string(backup) == string(good) {
		var got storage.Counters
		require.NoError(t, viewImage(bytesOfFile(t, l.Path), func(btx *bbolt.Tx) error { got = countersOf(btx); return nil }))
		require.GreaterOrEqual(t, got.Parts, uint64(61))
	}
}

func bytesOfFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return b
}

// Random damage, the kind that used to crash about one doctor or repair in
// ten: none may now.
func TestDoctorSurvivesRandomDamage(t *testing.T) {
	t.Parallel()
	ledger, backup := baseImage()
	rng := rand.New(rand.NewPCG(9, 9))
	for i := range 100 {
		kind, at, n, val := uint8(rng.IntN(5)), rng.Uint32(), uint16(rng.IntN(1<<16)), byte(rng.IntN(256))
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			t.Parallel()
			if i%3 == 0 {
				doctorAndRepair(t, ledger, damage(backup, kind, at, n, val))
			} else {
				doctorAndRepair(t, damage(ledger, kind, at, n, val), backup)
			}
		})
	}
}

// FuzzDoctorAndRepair damages a ledger or its backup and runs the doctor
// and a repair on them (make fuzz).
func FuzzDoctorAndRepair(f *testing.F) {
	f.Add(false, uint8(0), uint32(5000), uint16(7), byte(3))
	f.Add(true, uint8(1), uint32(12288), uint16(0), byte(0))
	f.Add(false, uint8(2), uint32(8192), uint16(1), byte(0))
	f.Add(false, uint8(3), uint32(1), uint16(20), byte(1))
	f.Add(false, uint8(4), uint32(4096*3+16), uint16(999), byte(30))
	f.Fuzz(func(t *testing.T, inBackup bool, kind uint8, at uint32, n uint16, val byte) {
		ledger, backup := baseImage()
		if inBackup {
			backup = damage(backup, kind, at, n, val)
		} else {
			ledger = damage(ledger, kind, at, n, val)
		}
		doctorAndRepair(t, ledger, backup)
	})
}
