package storage

import (
	"cmp"
	"context"
	"encoding/binary"
	"maps"
	"slices"
	"time"

	"github.com/chronos-gpu/chronos/core/domain"
)

// Sequencer is an engine that can say a bucket's last handed-out number
// without handing out another: doctor checks the Counters are ahead of
// every id.
type Sequencer interface {
	Sequence(bucket []byte) (uint64, error)
}

// DiagnoseStore checks the records of any ledger (one on etcd, say) as
// one read-only transaction sees them: the checks of InspectRecords. A
// file's Diagnose checks its pages and backup besides.
func DiagnoseStore(ctx context.Context, s Store, now time.Time) (Diagnosis, error) {
	d := Diagnosis{Path: s.String(), Exists: true, Problems: []string{}, Schema: SchemaVersion}
	err := s.View(ctx, func(tx *Tx) error {
		var inv domain.Inventory
		if _, err := tx.getMeta(KeyInventory, &inv); err != nil {
			d.Problem("the device inventory does not decode: %v", err)
		}
		var pol domain.Policy
		if _, err := tx.getMeta(KeyPolicy, &pol); err != nil {
			d.Problem("the policy does not decode: %v", err)
		}
		InspectRecords(tx, &d, now)
		return nil
	})
	d.Healthy = len(d.Problems) == 0
	return d, err
}

// gpuAt names one GPU of one host: a shared ledger holds several hosts'.
type gpuAt struct {
	host   string
	device int
}

// InspectRecords checks a ledger's records, whatever its engine: that
// every booking decodes, agrees with its key and is valid (a state among
// them: a record without one hides from list yet would block admission),
// that the live index lists exactly the bookings stored as live, that no
// GPU is booked past 100%, that every booking has its "created" event and
// every ended one the event that ended it, that every event decodes and
// agrees with its key, and that the id Counters are ahead of every id.
//
//nolint:funlen // one pass over every bucket, counting what each holds and what is wrong
func InspectRecords(tx *Tx, d *Diagnosis, now time.Time) (have Counters) {
	stored := map[uint64]domain.Partition{}
	var maxID uint64
	walkRecords(tx, BucketPartitions, "booking", d, func(id uint64, v []byte) {
		var p domain.Partition
		if err := Decode(v, &p); err != nil {
			d.Problem("partition %d does not decode: %v", id, err)
			return
		}
		if msg := InvalidPartition(p, id); msg != "" {
			d.Problem("partition %d: %s", id, msg)
		}
		stored[id] = p
		maxID = max(maxID, id)
	})
	have.Parts = counterAhead(tx, BucketPartitions, maxID, "the partition id counter (%d) is behind the highest id (%d): ids would be reused", d)
	d.Partitions = len(stored)

	indexed := map[uint64]bool{}
	walkRecords(tx, BucketLive, "live index", d, func(id uint64, _ []byte) {
		indexed[id] = true
		switch p, ok := stored[id]; {
		case !ok:
			d.Problem("the live index lists partition %d, which does not exist", id)
		case p.State != domain.Live:
			d.Problem("the live index lists partition %d, which is %s", id, stateName(p.State))
		}
	})
	used := map[gpuAt]int64{}
	for id, p := range stored {
		if p.State != domain.Live {
			continue
		}
		d.Live++
		if !indexed[id] {
			d.Problem("partition %d is live but missing from the live index (admission would not count it)", id)
		}
		if p.LiveAt(now) {
			for _, d := range p.GPUs() {
				used[gpuAt{p.Host, d}] += p.SharePPM
			}
		}
	}
	for _, g := range slices.SortedFunc(maps.Keys(used), func(a, b gpuAt) int {
		return cmp.Or(cmp.Compare(a.host, b.host), cmp.Compare(a.device, b.device))
	}) {
		if ppm := used[g]; ppm > 1_000_000 {
			on := ""
			if g.host != "" {
				on = " of " + g.host
			}
			d.Problem("GPU %d%s is booked %.2f%% by its live partitions", g.device, on, float64(ppm)/1e4)
		}
	}

	created, ended := map[uint64]bool{}, map[uint64]bool{}
	var maxSeq uint64
	walkRecords(tx, BucketEvents, "event", d, func(seq uint64, v []byte) {
		var e domain.Event
		if err := Decode(v, &e); err != nil {
			d.Problem("event %d does not decode: %v", seq, err)
			return
		}
		if e.Seq != seq {
			d.Problem("event %d says it is event %d", seq, e.Seq)
		}
		switch e.Kind {
		case domain.EventCreated:
			created[e.Partition] = true
		case domain.EventReleased, domain.EventExpired, domain.EventReclaimed:
			ended[e.Partition] = true
		}
		maxSeq = max(maxSeq, seq)
		d.Events++
	})
	have.Events = counterAhead(tx, BucketEvents, maxSeq, "the event counter (%d) is behind the newest event (%d)", d)
	var missing, unended []uint64
	for id, p := range stored {
		if !created[id] {
			missing = append(missing, id)
		}
		if (p.State == domain.Released || p.State == domain.Expired) && !ended[id] {
			unended = append(unended, id)
		}
	}
	listed(d, missing, "partition %d has no created event", "%d more partitions have no created event")
	listed(d, unended, "partition %d ended with no event saying who ended it", "%d more partitions ended with no event")

	_ = tx.scan(BucketClaims, nil, false, func(k, v []byte) (bool, error) {
		var c domain.Claim
		if err := Decode(v, &c); err != nil {
			d.Problem("claim %q does not decode", k)
		} else {
			d.Claims++
		}
		return true, nil
	})
	return have
}

// walkRecords visits a bucket whose keys are numbers, reporting a key that
// is not one and a bucket that cannot be read.
func walkRecords(tx *Tx, bucket []byte, what string, d *Diagnosis, fn func(id uint64, v []byte)) {
	err := tx.scan(bucket, nil, false, func(k, v []byte) (bool, error) {
		if len(k) != 8 {
			d.Problem("%s key %x is not a number", what, k)
			return true, nil
		}
		fn(binary.BigEndian.Uint64(k), v)
		return true, nil
	})
	if err != nil {
		d.Problem("reading the %s records failed: %v", what, err)
	}
}

// counterAhead checks bucket's counter is at least highest, and returns
// the larger of the two.
func counterAhead(tx *Tx, bucket []byte, highest uint64, behind string, d *Diagnosis) uint64 {
	s, ok := tx.raw.(Sequencer)
	if !ok {
		return highest
	}
	seq, err := s.Sequence(bucket)
	if err != nil {
		d.Problem("the %s counter cannot be read: %v", bucket, err)
		return highest
	}
	if seq < highest {
		d.Problem(behind, seq, highest)
	}
	return max(seq, highest)
}

// listed reports up to ten ids, then how many more.
func listed(d *Diagnosis, ids []uint64, one, more string) {
	slices.Sort(ids)
	for i, id := range ids {
		if i == 10 {
			d.Problem(more, len(ids)-10)
			return
		}
		d.Problem(one, id)
	}
}

func stateName(s domain.State) string {
	if s == "" {
		return "without a state"
	}
	return string(s)
}
