package bolt

import (
	"bytes"
	"cmp"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"go.etcd.io/bbolt"
	"golang.org/x/sys/unix"

	"github.com/chronos-gpu/chronos/core/clock"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/storage"
)

// Repaired says what Repair did.
type Repaired struct {
	Before storage.Diagnosis `json:"before"`
	After  storage.Diagnosis `json:"after"`
	// SavedAs is the copy of the damaged file, kept as it was.
	SavedAs string `json:"saved_as,omitempty"`
	// Done is false when there was nothing to repair.
	Done bool `json:"done"`
	// What the new ledger was rebuilt from, in plain words.
	Sources []string `json:"sources"`
	// Partitions, Live and Events are in the new ledger.
	Partitions int `json:"partitions"`
	Live       int `json:"live"`
	Events     int `json:"events"`
	// Lost says what could not be read back.
	Lost []string `json:"lost"`
}

// salvage is what could be read from one file.
type salvage struct {
	parts     map[uint64]domain.Partition
	events    map[uint64]domain.Event
	claims    map[string]domain.Claim
	usage     map[uint64]domain.BookingUsage
	policy    *domain.Policy
	inventory *domain.Inventory
	guard     *storage.Guard // a guarded ledger stays guarded
	partSeq   uint64
	eventSeq  uint64
	// asIs holds, by bucket, the buckets no record above is checked for
	// (the waiting line, fair-share usage, held intervals, GPU minutes,
	// unbooked use): copied key for key, with their Counters.
	asIs    map[string]map[string][]byte
	asIsSeq map[string]uint64

	failures []string
}

func newSalvage() *salvage {
	return &salvage{parts: map[uint64]domain.Partition{}, events: map[uint64]domain.Event{}, claims: map[string]domain.Claim{}, usage: map[uint64]domain.BookingUsage{},
		asIs: map[string]map[string][]byte{}, asIsSeq: map[string]uint64{}}
}

// checkedBuckets are the buckets salvage reads record by record (the live
// index is rebuilt from the bookings); every other bucket is copied as is.
var checkedBuckets = [][]byte{storage.BucketMeta, storage.BucketPartitions, storage.BucketEvents, storage.BucketClaims, storage.BucketLive, storage.BucketBookingUsage}

// copiedBuckets are storage.Buckets() less checkedBuckets.
func copiedBuckets() [][]byte {
	var out [][]byte
	for _, b := range storage.Buckets() {
		if !slices.ContainsFunc(checkedBuckets, func(c []byte) bool { return bytes.Equal(b, c) }) {
			out = append(out, b)
		}
	}
	return out
}

// ErrNotLedger means the file at a ledger's path never was a chronos
// ledger: repairing it would put a new ledger in place of somebody's file
// (a typo'd --db under sudo could replace a system file).
var ErrNotLedger = errors.New("not a chronos ledger")

// Repair is RepairAnyway for a file that was a chronos ledger once: it
// refuses, with ErrNotLedger, a file with no bbolt header, no chronos
// bucket and no backup beside it, and anything not a regular file with no
// backup beside it.
func (l *Ledger) Repair() (Repaired, error) {
	return l.repair(false)
}

// RepairAnyway rebuilds a damaged ledger from what can be read of it. It saves
// the damaged file as <path>.damaged-<time>-<random>, reads every record it
// can — through bbolt where the file's pages hold together, key by key so
// that one bad record costs only itself; from the raw pages where bbolt
// cannot go; and from the rolling backup when that passes bbolt's check, for
// what neither has — builds a new ledger in memory, checks it, and puts it
// in place of the old one. Live bookings, history, events, policy and
// inventory are kept as found, and no id counter goes back; a booking whose
// "created" event was lost gets one that says it was restored. The ledger
// stays locked throughout, so no write is lost.
func (l *Ledger) RepairAnyway() (Repaired, error) {
	return l.repair(true)
}

