package storage

import (
	"cmp"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
)

// ErrNotFound means no record has that id.
var ErrNotFound = errors.New("not found")

// State is where a partition is in its life. A partition stored as Live whose
// deadline has passed is not live: time is the truth, and Partition.LiveAt
// says so whether or not a monitor has flipped the state yet.
type State string

const (
	Live     State = "live"
	Released State = "released"
	Expired  State = "expired"
)

// Partition is one booking of a share of one device for a bounded time.
type Partition struct {
	V  int    `json:"v"`
	ID uint64 `json:"id"`
	// Host is the machine whose GPU is booked, in a ledger many hosts
	// share; empty in a host's own ledger file.
	Host       string `json:"host,omitempty"`
	Device     int    `json:"device"`
	DeviceUUID string `json:"device_uuid,omitempty"`
	// SharePPM is the booked share of the device's memory in parts per
	// million, so that admission adds integers and never rounds its way past
	// 100%.
	SharePPM   int64     `json:"share_ppm"`
	Bytes      uint64    `json:"bytes"`
	ComputePct int       `json:"compute_percent,omitempty"`
	UID        int       `json:"uid"`
	User       string    `json:"user"`
	Created    time.Time `json:"created"`
	// Start is when the booking begins to hold its share: Created for a
	// booking made for now, later for one made ahead (--at). A record
	// written before bookings had a start reads Start = Created.
	Start   time.Time `json:"start,omitzero"`
	Expires time.Time `json:"expires"`
	State   State     `json:"state"`
	Ended   time.Time `json:"ended,omitzero"`
	Warned  bool      `json:"warned,omitempty"`
	// Request is the waiting request this booking was granted for (0: it
	// was booked directly).
	Request uint64 `json:"request,omitempty"`
	// Wrapper is the `chronos run` that made the booking and releases it
	// when its command ends; nil for a booking made otherwise.
	Wrapper *Wrapper `json:"wrapper,omitempty"`
	// Orphaned is when a monitor found the wrapper gone while its command
	// still ran; the booking is released once nothing of it runs.
	Orphaned time.Time `json:"orphaned,omitzero"`
	// NoticesDismissed is the newest notice about the booking (an event's
	// sequence number) its owner dismissed: every app of theirs stops
	// showing it and the older ones.
	NoticesDismissed uint64 `json:"notices_dismissed,omitempty"`
}

// Process names one process of one machine, so that a process on the same
// machine (only there do pids mean the same processes) can tell whether it
// still runs.
type Process struct {
	Host string `json:"host"`
	// Boot and PIDNamespace say which boot of the host, and which pid
	// namespace, the pid belongs to.
	Boot         string `json:"boot"`
	PIDNamespace string `json:"pid_namespace"`
	PID          int    `json:"pid"`
	// Start is the process's start time (clock ticks since boot): with the
	// pid, it names one process even when pids are reused.
	Start uint64 `json:"start_ticks"`
}

// Wrapper names one `chronos run` process, and the process group of the
// command it started, so that a monitor on the same machine can tell when
// the wrapper died without releasing its booking.
type Wrapper struct {
	Process
	// Group is the command's process group; 0 until it started.
	Group int `json:"group,omitempty"`
}

// LiveAt reports whether the partition holds its share at instant now:
// stored as live, started, and not past its deadline.
func (p Partition) LiveAt(now time.Time) bool {
	return p.State == Live && !now.Before(p.Start) && now.Before(p.Expires)
}

// Upcoming reports whether the partition is booked ahead and has not
// started at instant now.
func (p Partition) Upcoming(now time.Time) bool {
	return p.State == Live && now.Before(p.Start)
}

// ReclaimedEarly reports whether the booking was ended before its deadline
// for sitting idle: stored as expired, with its deadline kept and its
// end (Ended) earlier. A booking that ran out its time ends at its
// deadline.
func (p Partition) ReclaimedEarly() bool {
	return p.State == Expired && !p.Ended.IsZero() && p.Ended.Before(p.Expires)
}

// End is when the partition stopped holding its share: its deadline, or
// before it when it was released or reclaimed.
func (p Partition) End() time.Time {
	if !p.Ended.IsZero() && p.Ended.Before(p.Expires) {
		return p.Ended
	}
	return p.Expires
}

// EndedAt reports whether the partition no longer holds, nor will hold,
// its share at instant now: released, expired, or past its deadline.
func (p Partition) EndedAt(now time.Time) bool {
	return p.State != Live || !now.Before(p.Expires)
}

