package bolt

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.etcd.io/bbolt"
	"golang.org/x/sys/unix"

	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/storage"
)

// ledgerWith makes a ledger of n bookings, every third released, with a
// policy and an inventory, and returns the bookings as stored.
func ledgerWith(t *testing.T, n int) (*Ledger, []domain.Partition) {
	t.Helper()
	l := newLedger(t)
	l.BackupEvery = -1 // tests that want a backup make one
	var parts []domain.Partition
	require.NoError(t, l.Update(context.Background(), func(tx *storage.Tx) error {
		if err := tx.PutPolicy(domain.Policy{Expiry: "terminate", OverBudget: "warn", Unbooked: "warn", MaxLength: time.Hour}); err != nil {
			return err
		}
		return tx.PutInventory(domain.Inventory{Backend: "simulated", Devices: []domain.Device{{Index: 0, MemoryTotal: 1 << 30}}})
	}))
	now := time.Now()
	for i := range n {
		p := domain.Partition{Device: i % 4, SharePPM: 1000, User: strings.Repeat("u", 40), State: domain.Live,
			Created: now, Expires: now.Add(time.Hour + time.Duration(i)*time.Second)}
		require.NoError(t, l.Update(context.Background(), func(tx *storage.Tx) error {
			if err := tx.PutPartition(&p); err != nil {
				return err
			}
			if err := tx.AddEvent(domain.Event{Kind: "created", Partition: p.ID}); err != nil {
				return err
			}
			if i%3 == 2 {
				p.State, p.Ended = domain.Released, now
				if err := tx.PutPartition(&p); err != nil {
					return err
				}
				return tx.AddEvent(domain.Event{Kind: "released", Partition: p.ID})
			}
			return nil
		}))
		parts = append(parts, p)
	}
	return l, parts
}

func TestDiagnoseHealthyLedger(t *testing.T) {
	t.Parallel()
	l, parts := ledgerWith(t, 30)
	d, err := l.Diagnose()
	require.NoError(t, err)
	require.True(t, d.Healthy, "%v", d.Problems)
	require.Equal(t, len(parts), d.Partitions)
	require.Equal(t, 20, d.Live)
	require.Equal(t, 40, d.Events)
	require.Equal(t, storage.SchemaVersion, d.Schema)

	missing := New(filepath.Join(t.TempDir(), "none.db"))
	d, err = missing.Diagnose()
	require.NoError(t, err)
	require.True(t, d.Healthy)
	require.False(t, d.Exists)
}

// Damage bbolt cannot see — records that disagree with each other — is
// named in plain words, and repaired.
func TestDiagnoseFindsInconsistentRecords(t *testing.T) {
	t.Parallel()
	l, _ := ledgerWith(t, 10)
	db, err := bbolt.Open(l.Path, 0o600, nil)
	require.NoError(t, err)
	require.NoError(t, db.Update(func(tx *bbolt.Tx) error {
		live, parts, events := tx.Bucket(storage.BucketLive), tx.Bucket(storage.BucketPartitions), tx.Bucket(storage.BucketEvents)
		require.NoError(t, live.Delete(storage.IDKey(1)))            // live, but not indexed
		require.NoError(t, live.Put(storage.IDKey(3), nil))          // released, but indexed
		require.NoError(t, parts.Put(storage.IDKey(4), []byte("{"))) // does not decode
		require.NoError(t, events.Delete(storage.IDKey(7)))          // a created event lost (partition 6's)
		return parts.SetSequence(2)                                  // counter behind the ids
	}))
	require.NoError(t, db.Close())

	d, err := l.Diagnose()
	require.NoError(t, err)
	require.False(t, d.Healthy)
	all := strings.Join(d.Problems, "\n")
	for _, want := range []string{
		"partition 1 is live but missing from the live index",
		"the live index lists partition 3, which is released",
		"partition 4 does not decode",
		"partition 6 has no created event",
		"id counter (2) is behind the highest id (10)",
	} {
		require.Contains(t, all, want)
	}

	r, err := l.Repair()
	require.NoError(t, err)
	require.True(t, r.Done)
	require.True(t, r.After.Healthy, "%v", r.After.Problems)
	require.FileExists(t, r.SavedAs)
	// Partition 4's record was unreadable where the tree points; an older
	// copy of it, on a page bbolt had freed, is found by its bytes.
	require.Equal(t, 10, r.Partitions)
	require.Contains(t, strings.Join(r.Sources, "\n"), "found in the file's bytes")
	require.NoError(t, l.View(context.Background(), func(tx *storage.Tx) error {
		live, err := tx.LivePartitions()
		require.NoError(t, err)
		var ids []uint64
		for _, p := range live {
			ids = append(ids, p.ID)
		}
		require.Equal(t, []uint64{1, 2, 4, 5, 7, 8, 10}, ids)
		evs, err := tx.Events(0, 0)
		require.NoError(t, err)
		require.Equal(t, domain.EventRepaired, evs[len(evs)-1].Kind)
		return nil
	}))
	require.NoError(t, l.Update(context.Background(), func(tx *storage.Tx) error {
		p := domain.Partition{State: domain.Live, SharePPM: 1, Created: time.Now(), Expires: time.Now().Add(time.Hour)}
		require.NoError(t, tx.PutPartition(&p))
		require.Equal(t, uint64(11), p.ID, "ids are not reused after a repair")
		return nil
	}))
}

