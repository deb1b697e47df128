package storage

import (
	"errors"
	"fmt"
	"io/fs"
	"runtime/debug"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/chronos-gpu/chronos/core/clock"
)

// Diagnosis is what Diagnose found in a ledger file, in plain words.
type Diagnosis struct {
	Path       string   `json:"path"`
	Exists     bool     `json:"exists"`
	Healthy    bool     `json:"healthy"`
	Problems   []string `json:"problems"`
	Schema     int      `json:"schema"`
	Partitions int      `json:"partitions"`
	Live       int      `json:"live"`
	Events     int      `json:"events"`
	Claims     int      `json:"claims"`
	Backup     string   `json:"backup"`
	// BackupDamaged: the backup is there but cannot be used; Healthy still
	// speaks of the ledger alone.
	BackupDamaged bool `json:"backup_damaged"`
}

const maxProblems = 50

func (d *Diagnosis) problem(format string, args ...any) {
	switch {
	case len(d.Problems) < maxProblems:
		d.Problems = append(d.Problems, fmt.Sprintf(format, args...))
	case len(d.Problems) == maxProblems:
		d.Problems = append(d.Problems, "… and more")
	}
}

// Diagnose checks the ledger: that it opens, passes bbolt's consistency
// check, has a schema this chronos reads, that every record decodes and
// agrees with its key, that the live index lists exactly the partitions
// stored as live, that every partition has its "created" event, that the id
// counters are ahead of every id, that no device is booked past 100%, and
// that the rolling backup is not newer than the ledger (which would mean the
// ledger lost writes). It reads only, under a shared lock, a private copy of
// the file whose pages it has checked first, so no damage and nothing
// another process does to the file meanwhile can crash it. The error is for
// when it could not look at all (the ledger is busy); damage is reported in
// the Diagnosis.
func (l *Ledger) Diagnose() (d Diagnosis, err error) {
	d.Path = l.Path
	d.Problems = []string{}
	var have, backup counters
	// The backup is read while the ledger is locked: writers refresh it
	// under the ledger's lock.
	readBackup := func() { d.Backup, backup, d.BackupDamaged = inspectBackup(l.Path) }
	data, err := l.readLocked(readBackup)
	switch {
	case errors.Is(err, ErrBusy):
		return d, err
	case errors.Is(err, fs.ErrNotExist):
		readBackup() // nothing written yet, unless the backup says otherwise
	case err != nil:
		d.Exists = true
		readBackup()
		d.problem("%v", err)
		return d, nil
	default:
		d.Exists = true
	}
	if len(data) > 0 {
		problems, safe := checkPages(data)
		for _, p := range problems {
			d.problem("%s", p)
		}
		if !safe {
			return d, nil
		}
		if err := viewImage(data, func(btx *bolt.Tx) error {
			have = inspect(btx, &d, clock.System().Now())
			return nil
		}); err != nil {
			d.problem("reading the file failed: %v", err)
		}
	}
	if backup.parts > have.parts || backup.events > have.events {
		d.problem("the backup %s is newer than the ledger: it has handed out booking ids up to %d and event numbers up to %d, "+
			"the ledger only %d and %d — the ledger lost writes (emptied, replaced or rolled back); `chronos doctor --repair` restores them",
			BackupPath(l.Path), backup.parts, backup.events, have.parts, have.events)
	}
	d.Healthy = len(d.Problems) == 0
	return d, nil
}

