package bolt

import (
	"errors"
	"fmt"
	"io/fs"
	"runtime/debug"
	"slices"
	"time"

	"go.etcd.io/bbolt"

	"github.com/chronos-gpu/chronos/core/clock"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/storage"
)

// Diagnose checks the ledger: that it opens, passes bbolt's consistency
// check, has a schema this chronos reads, that every record decodes and
// agrees with its key, that the live index lists exactly the partitions
// stored as live, that every partition has its "created" event, that the id
// Counters are ahead of every id, that no device is booked past 100%, and
// that the rolling backup is not newer than the ledger (which would mean the
// ledger lost writes). It reads only, under a shared lock, a private copy of
// the file whose pages it has checked first, so no damage and nothing
// another process does to the file meanwhile can crash it. The error is for
// when it could not look at all (the ledger is busy); damage is reported in
// the Diagnosis.
func (l *Ledger) Diagnose() (d storage.Diagnosis, err error) {
	d.Path = l.Path
	d.Problems = []string{}
	var have, backup storage.Counters
	// The backup is read while the ledger is locked: writers refresh it
	// under the ledger's lock.
	readBackup := func() { d.Backup, backup, d.BackupDamaged = inspectBackup(l.Path) }
	data, err := l.readLocked(readBackup)
	switch {
	case errors.Is(err, storage.ErrBusy):
		return d, err
	case errors.Is(err, fs.ErrNotExist):
		readBackup() // nothing written yet, unless the backup says otherwise
	case err != nil:
		d.Exists = true
		readBackup()
		d.Problem("%v", err)
		return d, nil
	default:
		d.Exists = true
	}
	if len(data) > 0 {
		problems, safe := checkPages(data)
		for _, p := range problems {
			d.Problem("%s", p)
		}
		if !safe {
			return d, nil
		}
		if err := viewImage(data, func(btx *bbolt.Tx) error {
			have = inspect(btx, &d, clock.System().Now())
			return nil
		}); err != nil {
			d.Problem("reading the file failed: %v", err)
		}
	}
	if backup.Parts > have.Parts || backup.Events > have.Events {
		d.Problem("the backup %s is newer than the ledger: it has handed out booking ids up to %d and event numbers up to %d, "+
			"the ledger only %d and %d — the ledger lost writes (emptied, replaced or rolled back); `chronos doctor --repair` restores them",
			storage.BackupPath(l.Path), backup.Parts, backup.Events, have.Parts, have.Events)
	}
	d.Healthy = len(d.Problems) == 0
	return d, nil
}

// guard runs fn so that a panic, or a fault reading a mapped page past the
// end of a truncated file, becomes a message instead of a crash.
func guard(fn func() error, onFail func(msg string)) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			onFail(fmt.Sprint(r))
		}
	}()
	if err := fn(); err != nil {
		onFail(err.Error())
	}
}

// inspectBackup describes the rolling backup of the ledger at path, says
// how far its Counters went (zero when it is missing or not usable), and
// whether it is damaged: there, but not usable.
func inspectBackup(path string) (desc string, c storage.Counters, damaged bool) {
	b := storage.BackupPath(path)
	data, st, err := readFile(b)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "none", storage.Counters{}, false
	case err != nil:
		// One that cannot be read here (another's) may well be whole.
		return fmt.Sprintf("%s is not usable: %v", b, err), storage.Counters{}, !errors.Is(err, fs.ErrPermission)
	}
	switch problems, err := checkImage(data); {
	case err != nil:
		return fmt.Sprintf("%s is not usable: %v", b, err), storage.Counters{}, true
	case len(problems) > 0:
		return fmt.Sprintf("%s fails bbolt's check: %v", b, problems[0]), storage.Counters{}, true
	}
	if err := viewImage(data, func(btx *bbolt.Tx) error { c = countersOf(btx); return nil }); err != nil {
		return fmt.Sprintf("%s is not usable: %v", b, err), storage.Counters{}, true
	}
	return fmt.Sprintf("%s, written %s", b, st.ModTime().Format(time.RFC3339)), c, false
}

// countersOf reads the id Counters of a ledger's buckets.
func countersOf(btx *bbolt.Tx) storage.Counters {
	var c storage.Counters
	if b := btx.Bucket(storage.BucketPartitions); b != nil {
		c.Parts = b.Sequence()
	}
	if b := btx.Bucket(storage.BucketEvents); b != nil {
		c.Events = b.Sequence()
	}
	return c
}

func inspect(btx *bbolt.Tx, d *storage.Diagnosis, now time.Time) (have storage.Counters) {
	n := 0
	for err := range btx.Check() {
		if n++; n <= 10 {
			d.Problem("bbolt check: %v", err)
		}
	}
	if n > 10 {
		d.Problem("bbolt check: %d more problems", n-10)
	}
	meta := btx.Bucket(storage.BucketMeta)
	if meta == nil {
		if len(bucketNames(btx)) == 0 {
			return have // an empty file bbolt initialised: nothing written yet
		}
		d.Problem("no meta bucket: a bbolt file, but not a chronos ledger (buckets: %v)", bucketNames(btx))
		return have
	}
	switch v := meta.Get(storage.KeySchema); {
	case len(v) != 1:
		d.Problem("the schema version is missing or malformed (%x)", v)
	case v[0] > storage.SchemaVersion:
		d.Schema = int(v[0])
		d.Problem("written by a newer chronos (schema %d; this one reads up to %d): upgrade chronos rather than repair", v[0], storage.SchemaVersion)
		return have
	default:
		d.Schema = int(v[0])
	}
	for _, name := range storage.RequiredBuckets() {
		if btx.Bucket(name) == nil {
			d.Problem("the %s bucket is missing", name)
		}
	}
	for _, name := range bucketNames(btx) {
		if !slices.ContainsFunc(storage.Buckets(), func(b []byte) bool { return string(b) == name }) {
			d.Problem("unknown bucket %q", name)
		}
	}
	var inv domain.Inventory
	if v := meta.Get(storage.KeyInventory); v != nil && storage.Decode(v, &inv) != nil {
		d.Problem("the device inventory does not decode")
	}
	var pol domain.Policy
	if v := meta.Get(storage.KeyPolicy); v != nil && storage.Decode(v, &pol) != nil {
		d.Problem("the policy does not decode")
	}

	tx, err := storage.NewTx(boltTx{btx})
	if err != nil {
		d.Problem("%v", err)
		return have
	}
	guard(func() error {
		have = storage.InspectRecords(tx, d, now)
		return nil
	}, func(msg string) { d.Problem("reading the records failed: %s", msg) })
	return have
}