// fillDefaults fills in what a partition stored before bookings had a
// start lacks: it started when it was made.
func (p *Partition) fillDefaults() {
	if p.Start.IsZero() {
		p.Start = p.Created
	}
}

// Policy is what the admin chose the monitor should do, and the rules of
// fair sharing: quotas and the waiting line's order.
type Policy struct {
	Expiry     string        `json:"expiry"`      // "terminate" or "notify"
	OverBudget string        `json:"over_budget"` // "off", "warn" or "terminate"
	Unbooked   string        `json:"unbooked"`    // "off", "warn" or "terminate"
	Grace      time.Duration `json:"grace"`
	WarnLead   time.Duration `json:"warn_lead"`
	MaxLength  time.Duration `json:"max_length"`
	// Admit is what admission counts: "booked" shares only, or also the
	// memory "physical"ly in use ("" reads as booked).
	Admit string `json:"admit,omitempty"`
	// The idle ladder. Idle is zero in a policy stored before it existed;
	// the ladder's defaults then apply.
	Reclaim   string          `json:"reclaim,omitempty"` // "off", "when-waiting" or "always"
	Idle      time.Duration   `json:"idle,omitempty"`
	IdleWarn  []time.Duration `json:"idle_warn,omitempty"`
	IdleSM    int             `json:"idle_sm,omitempty"` // percent
	IdleStart time.Duration   `json:"idle_start,omitempty"`
	HoldMax   time.Duration   `json:"hold_max,omitempty"`
	// NotifyURL receives every notice as a Slack-compatible JSON POST.
	NotifyURL string `json:"notify_url,omitempty"`
	// MPSUserDirs are the pipe directories where a user's own MPS daemon
	// is trusted to hold that user's bookings to their memory.
	MPSUserDirs []string `json:"mps_user_dirs,omitempty"`

	// Quotas; nil is no limit, and zero a limit of nothing (a policy
	// stored before a zero limit could be set never wrote a zero).
	UserGPUs    *float64      `json:"user_gpus,omitempty"`    // GPU-equivalents a user holds at once
	UserHours   *float64      `json:"user_hours,omitempty"`   // share-weighted GPU-hours in any HoursWindow
	HoursWindow time.Duration `json:"hours_window,omitempty"` // the rolling window of UserHours
	Ahead       time.Duration `json:"ahead"`                  // how far ahead a booking may start
	// The line's order. A policy stored before these existed has a zero
	// HalfLife, and reads with the defaults.
	HalfLife  time.Duration `json:"half_life"`
	AgeWeight float64       `json:"age_weight"`
	MaxAge    time.Duration `json:"max_age"`
	// Overrides are per-user ("alice") or per-group ("@students")
	// settings, in the form `chronos policy set` reads them.
	Overrides []Override `json:"overrides,omitempty"`
}

// Override is the settings that apply to one user or group instead of
// the policy's own: key to value, as typed ("user-gpus" -> "4").
type Override struct {
	For      string            `json:"for"`
	Settings map[string]string `json:"settings"`
}

// Tx is one open transaction on the ledger, over any engine. A Tx from
// View over a ledger that does not exist yet reads as empty.
type Tx struct {
	raw RawTx
	// written is the keys the transaction has written (see Written).
	written map[string]struct{}
}

// WriteBudget is the most keys one transaction should write: etcd takes
// 128 operations in a transaction by default, and a commit adds some of
// its own (the version key, a turn). Work that may grow with the ledger
// (the monitor's pass, placing the waiting line) stops at it and leaves
// the rest to a transaction of its own.
const WriteBudget = 100

// Written is how many keys the transaction has written so far (a key
// written twice counts once; so does a bucket's sequence): what its
// commit will ask of the engine.
func (tx *Tx) Written() int { return len(tx.written) }

// counted is the engine's transaction, counting what it writes.
type counted struct {
	RawTx
	tx *Tx
}

func (c counted) Put(bucket, k, v []byte) error {
	c.tx.wrote(bucket, k)
	return c.RawTx.Put(bucket, k, v)
}

func (c counted) Delete(bucket, k []byte) error {
	c.tx.wrote(bucket, k)
	return c.RawTx.Delete(bucket, k)
}

func (c counted) NextSequence(bucket []byte) (uint64, error) {
	c.tx.wrote(nil, bucket)
	return c.RawTx.NextSequence(bucket)
}

func (tx *Tx) wrote(bucket, k []byte) {
	if tx.written == nil {
		tx.written = map[string]struct{}{}
	}
	tx.written[string(bucket)+"/"+string(k)] = struct{}{}
}