// Damaged files: the doctor names the damage and never panics; a repair
// gives a file that passes bbolt's check and keeps every live booking whose
// record could still be read.
func TestRepairDamagedFiles(t *testing.T) {
	t.Parallel()
	good, parts := ledgerWith(t, 400)
	goodBytes, err := os.ReadFile(good.Path)
	require.NoError(t, err)
	flip := func(b []byte, at, n int) []byte {
		b = bytes.Clone(b)
		for i := at; i < at+n && i < len(b); i++ {
			b[i] ^= 0xa5
		}
		return b
	}
	page := os.Getpagesize()
	// A flip is damage only on a page the tree uses: bytes of a page bbolt
	// freed are nobody's (and which pages are free differs from run to
	// run), so the single-page cases flip the first leaf in use from the
	// middle of the file on.
	middle := usedLeaf(t, good.Path, len(goodBytes)/2/page) * page
	for name, content := range map[string][]byte{
		"flipped bytes in a data page":     flip(goodBytes, middle+600, 300),
		"flipped page headers":             flip(flip(goodBytes, middle, 16), 3*page, 16),
		"flipped bytes in many data pages": flip(flip(flip(goodBytes, 2*page+900, 200), middle+100, 100), len(goodBytes)-page+50, 500),
		"truncated":                        goodBytes[:len(goodBytes)/2],
		"both meta pages":                  flip(flip(goodBytes, 16, 64), page+16, 64),
		"garbage":                          bytes.Repeat([]byte("chronos? "), 4000),
	} {
		t.Run(name, func(t *testing.T) {
			l := New(filepath.Join(t.TempDir(), "chronos.db"))
			require.NoError(t, os.WriteFile(l.Path, content, 0o600))
			d, err := l.Diagnose()
			require.NoError(t, err)
			require.False(t, d.Healthy, "damage not found")
			require.NotEmpty(t, d.Problems)

			r, err := l.Repair()
			if name == "garbage" { // no bbolt header, no bucket, no backup
				require.ErrorIs(t, err, ErrNotLedger)
				require.Equal(t, content, bytesOfFile(t, l.Path), "a refusal touches nothing")
				r, err = l.RepairAnyway()
			}
			require.NoError(t, err)
			require.True(t, r.Done)
			saved, err := os.ReadFile(r.SavedAs)
			require.NoError(t, err)
			require.Equal(t, content, saved, "the damaged file is kept as it was")
			problems, err := l.Check()
			require.NoError(t, err)
			require.Empty(t, problems)
			require.True(t, r.After.Healthy, "%v", r.After.Problems)

			got := map[uint64]domain.Partition{}
			require.NoError(t, l.View(context.Background(), func(tx *storage.Tx) error {
				ps, err := tx.Partitions()
				for _, p := range ps {
					got[p.ID] = p
				}
				return err
			}))
			// Every live booking whose stored record is still whole in the
			// damaged bytes was kept, as it was.
			kept := 0
			for _, p := range parts {
				if p.State != domain.Live {
					continue
				}
				p.V = storage.SchemaVersion
				rec, err := json.Marshal(p)
				require.NoError(t, err)
				if !bytes.Contains(content, rec) {
					continue
				}
				kept++
				_, ok := got[p.ID]
				require.True(t, ok, "readable live booking %d lost", p.ID)
				require.True(t, got[p.ID].Expires.Equal(p.Expires))
				require.Equal(t, domain.Live, got[p.ID].State)
			}
			for id, p := range got {
				require.Equal(t, id, p.ID)
			}
			t.Logf("%s: kept %d of %d bookings (%d readable live ones); sources %v; lost %v", name, len(got), len(parts), kept, r.Sources, r.Lost)
		})
	}
}