//nolint:funlen,gocyclo // the repair's steps in order, each of which may give up and say why
func (l *Ledger) repair(anyway bool) (Repaired, error) {
	var r Repaired
	r.Sources, r.Lost = []string{}, []string{}
	before, err := l.Diagnose()
	r.Before, r.After = before, before
	if err != nil {
		return r, err
	}
	if before.Healthy {
		return r, nil
	}
	if before.Schema > storage.SchemaVersion {
		return r, fmt.Errorf("%w (schema %d): upgrade chronos instead of repairing", storage.ErrNewerSchema, before.Schema)
	}

	mode, uid, gid := l.mode(), -1, -1
	stamp := clock.System().Now().UTC().Format("20060102T150405Z")
	found := newSalvage()
	f, err := storage.OpenRegular(l.Path, os.O_RDWR)
	switch {
	case err == nil:
		// Hold the writers' lock while the file is copied and replaced.
		defer f.Close()
		if err := lockLedger(f, true, l.timeout()); err != nil {
			return r, l.openError(err, l.timeout())
		}
		data, st, err := readAll(f)
		if err != nil {
			return r, fmt.Errorf("read %s: %w", l.Path, err)
		}
		if !anyway && !wasLedger(data) && !hasBackup(l.Path) {
			return r, l.notLedger()
		}
		mode = st.Mode().Perm()
		uid, gid, _ = storage.OwnerOf(st)
		if r.SavedAs, err = saveCopy(l.Path, stamp, mode, data); err != nil {
			return r, fmt.Errorf("save the damaged file: %w", err)
		}
		found.salvage(data, &r)
	case errors.Is(err, fs.ErrNotExist):
		r.Lost = append(r.Lost, l.Path+" was missing")
	case errors.Is(err, storage.ErrDamaged):
		// A directory, a FIFO, a link: nothing to read. Move it aside so
		// the path is free — if it was the ledger's place (--db /etc).
		if !anyway && !hasBackup(l.Path) {
			return r, l.notLedger()
		}
		if r.SavedAs, err = moveAside(l.Path, stamp); err != nil {
			return r, fmt.Errorf("move %s aside: %w", l.Path, err)
		}
		r.Lost = append(r.Lost, fmt.Sprintf("%s was not a regular file; moved aside as %s", l.Path, r.SavedAs))
	default:
		return r, err
	}

	// The rolling backup fills in what the damaged file lost.
	backup := storage.BackupPath(l.Path)
	if data, st, err := readFile(backup); err == nil {
		if problems, err := checkImage(data); err == nil && len(problems) == 0 {
			old := newSalvage()
			readTree(data, old)
			if added := found.fill(old); added > 0 {
				r.Sources = append(r.Sources, fmt.Sprintf("%d records restored from the backup %s (written %s)", added, backup, st.ModTime().Format(time.RFC3339)))
			}
		}
	}
	r.Lost = append(r.Lost, found.failures...)
	if len(found.parts) == 0 && len(found.events) == 0 {
		r.Lost = append(r.Lost, "nothing could be read: the new ledger starts empty")
	}

	built, err := found.build()
	if err != nil {
		return r, fmt.Errorf("build the new ledger: %w", err)
	}
	if problems, err := checkImage(built); err != nil || len(problems) > 0 {
		if err == nil {
			err = errors.Join(problems...)
		}
		return r, fmt.Errorf("the rebuilt ledger did not pass bbolt's check (%w); %s is unchanged", err, l.Path)
	}
	err = storage.WriteAtomically(l.Path, mode, func(f *os.File) error {
		if uid >= 0 && os.Geteuid() == 0 {
			// Keep the ledger its owner's and group's.
			if err := f.Chown(uid, gid); err != nil {
				return err
			}
		}
		_, err := f.Write(built)
		return err
	})
	if err != nil {
		return r, fmt.Errorf("put the rebuilt ledger in place: %w", err)
	}
	r.Done = true
	r.Partitions, r.Events = len(found.parts), len(found.events)+1
	for _, p := range found.parts {
		if p.State == domain.Live {
			r.Live++
		}
	}
	r.After, err = l.Diagnose()
	return r, err
}