// counters are the highest booking id and event number a ledger handed out.
type counters struct{ parts, events uint64 }

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
// how far its counters went (zero when it is missing or not usable), and
// whether it is damaged: there, but not usable.
func inspectBackup(path string) (desc string, c counters, damaged bool) {
	b := BackupPath(path)
	data, st, err := readFile(b)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "none", counters{}, false
	case err != nil:
		// One that cannot be read here (another's) may well be whole.
		return fmt.Sprintf("%s is not usable: %v", b, err), counters{}, !errors.Is(err, fs.ErrPermission)
	}
	switch problems, err := checkImage(data); {
	case err != nil:
		return fmt.Sprintf("%s is not usable: %v", b, err), counters{}, true
	case len(problems) > 0:
		return fmt.Sprintf("%s fails bbolt's check: %v", b, problems[0]), counters{}, true
	}
	if err := viewImage(data, func(btx *bolt.Tx) error { c = countersOf(btx); return nil }); err != nil {
		return fmt.Sprintf("%s is not usable: %v", b, err), counters{}, true
	}
	return fmt.Sprintf("%s, written %s", b, st.ModTime().Format(time.RFC3339)), c, false
}

// countersOf reads the id counters of a ledger's buckets.
func countersOf(btx *bolt.Tx) counters {
	var c counters
	if b := btx.Bucket(bucketPartitions); b != nil {
		c.parts = b.Sequence()
	}
	if b := btx.Bucket(bucketEvents); b != nil {
		c.events = b.Sequence()
	}
	return c
}

func inspect(btx *bolt.Tx, d *Diagnosis, now time.Time) (have counters) {
	n := 0
	for err := range btx.Check() {
		if n++; n <= 10 {
			d.problem("bbolt check: %v", err)
		}
	}
	if n > 10 {
		d.problem("bbolt check: %d more problems", n-10)
	}
	meta := btx.Bucket(bucketMeta)
	if meta == nil {
		if len(bucketNames(btx)) == 0 {
			return have // an empty file bbolt initialised: nothing written yet
		}
		d.problem("no meta bucket: a bbolt file, but not a chronos ledger (buckets: %v)", bucketNames(btx))
		return have
	}
	switch v := meta.Get(keySchema); {
	case len(v) != 1:
		d.problem("the schema version is missing or malformed (%x)", v)
	case v[0] > SchemaVersion:
		d.Schema = int(v[0])
		d.problem("written by a newer chronos (schema %d; this one reads up to %d): upgrade chronos rather than repair", v[0], SchemaVersion)
		return have
	default:
		d.Schema = int(v[0])
	}
	for _, name := range requiredBuckets {
		if btx.Bucket(name) == nil {
			d.problem("the %s bucket is missing", name)
		}
	}
	for _, name := range bucketNames(btx) {
		if !slices.ContainsFunc(knownBuckets, func(b []byte) bool { return string(b) == name }) {
			d.problem("unknown bucket %q", name)
		}
	}
	var inv Inventory
	if v := meta.Get(keyInventory); v != nil && decode(v, &inv) != nil {
		d.problem("the device inventory does not decode")
	}
	var pol Policy
	if v := meta.Get(keyPolicy); v != nil && decode(v, &pol) != nil {
		d.problem("the policy does not decode")
	}

	tx, err := NewTx(boltTx{btx})
	if err != nil {
		d.problem("%v", err)
		return have
	}
	guard(func() error {
		have = inspectRecords(tx, d, now)
		return nil
	}, func(msg string) { d.problem("reading the records failed: %s", msg) })
	return have
}

// invalid says what is wrong with a partition stored under id, or "".
func (p Partition) invalid(id uint64) string {
	switch {
	case p.ID != id:
		return fmt.Sprintf("stored under id %d but says it is %d", id, p.ID)
	case p.V > SchemaVersion:
		return fmt.Sprintf("record version %d is newer than this chronos", p.V)
	case p.State == "":
		return "has no state: list hides it, yet the live index may make admission count it"
	case p.State != Live && p.State != Released && p.State != Expired:
		return fmt.Sprintf("unknown state %q", p.State)
	case p.SharePPM <= 0 || p.SharePPM > 1_000_000:
		return fmt.Sprintf("share %d ppm is outside (0, 100%%]", p.SharePPM)
	case p.Device < 0:
		return fmt.Sprintf("device %d", p.Device)
	case !p.Expires.After(p.Created):
		return "ends before it starts"
	}
	return ""
}