// A file that cannot be opened at all is rebuilt from a good backup, and
// the repair says so.
func TestRepairRestoresFromBackup(t *testing.T) {
	t.Parallel()
	l, parts := ledgerWith(t, 50)
	l.BackupEvery = time.Nanosecond
	addOne(t, l) // this update writes the backup
	require.FileExists(t, storage.BackupPath(l.Path))
	l.BackupEvery = -1
	addOne(t, l) // one more after the backup: lost with the file
	require.NoError(t, os.WriteFile(l.Path, bytes.Repeat([]byte{0xff}, 64<<10), 0o600))

	d, err := l.Diagnose()
	require.NoError(t, err)
	require.False(t, d.Healthy)
	require.Contains(t, d.Backup, storage.BackupPath(l.Path))

	r, err := l.Repair()
	require.NoError(t, err)
	require.True(t, r.After.Healthy, "%v", r.After.Problems)
	require.Contains(t, strings.Join(r.Sources, "\n"), "restored from the backup")
	require.Equal(t, len(parts)+1, r.Partitions)
	require.NoError(t, l.View(context.Background(), func(tx *storage.Tx) error {
		for _, p := range parts {
			got, err := tx.Partition(p.ID)
			require.NoError(t, err)
			require.Equal(t, p.State, got.State)
		}
		return nil
	}))
}

// A FIFO, a directory or a link to /dev/null at the ledger's path is named
// as damage at once — opening a FIFO must never block — and a repair moves
// it aside and starts again from the backup.
func TestNotARegularFile(t *testing.T) {
	t.Parallel()
	for name, create := range map[string]func(path string) error{
		"fifo":      func(p string) error { return mkfifo(p) },
		"directory": func(p string) error { return os.Mkdir(p, 0o700) },
		"dev null":  func(p string) error { return os.Symlink("/dev/null", p) },
	} {
		t.Run(name, func(t *testing.T) {
			l, parts := ledgerWith(t, 5)
			l.BackupEvery = time.Nanosecond
			addOne(t, l)
			require.NoError(t, os.Rename(l.Path, l.Path+".old"))
			require.NoError(t, create(l.Path))
			l.Timeout = 200 * time.Millisecond

			done := make(chan struct{})
			go func() {
				defer close(done)
				require.ErrorIs(t, l.View(context.Background(), func(*storage.Tx) error { return nil }), storage.ErrDamaged)
				require.ErrorIs(t, l.Update(context.Background(), func(*storage.Tx) error { return nil }), storage.ErrDamaged)
				d, err := l.Diagnose()
				require.NoError(t, err)
				require.False(t, d.Healthy)
				require.Contains(t, d.Problems[0], "not a regular file")
			}()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				t.Fatal("opening it hung")
			}
			r, err := l.Repair()
			require.NoError(t, err)
			require.True(t, r.After.Healthy, "%v", r.After.Problems)
			require.Equal(t, len(parts)+1, r.Partitions)
			_, err = os.Lstat(r.SavedAs)
			require.NoError(t, err, "moved aside")
		})
	}
}