// salvage reads what it can of a damaged file's bytes: through bbolt when
// its pages hold together, then from the pages directly, then from records
// found anywhere in the bytes.
func (s *salvage) salvage(data []byte, r *Repaired) {
	n := readTree(data, s)
	if n > 0 || len(s.failures) == 0 {
		r.Sources = append(r.Sources, fmt.Sprintf("%d bookings and %d events read from the file through bbolt", len(s.parts), len(s.events)))
	}
	raw := newSalvage()
	scanPages(data, raw)
	if added := s.fill(raw); added > 0 {
		r.Sources = append(r.Sources, fmt.Sprintf("%d records read from the file's pages directly", added))
	}
	carved := newSalvage()
	carve(data, carved)
	if added := s.fill(carved); added > 0 {
		r.Sources = append(r.Sources, fmt.Sprintf("%d records found in the file's bytes where no page could be parsed", added))
	}
}

// saveCopy writes data to a new file named after path, the time and a
// random part, and returns its name.
func saveCopy(path, stamp string, mode fs.FileMode, data []byte) (string, error) {
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".damaged-"+stamp+"-*")
	if err != nil {
		return "", err
	}
	err = f.Chmod(mode)
	if err == nil {
		_, err = f.Write(data)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

// moveAside renames whatever is at path to a new name beside it, never
// over an existing one.
func moveAside(path, stamp string) (string, error) {
	for {
		var random [4]byte
		_, _ = rand.Read(random[:])
		to := fmt.Sprintf("%s.damaged-%s-%x", path, stamp, random)
		err := unix.Renameat2(unix.AT_FDCWD, path, unix.AT_FDCWD, to, unix.RENAME_NOREPLACE)
		if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) {
			// No RENAME_NOREPLACE here: the random name will do.
			err = os.Rename(path, to)
		}
		if !errors.Is(err, unix.EEXIST) {
			return to, err
		}
	}
}

// readTree reads a ledger file's bytes through bbolt, record by record,
// each read guarded so that a damaged record loses only itself. It returns
// how many records it read.
func readTree(data []byte, into *salvage) int {
	n := 0
	if len(data) == 0 {
		return 0
	}
	err := viewImage(data, func(btx *bbolt.Tx) error {
		n += readBucket(btx.Bucket(storage.BucketPartitions), "partitions", into, func(k, v []byte) bool {
			var p domain.Partition
			if len(k) != 8 || storage.Decode(v, &p) != nil || storage.InvalidPartition(p, binary.BigEndian.Uint64(k)) != "" {
				return false
			}
			into.parts[p.ID] = p
			return true
		}, &into.partSeq)
		n += readBucket(btx.Bucket(storage.BucketEvents), "events", into, func(k, v []byte) bool {
			var e domain.Event
			if len(k) != 8 || storage.Decode(v, &e) != nil || e.Seq != binary.BigEndian.Uint64(k) {
				return false
			}
			into.events[e.Seq] = e
			return true
		}, &into.eventSeq)
		n += readBucket(btx.Bucket(storage.BucketBookingUsage), "booking usage", into, func(k, v []byte) bool {
			var u domain.BookingUsage
			if len(k) != 8 || storage.Decode(v, &u) != nil || u.Partition != binary.BigEndian.Uint64(k) {
				return false
			}
			into.usage[u.Partition] = u
			return true
		}, nil)
		n += readBucket(btx.Bucket(storage.BucketClaims), "claims", into, func(k, v []byte) bool {
			var c domain.Claim
			if storage.Decode(v, &c) != nil {
				return false
			}
			into.claims[string(k)] = c
			return true
		}, nil)
		for _, name := range copiedBuckets() {
			kept := into.asIs[string(name)]
			if kept == nil {
				kept = map[string][]byte{}
				into.asIs[string(name)] = kept
			}
			seq := into.asIsSeq[string(name)]
			n += readBucket(btx.Bucket(name), string(name), into, func(k, v []byte) bool {
				kept[string(k)] = bytes.Clone(v)
				return true
			}, &seq)
			into.asIsSeq[string(name)] = seq
		}
		guard(func() error {
			if meta := btx.Bucket(storage.BucketMeta); meta != nil {
				into.readMeta(storage.KeyPolicy, meta.Get(storage.KeyPolicy))
				into.readMeta(storage.KeyInventory, meta.Get(storage.KeyInventory))
				into.readMeta(storage.KeyGuard, meta.Get(storage.KeyGuard))
			}
			return nil
		}, func(msg string) { into.failures = append(into.failures, "policy, inventory and guard: "+msg) })
		return nil
	})
	if err != nil {
		into.failures = append(into.failures, "bbolt cannot read the file: "+err.Error())
	}
	return n
}