// Raw is the engine's transaction under tx (nil for a ledger not yet
// written), for engine conformance tests and for copying a ledger whole.
func (tx *Tx) Raw() RawTx { return tx.raw }

func IDKey(id uint64) []byte {
	k := make([]byte, 8)
	binary.BigEndian.PutUint64(k, id)
	return k
}

// scan visits a bucket; an empty ledger has nothing to visit.
func (tx *Tx) scan(bucket, from []byte, reverse bool, fn func(k, v []byte) (bool, error)) error {
	if tx.raw == nil {
		return nil
	}
	return tx.raw.Scan(bucket, from, reverse, fn)
}

func (tx *Tx) get(bucket, k []byte) ([]byte, error) {
	if tx.raw == nil {
		return nil, nil
	}
	return tx.raw.Get(bucket, k)
}

// writable returns the engine's transaction when it may write, counting
// its writes.
func (tx *Tx) writable(what string) (RawTx, error) {
	if tx.raw == nil || !tx.raw.Writable() {
		return nil, fmt.Errorf("%s: read-only transaction", what)
	}
	return counted{RawTx: tx.raw, tx: tx}, nil
}

// each decodes every record of a bucket in key order.
func each[T any](tx *Tx, bucket []byte, fn func(k []byte, rec T) error) error {
	return eachFrom(tx, bucket, nil, fn)
}

// eachFrom is each from the first key >= from.
func eachFrom[T any](tx *Tx, bucket, from []byte, fn func(k []byte, rec T) error) error {
	return tx.scan(bucket, from, false, func(k, v []byte) (bool, error) {
		var rec T
		if err := Decode(v, &rec); err != nil {
			return false, fmt.Errorf("%s %x: %w", bucket, k, err)
		}
		return true, fn(k, rec)
	})
}

// Partitions returns every partition, oldest first.
func (tx *Tx) Partitions() ([]Partition, error) {
	var out []Partition
	err := each(tx, BucketPartitions, func(_ []byte, p Partition) error {
		out = append(out, p)
		return nil
	})
	return out, err
}

// PartitionsFrom returns the partitions numbered id and up, oldest first.
func (tx *Tx) PartitionsFrom(id uint64) ([]Partition, error) {
	var out []Partition
	err := eachFrom(tx, BucketPartitions, IDKey(id), func(_ []byte, p Partition) error {
		out = append(out, p)
		return nil
	})
	return out, err
}

// Partition returns the partition with that id, or ErrNotFound.
func (tx *Tx) Partition(id uint64) (Partition, error) {
	var p Partition
	v, err := tx.get(BucketPartitions, IDKey(id))
	if err != nil {
		return p, err
	}
	if v == nil {
		return p, ErrNotFound
	}
	if err := Decode(v, &p); err != nil {
		return p, fmt.Errorf("partition %d: %w", id, err)
	}
	return p, nil
}

// PutPartition stores p, giving it the next id when it has none yet. Ids are
// never reused.
func (tx *Tx) PutPartition(p *Partition) error {
	raw, err := tx.writable("put partition")
	if err != nil {
		return err
	}
	if p.ID == 0 {
		id, err := raw.NextSequence(BucketPartitions)
		if err != nil {
			return err
		}
		p.ID = id
	}
	p.V = SchemaVersion
	if err := PutRecord(raw, BucketPartitions, IDKey(p.ID), p); err != nil {
		return err
	}
	if p.State == Live {
		return raw.Put(BucketLive, IDKey(p.ID), []byte{})
	}
	return raw.Delete(BucketLive, IDKey(p.ID))
}