func mkfifo(path string) error { return unix.Mkfifo(path, 0o600) }

// A file that never was a chronos ledger — somebody's text, random bytes, a
// directory — is not replaced by a repair unless asked to be; what once was
// one, however damaged, is repaired.
func TestRepairRefusesWhatNeverWasALedger(t *testing.T) {
	t.Parallel()
	random := make([]byte, 20000)
	for i := range random {
		random[i] = byte(i*7919 + i/3)
	}
	for name, content := range map[string][]byte{
		"passwd": []byte("root:x:0:0:root:/root:/bin/bash\ndaemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n"),
		"random": random,
		"zeros":  make([]byte, 32<<10),
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			l := New(filepath.Join(dir, "passwd"))
			require.NoError(t, os.WriteFile(l.Path, content, 0o644))
			_, err := l.Repair()
			require.ErrorIs(t, err, ErrNotLedger)
			require.ErrorContains(t, err, "--force")
			require.Equal(t, content, bytesOfFile(t, l.Path))
			entries, err := os.ReadDir(dir)
			require.NoError(t, err)
			require.Len(t, entries, 1, "nothing was written beside it")

			r, err := l.RepairAnyway()
			require.NoError(t, err)
			require.True(t, r.Done)
			require.True(t, r.After.Healthy)
			require.Equal(t, content, bytesOfFile(t, r.SavedAs))
		})
	}
	t.Run("directory", func(t *testing.T) {
		l := New(filepath.Join(t.TempDir(), "etc"))
		require.NoError(t, os.Mkdir(l.Path, 0o755))
		_, err := l.Repair()
		require.ErrorIs(t, err, ErrNotLedger)
		require.DirExists(t, l.Path)
	})

	// A ledger whose both meta pages are gone still names its buckets; one
	// zeroed whole still has its backup.
	good, _ := ledgerWith(t, 20)
	b := bytesOfFile(t, good.Path)
	page := os.Getpagesize()
	for i := range 64 {
		b[pageHeader+i], b[page+pageHeader+i] = 0, 0
	}
	require.NoError(t, os.WriteFile(good.Path, b, 0o600))
	require.NoFileExists(t, storage.BackupPath(good.Path))
	r, err := good.Repair()
	require.NoError(t, err)
	require.True(t, r.Done)
	good.BackupEvery = time.Nanosecond
	addOne(t, good)
	require.FileExists(t, storage.BackupPath(good.Path))
	require.NoError(t, os.WriteFile(good.Path, make([]byte, 32<<10), 0o600))
	r, err = good.Repair()
	require.NoError(t, err)
	require.True(t, r.Done)
}

// usedLeaf is the id of the first leaf page at or after page from that the
// ledger's tree uses (not a freed one).
func usedLeaf(t *testing.T, path string, from int) int {
	t.Helper()
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true, PreLoadFreelist: true})
	require.NoError(t, err)
	defer db.Close()
	leaf := -1
	require.NoError(t, db.View(func(tx *bbolt.Tx) error {
		for id := from; leaf < 0; id++ {
			info, err := tx.Page(id)
			if err != nil || info == nil {
				return err
			}
			if info.Type == "leaf" {
				leaf = id
			}
		}
		return nil
	}))
	require.GreaterOrEqual(t, leaf, 0, "no leaf in use from page %d on", from)
	return leaf
}

// A file that names the buckets every ledger has reads as a ledger, though
// it was last written before the later buckets (the line's, accounting's)
// existed; one that lacks any of those does not.
func TestWasLedgerNeedsOnlyTheFirstBuckets(t *testing.T) {
	t.Parallel()
	var old []byte
	for _, name := range storage.RequiredBuckets() {
		old = append(append(old, name...), 0)
	}
	require.True(t, wasLedger(old))
	require.False(t, wasLedger(old[len(storage.RequiredBuckets()[0])+1:]), "without %s", storage.RequiredBuckets()[0])
}