func (s *salvage) readMeta(k, v []byte) {
	if v == nil {
		return
	}
	switch string(k) {
	case string(storage.KeyPolicy):
		var p domain.Policy
		if json.Unmarshal(v, &p) == nil && p.Expiry != "" {
			s.policy = &p
		}
	case string(storage.KeyInventory):
		var inv domain.Inventory
		if json.Unmarshal(v, &inv) == nil && len(inv.Devices) > 0 {
			s.inventory = &inv
		}
	case string(storage.KeyGuard):
		var g storage.Guard
		if json.Unmarshal(v, &g) == nil && g.Group != "" {
			s.guard = &g
		}
	}
}

// readBucket walks a bucket with a cursor; when the walk breaks on a damaged
// page it goes on from the next key it can reach, and for numbered buckets
// it tries every number up to the bucket's counter, one Get at a time.
func readBucket(b *bbolt.Bucket, name string, into *salvage, keep func(k, v []byte) bool, seq *uint64) int {
	if b == nil {
		return 0
	}
	n, bad := 0, 0
	var last []byte
	broke := false
	guard(func() error {
		c := b.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			last = append(last[:0], k...)
			if v == nil {
				continue
			}
			if keep(k, v) {
				n++
			} else {
				bad++
			}
		}
		return nil
	}, func(string) { broke = true })
	if seq != nil {
		guard(func() error { *seq = b.Sequence(); return nil }, func(string) {})
		if broke {
			// Numbered keys: ask for each one on its own.
			top := *seq
			if len(last) == 8 {
				top = max(top, binary.BigEndian.Uint64(last)+1000)
			}
			top = min(top, 5_000_000)
			for id := uint64(1); id <= top; id++ {
				guard(func() error {
					if v := b.Get(storage.IDKey(id)); v != nil {
						if keep(storage.IDKey(id), v) {
							n++
						}
					}
					return nil
				}, func(string) {})
			}
		}
	}
	if broke {
		into.failures = append(into.failures, fmt.Sprintf("the %s bucket has damaged pages: read what could be reached past them", name))
	}
	if bad > 0 {
		into.failures = append(into.failures, fmt.Sprintf("%d %s records did not decode and were left out", bad, name))
	}
	return n
}

// fill adds from other what s lacks, and returns how many records it added.
func (s *salvage) fill(other *salvage) int {
	n := 0
	for id, p := range other.parts {
		if _, ok := s.parts[id]; !ok {
			s.parts[id] = p
			n++
		}
	}
	for seq, e := range other.events {
		if _, ok := s.events[seq]; !ok {
			s.events[seq] = e
			n++
		}
	}
	for k, c := range other.claims {
		if _, ok := s.claims[k]; !ok {
			s.claims[k] = c
			n++
		}
	}
	for id, u := range other.usage {
		if _, ok := s.usage[id]; !ok {
			s.usage[id] = u
			n++
		}
	}
	if s.policy == nil && other.policy != nil {
		s.policy = other.policy
		n++
	}
	if s.inventory == nil && other.inventory != nil {
		s.inventory = other.inventory
		n++
	}
	if s.guard == nil && other.guard != nil {
		s.guard = other.guard
		n++
	}
	for name, kept := range other.asIs {
		mine := s.asIs[name]
		if mine == nil {
			mine = map[string][]byte{}
			s.asIs[name] = mine
		}
		for k, v := range kept {
			if _, ok := mine[k]; !ok {
				mine[k] = v
				n++
			}
		}
		s.asIsSeq[name] = max(s.asIsSeq[name], other.asIsSeq[name])
	}
	s.partSeq = max(s.partSeq, other.partSeq)
	s.eventSeq = max(s.eventSeq, other.eventSeq)
	return n
}

