package core

import (
	"errors"
	"fmt"
	"reflect"
	"slices"

	"github.com/chronos-gpu/chronos/storage"
)

// ErrMigrated means the target ledger already holds bookings of the host
// being migrated: copying again would hold them twice.
var ErrMigrated = errors.New("the target ledger already holds this host's bookings")

// MigrationReport says what Migrate copied.
type MigrationReport struct {
	Host     string `json:"host"`
	Bookings int    `json:"bookings"`
	Live     int    `json:"live"`
	Events   int    `json:"events"`
	// Policy is "copied", "kept the target's", "the same" or "none".
	Policy    string `json:"policy"`
	Inventory bool   `json:"inventory"`
	// IDs maps each booking's id in the file to its id in the target, where
	// ids are handed out afresh (other hosts' bookings hold the old ones).
	IDs map[uint64]uint64 `json:"ids"`
}

// A migration writes in transactions of bounded size: etcd takes at most
// 128 operations in one by default.
const (
	migrateBookingsPerTx = 40  // each: the booking, its live entry, the sequence
	migrateEventsPerTx   = 100 // each: the event, and the sequence once
)

// Migrate copies a host's ledger file into a ledger many hosts share, as
// that host's: every booking (history included) with host set and a new
// id, the audit trail with its bookings' new ids, the GPU inventory, and
// the policy where the target has none. Claims are not copied: the acts
// they guarded are done. The file is only read.
//
// Migrate refuses (ErrMigrated) when the target already holds bookings of
// host. It writes in several transactions; if one fails, what was written
// stays and the error says how much.
func Migrate(from, to storage.Store, host string) (MigrationReport, error) {
	rep := MigrationReport{Host: host, IDs: map[uint64]uint64{}, Policy: "none"}
	if !validHost(host) {
		return rep, inputErr("host %q: give the name the host has in the lab (--host)", host)
	}
	var parts []storage.Partition
	var events []storage.Event
	var pol storage.Policy
	var inv storage.Inventory
	var hasPol, hasInv bool
	err := from.View(func(tx *storage.Tx) error {
		var err error
		if parts, err = tx.Partitions(); err != nil {
			return err
		}
		if events, err = tx.Events(0, 0); err != nil {
			return err
		}
		if pol, hasPol, err = tx.Policy(); err != nil {
			return err
		}
		inv, hasInv, err = tx.Inventory()
		return err
	})
	if err != nil {
		return rep, fmt.Errorf("read %s: %w", from, err)
	}

	err = to.Update(func(tx *storage.Tx) error {
		there, err := tx.Partitions()
		if err != nil {
			return err
		}
		if n := countFunc(there, func(p storage.Partition) bool { return p.Host == host }); n > 0 {
			return fmt.Errorf("%w: %s holds %d bookings of host %s (a migration ran before, or this host booked there); nothing was copied",
				ErrMigrated, to, n, host)
		}
		old, ok, err := tx.Policy()
		switch {
		case err != nil:
			return err
		case !hasPol:
		case !ok:
			rep.Policy = "copied"
			if err := tx.PutPolicy(pol); err != nil {
				return err
			}
		case reflect.DeepEqual(old, pol):
			rep.Policy = "the same"
		default:
			rep.Policy = "kept the target's"
		}
		if hasInv {
			rep.Inventory = true
			return tx.PutHostInventory(host, inv)
		}
		return nil
	})
	if err != nil {
		return rep, err
	}

	for chunk := range slices.Chunk(parts, migrateBookingsPerTx) {
		err := to.Update(func(tx *storage.Tx) error {
			for _, p := range chunk {
				oldID := p.ID
				p.ID, p.Host = 0, host
				if err := tx.PutPartition(&p); err != nil {
					return err
				}
				rep.IDs[oldID] = p.ID
			}
			return nil
		})
		if err != nil {
			return rep, fmt.Errorf("%w (after copying %d of %d bookings)", err, rep.Bookings, len(parts))
		}
		rep.Bookings += len(chunk)
		rep.Live += countFunc(chunk, func(p storage.Partition) bool { return p.State == storage.Live })
	}
	for chunk := range slices.Chunk(events, migrateEventsPerTx) {
		err := to.Update(func(tx *storage.Tx) error {
			for _, e := range chunk {
				if e.Partition != 0 {
					e.Partition = rep.IDs[e.Partition]
				}
				if err := tx.AddEvent(e); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return rep, fmt.Errorf("%w (after copying every booking and %d of %d events)", err, rep.Events, len(events))
		}
		rep.Events += len(chunk)
	}
	return rep, nil
}

func countFunc[T any](s []T, f func(T) bool) int {
	n := 0
	for _, v := range s {
		if f(v) {
			n++
		}
	}
	return n
}