// A repair keeps what has no record-by-record check — the waiting line,
// fair-share usage, held intervals — as it was, with its Counters (a
// request's id is not handed out again): here from the rolling backup,
// since the file's own tree cannot be read.
func TestRepairKeepsTheLineAndUsage(t *testing.T) {
	t.Parallel()
	l, _ := ledgerWith(t, 3)
	now := time.Now()
	l.BackupEvery = time.Nanosecond // the next writes refresh the backup
	require.NoError(t, l.Update(context.Background(), func(tx *storage.Tx) error {
		r := domain.Request{Device: 0, SharePPM: 500_000, Duration: time.Hour, UID: 65534, User: "nobody", Created: now, State: domain.Waiting}
		if err := tx.PutRequest(&r); err != nil {
			return err
		}
		if err := tx.PutUserUsage(domain.UserUsage{UID: 65534, User: "nobody", GPUSeconds: 3600, At: now}); err != nil {
			return err
		}
		return tx.AddHeld(65534, domain.Held{Partition: 1, Start: now.Add(-time.Hour), End: now, SharePPM: 1000})
	}))
	require.NoError(t, l.Update(context.Background(), func(tx *storage.Tx) error { return tx.AddEvent(domain.Event{Kind: domain.EventPolicy}) }))
	l.BackupEvery = -1
	good, err := os.ReadFile(l.Path)
	require.NoError(t, err)
	page := os.Getpagesize()
	for _, at := range []int{16, page + 16} { // both meta pages
		for i := at; i < at+64; i++ {
			good[i] ^= 0xa5
		}
	}
	require.NoError(t, os.WriteFile(l.Path, good, 0o600))
	r, err := l.Repair()
	require.NoError(t, err)
	require.True(t, r.After.Healthy, "%v", r.After.Problems)
	require.NoError(t, l.Update(context.Background(), func(tx *storage.Tx) error {
		waiting, err := tx.WaitingRequests()
		require.NoError(t, err)
		require.Len(t, waiting, 1)
		u, ok, err := tx.UserUsage(65534)
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, 3600.0, u.GPUSeconds)
		held, err := tx.HeldSince(65534, now.Add(-2*time.Hour))
		require.NoError(t, err)
		require.Len(t, held, 1)
		next := domain.Request{Device: 0, SharePPM: 1, Duration: time.Minute, Created: now, State: domain.Waiting}
		require.NoError(t, tx.PutRequest(&next))
		require.Equal(t, waiting[0].ID+1, next.ID, "request ids are not reused")
		return nil
	}))
}

// A guarded ledger stays guarded through a repair: the mark is read from
// the damaged file, or from the backup when the file lost it.
func TestRepairKeepsTheGuard(t *testing.T) {
	t.Parallel()
	for _, fromBackup := range []bool{false, true} {
		l, _ := ledgerWith(t, 3)
		l.BackupEvery = time.Nanosecond // the next write refreshes the backup
		guard := storage.Guard{Group: "gpu", GID: 1234}
		require.NoError(t, l.Update(context.Background(), func(tx *storage.Tx) error { return tx.PutGuard(guard) }))
		require.NoError(t, l.Update(context.Background(), func(tx *storage.Tx) error { return tx.AddEvent(domain.Event{Kind: domain.EventPolicy}) }))
		l.BackupEvery = -1
		good, err := os.ReadFile(l.Path)
		require.NoError(t, err)
		if fromBackup {
			good = good[:len(good)/2] // the guard's page likely gone with the rest: the backup has it
		} else {
			page := os.Getpagesize()
			for _, at := range []int{16, page + 16} { // both meta pages
				for i := at; i < at+64; i++ {
					good[i] ^= 0xa5
				}
			}
		}
		require.NoError(t, os.WriteFile(l.Path, good, 0o600))
		r, err := l.Repair()
		require.NoError(t, err)
		require.True(t, r.Done)
		require.True(t, r.After.Healthy, "%v", r.After.Problems)
		require.NoError(t, l.View(context.Background(), func(tx *storage.Tx) error {
			g, ok, err := tx.Guard()
			require.NoError(t, err)
			require.True(t, ok, "still guarded (from the backup: %v)", fromBackup)
			require.Equal(t, guard, g)
			return nil
		}))
	}
}