// build makes a new ledger, in memory, from what was salvaged, and returns
// its bytes.
//
//nolint:funlen,gocyclo // builds the new file bucket by bucket in one transaction
func (s *salvage) build() ([]byte, error) {
	db, mine, err := openImage(nil, false)
	if err != nil {
		return nil, err
	}
	defer mine.Close()
	err = db.Update(func(btx *bbolt.Tx) error {
		if err := prepare(btx); err != nil {
			return err
		}
		raw := boltTx{btx}
		tx, err := storage.NewTx(raw)
		if err != nil {
			return err
		}
		created, ended := map[uint64]bool{}, map[uint64]bool{}
		var maxSeq uint64
		for _, seq := range sortedKeys(s.events) {
			e := s.events[seq]
			switch e.Kind {
			case domain.EventCreated:
				created[e.Partition] = true
			case domain.EventReleased, domain.EventExpired, domain.EventReclaimed:
				ended[e.Partition] = true
			}
			if err := storage.PutRecord(raw, storage.BucketEvents, storage.IDKey(seq), e); err != nil {
				return err
			}
			maxSeq = seq
		}
		if err := btx.Bucket(storage.BucketEvents).SetSequence(max(maxSeq, s.eventSeq)); err != nil {
			return err
		}
		var maxID uint64
		now := clock.System().Now()
		for _, id := range sortedKeys(s.parts) {
			p := s.parts[id]
			if err := tx.PutPartition(&p); err != nil {
				return err
			}
			maxID = id
			if err := restoreEvents(tx, p, now, created[id], ended[id]); err != nil {
				return err
			}
		}
		if err := btx.Bucket(storage.BucketPartitions).SetSequence(max(maxID, s.partSeq)); err != nil {
			return err
		}
		for k, c := range s.claims {
			if err := tx.PutClaim(k, c); err != nil {
				return err
			}
		}
		for _, u := range s.usage {
			if err := tx.PutBookingUsage(u); err != nil {
				return err
			}
		}
		for name, kept := range s.asIs {
			b := btx.Bucket([]byte(name))
			for k, v := range kept {
				if err := b.Put([]byte(k), v); err != nil {
					return err
				}
			}
			if err := b.SetSequence(s.asIsSeq[name]); err != nil {
				return err
			}
		}
		if s.policy != nil {
			if err := tx.PutPolicy(*s.policy); err != nil {
				return err
			}
		}
		if s.inventory != nil {
			if err := tx.PutInventory(*s.inventory); err != nil {
				return err
			}
		}
		if s.guard != nil {
			if err := tx.PutGuard(*s.guard); err != nil {
				return err
			}
		}
		return tx.AddEvent(domain.Event{Time: now, Kind: domain.EventRepaired, UID: os.Getuid(),
			Detail: fmt.Sprintf("ledger rebuilt by chronos doctor: %d bookings, %d events", len(s.parts), len(s.events))})
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	data, _, err := readAll(mine)
	return data, err
}

func sortedKeys[V any](m map[uint64]V) []uint64 {
	ks := make([]uint64, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.SortFunc(ks, func(a, b uint64) int { return cmp.Compare(a, b) })
	return ks
}

// scanPages reads records straight from the file's leaf pages, for when
// bbolt cannot walk the tree. With a readable meta page, only pages of the
// committed state are read (below the high-water mark, not on the free
// list), since freed pages hold older versions of records.
func scanPages(data []byte, into *salvage) {
	defer func() { _ = recover() }()
	pageSize, m, valid := metas(data)
	meta, ok := current(m, valid)
	if pageSize < 512 || pageSize > 1<<24 {
		pageSize, ok = 4096, false
	}
	free := map[uint64]bool{}
	if ok && meta.freelist > 1 && int(meta.freelist)*pageSize+pageHeader <= len(data) {
		p := data[int(meta.freelist)*pageSize:]
		if le.Uint16(p[8:])&freelistFlag != 0 {
			count, start := int(le.Uint16(p[10:])), pageHeader
			if count == 0xFFFF {
				count, start = int(le.Uint64(p[pageHeader:])), pageHeader+8
			}
			for i := 0; i < count && start+8*i+8 <= len(p); i++ {
				free[le.Uint64(p[start+8*i:])] = true
			}
		}
	}
	pages := len(data) / pageSize
	if ok && meta.pgid > 0 {
		pages = min(pages, int(meta.pgid))
	}
	for id := 2; id < pages; id++ {
		if free[uint64(id)] {
			continue
		}
		p := data[id*pageSize:]
		if le.Uint16(p[8:]) != leafPageFlag {
			continue
		}
		end := min(len(data)-id*pageSize, (int(le.Uint32(p[12:]))+1)*pageSize)
		scanLeaf(p[:end], into, 0)
	}
}

func scanLeaf(p []byte, into *salvage, depth int) {
	if depth > 2 || len(p) < pageHeader || le.Uint16(p[8:]) != leafPageFlag {
		return
	}
	count := int(le.Uint16(p[10:]))
	for i := range count {
		el := pageHeader + i*pageElement
		if el+pageElement > len(p) {
			return
		}
		flags, pos, ks, vs := le.Uint32(p[el:]), int(le.Uint32(p[el+4:])), int(le.Uint32(p[el+8:])), int(le.Uint32(p[el+12:]))
		k0 := el + pos
		if pos < 0 || ks < 0 || vs < 0 || k0+ks+vs > len(p) || k0 < 0 {
			continue
		}
		k, v := p[k0:k0+ks], p[k0+ks:k0+ks+vs]
		if flags&bucketLeafFlag != 0 {
			if len(v) > pageHeader && le.Uint64(v) == 0 {
				scanLeaf(v[pageHeader:], into, depth+1) // an inline bucket
			}
			continue
		}
		into.classify(k, v)
	}
}

// classify keeps a raw record that reads as one of the ledger's kinds.
//
//nolint:gocyclo // one case per kind of record a damaged file may hold
func (s *salvage) classify(k, v []byte) {
	if len(v) == 0 || v[0] != '{' {
		return
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(v, &fields) != nil {
		return
	}
	has := func(names ...string) bool {
		for _, n := range names {
			if _, ok := fields[n]; !ok {
				return false
			}
		}
		return true
	}
	switch {
	case string(k) == string(storage.KeyPolicy) || string(k) == string(storage.KeyInventory) || string(k) == string(storage.KeyGuard):
		s.readMeta(k, v)
	case len(k) == 8 && has("share_ppm", "expires", "state"):
		var p domain.Partition
		if json.Unmarshal(v, &p) == nil && storage.InvalidPartition(p, binary.BigEndian.Uint64(k)) == "" {
			if old, ok := s.parts[p.ID]; !ok || later(p, old) {
				s.parts[p.ID] = p
			}
		}
	case len(k) == 8 && has("seq", "kind", "time"):
		var e domain.Event
		if json.Unmarshal(v, &e) == nil && e.Seq == binary.BigEndian.Uint64(k) {
			s.events[e.Seq] = e
		}
	case len(k) == 8 && has("partition", "through"):
		var u domain.BookingUsage
		if json.Unmarshal(v, &u) == nil && u.Partition == binary.BigEndian.Uint64(k) {
			if old, ok := s.usage[u.Partition]; !ok || u.Through.After(old.Through) {
				s.usage[u.Partition] = u
			}
		}
	case has("by", "at"):
		var c domain.Claim
		if json.Unmarshal(v, &c) == nil {
			s.claims[string(k)] = c
		}
	}
}

// later says whether a is a later version of the same partition than b:
// states only move from live to ended, and deadlines only move later.
func later(a, b domain.Partition) bool {
	if (a.State == domain.Live) != (b.State == domain.Live) {
		return b.State == domain.Live
	}
	if !a.Expires.Equal(b.Expires) {
		return a.Expires.After(b.Expires)
	}
	return a.Warned && !b.Warned
}

// carve finds whole records anywhere in the file's bytes — on a page whose
// header is damaged, say — by their JSON openings. Without the page it
// cannot tell the current version of a booking from an older copy on a freed
// page, so it keeps the latest (see later), and only fills in what the pages
// did not give.
func carve(data []byte, into *salvage) {
	for _, opening := range [][]byte{[]byte(`{"v":`), []byte(`{"seq":`)} {
		for off := 0; ; {
			i := bytes.Index(data[off:], opening)
			if i < 0 {
				break
			}
			start := off + i
			off = start + 1
			dec := json.NewDecoder(bytes.NewReader(data[start:min(len(data), start+64<<10)]))
			var raw json.RawMessage
			if dec.Decode(&raw) != nil {
				continue
			}
			var id struct {
				ID  uint64 `json:"id"`
				Seq uint64 `json:"seq"`
			}
			if json.Unmarshal(raw, &id) != nil {
				continue
			}
			if id.ID != 0 {
				into.classify(storage.IDKey(id.ID), raw)
			} else if id.Seq != 0 {
				into.classify(storage.IDKey(id.Seq), raw)
			}
		}
	}
}

func (l *Ledger) notLedger() error {
	return fmt.Errorf("%w: %s has no bbolt header, no chronos bucket and no backup beside it; "+
		"to replace it with a new ledger anyway (the file is kept as %s.damaged-…), add --force", ErrNotLedger, l.Path, l.Path)
}

// wasLedger says whether data, a file's bytes, were a chronos ledger once,
// from what survives damage: a bbolt meta page, or the names of the buckets
// every chronos ledger holds. An empty file is what chronos leaves before
// its first write.
func wasLedger(data []byte) bool {
	if len(data) == 0 {
		return true
	}
	for _, off := range []int{0, 4096, 8192, 16384, 65536} {
		if off+pageHeader+4 <= len(data) && le.Uint32(data[off+pageHeader:]) == boltMagic {
			return true
		}
	}
	for _, name := range storage.RequiredBuckets() { // a ledger older than the later buckets lacks them
		if !bytes.Contains(data, name) {
			return false
		}
	}
	return true
}

// hasBackup says whether a rolling backup lies beside path: only chronos
// writes one.
func hasBackup(path string) bool {
	st, err := os.Lstat(storage.BackupPath(path))
	return err == nil && st.Mode().IsRegular()
}

// restoreEvents adds the events a repair found lost for p: its "created",
// and the one that ended it, each saying it was restored. The audit trail
// then has every booking's beginning and end, as doctor checks.
func restoreEvents(tx *storage.Tx, p domain.Partition, now time.Time, created, ended bool) error {
	restored := func(kind domain.EventKind, what string, at time.Time) error {
		return tx.AddEvent(domain.Event{Time: now, Kind: kind, Partition: p.ID, UID: p.UID, User: p.User,
			Detail: "restored by chronos doctor: the original event was lost (" + what + " " + at.UTC().Format(time.RFC3339) + ")"})
	}
	if !created {
		if err := restored(domain.EventCreated, "booked", p.Created); err != nil {
			return err
		}
	}
	switch {
	case ended:
	case p.State == domain.Released:
		return restored(domain.EventReleased, "released by", p.End())
	case p.State == domain.Expired:
		return restored(domain.EventExpired, "ended", p.End())
	}
	return nil
}