// getMany reads keys of bucket in as few reads as the engine allows (one
// per key, or a ManyGetter's batches); nil for each key with no value.
func (tx *Tx) getMany(bucket []byte, keys [][]byte) ([][]byte, error) {
	if many, ok := tx.raw.(ManyGetter); ok {
		return many.GetMany(bucket, keys)
	}
	out := make([][]byte, len(keys))
	for i, k := range keys {
		v, err := tx.get(bucket, k)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

func idKeys(ids []uint64) [][]byte {
	keys := make([][]byte, len(ids))
	for i, id := range ids {
		keys[i] = IDKey(id)
	}
	return keys
}

// PartitionsByID reads the partitions with those ids, in that order, in as
// few reads as the engine allows; a missing one is an error.
func (tx *Tx) PartitionsByID(ids []uint64) ([]Partition, error) {
	vals, err := tx.getMany(BucketPartitions, idKeys(ids))
	if err != nil {
		return nil, err
	}
	out := make([]Partition, 0, len(ids))
	for i, v := range vals {
		var p Partition
		if v == nil {
			return nil, fmt.Errorf("partition %d: %w", ids[i], ErrNotFound)
		}
		if err := Decode(v, &p); err != nil {
			return nil, fmt.Errorf("partition %d: %w", ids[i], err)
		}
		out = append(out, p)
	}
	return out, nil
}

// liveIDs lists the ids in the live index.
func (tx *Tx) liveIDs() ([]uint64, error) {
	var ids []uint64
	err := tx.scan(BucketLive, nil, false, func(k, _ []byte) (bool, error) {
		if len(k) != 8 {
			return false, fmt.Errorf("%w: live index key %x", ErrDamaged, k)
		}
		ids = append(ids, binary.BigEndian.Uint64(k))
		return true, nil
	})
	return ids, err
}

// LivePartitions returns the partitions stored as live, oldest first. Some
// may be past their deadline: check LiveAt.
func (tx *Tx) LivePartitions() ([]Partition, error) {
	ids, err := tx.liveIDs()
	if err != nil {
		return nil, err
	}
	out, err := tx.PartitionsByID(ids)
	if err != nil {
		return nil, fmt.Errorf("live index: %w", err)
	}
	return out, nil
}

// PartitionsSince returns the partitions created at or after since, and
// every partition still stored as live, oldest first.
func (tx *Tx) PartitionsSince(since time.Time) ([]Partition, error) {
	var recent []Partition
	err := tx.scan(BucketPartitions, nil, true, func(k, v []byte) (bool, error) {
		var p Partition
		if err := Decode(v, &p); err != nil {
			return false, fmt.Errorf("partition %x: %w", k, err)
		}
		if p.Created.Before(since) {
			return false, nil
		}
		recent = append(recent, p)
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	slices.Reverse(recent)
	seen := make(map[uint64]bool, len(recent))
	for _, p := range recent {
		seen[p.ID] = true
	}
	// Older bookings still stored as live: read only those not read above.
	ids, err := tx.liveIDs()
	if err != nil {
		return nil, err
	}
	ids = slices.DeleteFunc(ids, func(id uint64) bool { return seen[id] })
	older, err := tx.PartitionsByID(ids)
	if err != nil {
		return nil, fmt.Errorf("live index: %w", err)
	}
	recent = append(recent, older...)
	slices.SortFunc(recent, func(a, b Partition) int { return cmp.Compare(a.ID, b.ID) })
	return recent, nil
}

// Policy returns the stored policy; ok is false when the admin set none.
func (tx *Tx) Policy() (p Policy, ok bool, err error) {
	ok, err = tx.getMeta(KeyPolicy, &p)
	return p, ok, err
}

// PutPolicy stores the policy.
func (tx *Tx) PutPolicy(p Policy) error { return tx.putMeta(KeyPolicy, p) }

func (tx *Tx) getMeta(k []byte, into any) (bool, error) {
	v, err := tx.get(BucketMeta, k)
	if err != nil || v == nil {
		return false, err
	}
	if err := Decode(v, into); err != nil {
		return false, fmt.Errorf("%s: %w", k, err)
	}
	return true, nil
}

func (tx *Tx) putMeta(k []byte, v any) error {
	raw, err := tx.writable("put " + string(k))
	if err != nil {
		return err
	}
	return PutRecord(raw, BucketMeta, k, v)
}

func PutRecord(raw RawTx, bucket, k []byte, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return raw.Put(bucket, k, data)
}

// decode reads one stored record; a record that doesn't decode is damage.
// A record stored by an older chronos gets the fields it lacks.
func Decode(data []byte, into any) error {
	if err := json.Unmarshal(data, into); err != nil {
		return fmt.Errorf("%w: %w", ErrDamaged, err)
	}
	if d, ok := into.(interface{ fillDefaults() }); ok {
		d.fillDefaults()
	}
	return nil
}

// deleteWhere deletes the keys of bucket that drop picks, scanning in key
// order from the first key >= from (nil: the first) until it says no more
// or most are picked; keys are collected first, since a scan may not
// delete as it goes.
func deleteWhere(tx *Tx, raw RawTx, bucket, from []byte, most int, drop func(k, v []byte) (del, more bool)) error {
	var old [][]byte
	err := tx.scan(bucket, from, false, func(k, v []byte) (bool, error) {
		del, more := drop(k, v)
		if del {
			old = append(old, append([]byte(nil), k...))
		}
		return more && len(old) < most, nil
	})
	for _, k := range old {
		if err == nil {
			err = raw.Delete(bucket, k)
		}
	}
	return err
}
