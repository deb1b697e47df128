// Package migrate moves a host between a ledger file of its own and a
// lab's ledger that many hosts share, either way (chronos migrate).
package migrate

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"time"

	"github.com/chronos-gpu/chronos/core/admission"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/core/ledger"
	"github.com/chronos-gpu/chronos/core/proc"
	"github.com/chronos-gpu/chronos/storage"
)

var (
	// ErrMigrated means the target ledger already holds bookings of the host
	// being migrated: copying again would hold them twice.
	ErrMigrated = errors.New("the target ledger already holds this host's bookings")
	// ErrBlocked means a process of the host still works on the
	// source ledger by its ids (a `chronos run`, a waiter in line): moving
	// now would strand it.
	ErrBlocked = errors.New("the host still has work running on the source ledger")
)

// Report says what Host copied.
type Report struct {
	Host string `json:"host"`
	// From and To say which way it went: "file" or "etcd".
	From     string `json:"from"`
	To       string `json:"to"`
	Bookings int    `json:"bookings"`
	Live     int    `json:"live"`
	Events   int    `json:"events"`
	// Holds counts the bookings' usage records copied (holds, idle
	// time, warnings); Held the ended intervals hours quotas look back on;
	// Users the users whose fair-share usage was carried; Minutes the GPU
	// minutes of its history; Requests the line's past requests.
	Holds    int `json:"holds"`
	Held     int `json:"held"`
	Users    int `json:"users"`
	Minutes  int `json:"minutes"`
	Requests int `json:"requests"`
	// Policy is "copied", "kept the target's", "the same" or "none".
	Policy    string `json:"policy"`
	Inventory bool   `json:"inventory"`
	// IDs maps each booking's id in the source to its id in the target,
	// where ids are handed out afresh (the target's own bookings hold the
	// old ones).
	IDs map[uint64]uint64 `json:"ids"`
}

// A migration writes in transactions of bounded size: etcd takes at most
// 128 operations in one by default.
const (
	migrateBookingsPerTx = 40  // each: the booking, its live entry, the sequence
	migrateRecordsPerTx  = 100 // each: one record, and a sequence once
)

// hostPart is one host's part of a ledger, read at one instant: what
// Host carries.
type hostPart struct {
	parts     []domain.Partition
	events    []domain.Event
	requests  []domain.Request // those that left the line; a waiting one blocks
	usage     []domain.BookingUsage
	held      []heldOf
	users     []domain.UserUsage
	minutes   []domain.GPUMinute
	unbooked  []domain.UnbookedUse
	policy    domain.Policy
	hasPolicy bool
	inv       domain.Inventory
	hasInv    bool
}

type heldOf struct {
	uid int
	domain.Held
}

// Host moves a host between a ledger file of its own and a lab's
// ledger many hosts share, either way: a host's file into the lab's ledger
// (its bookings labelled with host), or host's part of the lab's ledger
// into a file of its own. It carries every booking (history included) with
// a new id, the audit trail of those bookings, their holds and usage, the
// intervals hours quotas count, the users' fair-share usage (added to what
// the target holds), the GPU minutes of the host's GPUs, the line's past,
// the GPU inventory, and the policy where the target has none. Claims are
// not copied: the acts they guarded are done. The source is only read.
//
// Host refuses (ErrMigrated) when the target already holds bookings of
// host, and (ErrBlocked) while a `chronos run` of the host holds a
// live booking or a request of the host waits in line: those processes
// watch the source by its ids. It writes in several transactions; if one
// fails, what was written stays and the error says how much. It reads
// back what it wrote and says if anything differs.
func Host(ctx context.Context, from, to storage.Store, host string) (Report, error) {
	fromShared, toShared := isShared(from), isShared(to)
	rep := Report{Host: host, IDs: map[uint64]uint64{}, Policy: "none", From: kindOf(fromShared), To: kindOf(toShared)}
	if !human.ValidHost(host) {
		return rep, domain.InputErr("host %q: give the name the host has in the lab (--host)", host)
	}
	if fromShared == toShared {
		return rep, domain.InputErr("migrate moves a host between its ledger file and a lab's ledger on etcd; %s and %s are both %s ledgers", from, to, rep.From)
	}
	// A file's records carry no host; a shared ledger's carry each host's.
	fromHost, toHost := "", host
	if fromShared {
		fromHost, toHost = host, ""
	}
	var src hostPart
	if err := from.View(ctx, func(tx *storage.Tx) error { return src.read(tx, fromHost, !fromShared) }); err != nil {
		return rep, fmt.Errorf("read %s: %w", from, err)
	}
	if err := src.blocked(from); err != nil {
		return rep, err
	}
	if err := migrateStart(ctx, to, src, host, toHost, &rep); err != nil {
		return rep, err
	}
	if err := src.write(ctx, to, toHost, &rep); err != nil {
		return rep, err
	}
	return rep, src.check(ctx, to, toHost, rep.IDs)
}

func isShared(s storage.Store) bool { _, ok := s.(storage.Presence); return ok }

func kindOf(shared bool) string {
	if shared {
		return "etcd"
	}
	return "file"
}

// read takes host's part of the ledger tx reads. The whole of a file is
// its host's: its unbooked use and events of no booking come too.
func (h *hostPart) read(tx *storage.Tx, host string, whole bool) error {
	all, err := tx.Partitions()
	if err != nil {
		return err
	}
	ids := map[uint64]bool{}
	for _, p := range all {
		if p.Host == host {
			h.parts = append(h.parts, p)
			ids[p.ID] = true
		}
	}
	events, err := tx.Events(0, 0)
	if err != nil {
		return err
	}
	h.events = slices.DeleteFunc(events, func(e domain.Event) bool { return !ids[e.Partition] && (!whole || e.Partition != 0) })
	reqs, err := tx.Requests()
	if err != nil {
		return err
	}
	h.requests = slices.DeleteFunc(reqs, func(r domain.Request) bool { return r.Host != host })
	usage, err := tx.BookingUsages()
	if err != nil {
		return err
	}
	for id, u := range usage {
		if ids[id] {
			h.usage = append(h.usage, u)
		}
	}
	slices.SortFunc(h.usage, func(a, b domain.BookingUsage) int { return int(a.Partition) - int(b.Partition) })
	err = tx.EachHeld(func(uid int, held domain.Held) error {
		if ids[held.Partition] {
			h.held = append(h.held, heldOf{uid, held})
		}
		return nil
	})
	if err != nil {
		return err
	}
	if h.users, err = tx.UserUsages(); err != nil {
		return err
	}
	if h.policy, h.hasPolicy, err = tx.Policy(); err != nil {
		return err
	}
	if h.inv, h.hasInv, err = tx.HostInventory(host); err != nil {
		return err
	}
	for _, d := range h.inv.Devices {
		ms, err := tx.GPUMinutes(time.Time{}, time.Unix(1<<40, 0), d.UUID)
		if err != nil {
			return err
		}
		h.minutes = append(h.minutes, ms...)
	}
	if whole {
		h.unbooked, err = tx.Unbooked(time.Time{})
	}
	return err
}

// blocked refuses a move that would strand a process of this host which
// works on the source by its ids: a live `chronos run` (it releases its
// booking there when its command ends) or a waiter in line (it is granted
// there).
func (h *hostPart) blocked(from storage.Store) error {
	for _, p := range h.parts {
		if p.State != domain.Live {
			continue
		}
		if f := proc.FateOf(p); f == proc.WrapperAlive || f == proc.WrapperGoneCommandRuns || f == proc.WrapperUnknown && p.Wrapper != nil {
			return fmt.Errorf("%w: booking %d (%s) is held by chronos run (pid %d on %s), which names it by its id in %s: migrate once it has ended",
				ErrBlocked, p.ID, human.Printable(p.User), p.Wrapper.PID, human.Printable(p.Wrapper.Host), from)
		}
	}
	for _, r := range h.requests {
		if r.State != domain.Waiting {
			continue
		}
		if f := proc.FateOfProcess(r.Waiter); f == proc.ProcessAlive || f == proc.ProcessUnknown {
			return fmt.Errorf("%w: request %d (%s) waits in the line of %s, and its waiter (pid %d) watches that ledger: let it start, or cancel it (chronos queue cancel %d), then migrate",
				ErrBlocked, r.ID, human.Printable(r.User), from, r.Waiter.PID, r.ID)
		}
	}
	// A request whose waiter is gone leaves the line at the next look; it
	// is not carried.
	h.requests = slices.DeleteFunc(h.requests, func(r domain.Request) bool { return r.State == domain.Waiting })
	return nil
}

// migrateStart refuses a target that holds host's bookings already, and
// writes the policy and the inventory.
func migrateStart(ctx context.Context, to storage.Store, src hostPart, host, toHost string, rep *Report) error {
	return to.Update(ctx, func(tx *storage.Tx) error {
		there, err := tx.Partitions()
		if err != nil {
			return err
		}
		if n := countFunc(there, func(p domain.Partition) bool { return p.Host == toHost }); n > 0 {
			what := "bookings of host " + host
			if toHost == "" {
				what = "bookings of its own"
			}
			return fmt.Errorf("%w: %s holds %d %s (a migration ran before, or this host booked there); nothing was copied",
				ErrMigrated, to, n, what)
		}
		old, ok, err := tx.Policy()
		switch {
		case err != nil:
			return err
		case !src.hasPolicy:
		case !ok:
			rep.Policy = "copied"
			if err := tx.PutPolicy(src.policy); err != nil {
				return err
			}
		case reflect.DeepEqual(old, src.policy):
			rep.Policy = "the same"
		default:
			rep.Policy = "kept the target's"
		}
		if !src.hasInv {
			return nil
		}
		rep.Inventory = true
		inv := src.inv
		inv.Host = toHost
		return tx.PutHostInventory(toHost, inv)
	})
}

// inChunks runs put over recs in transactions of at most n records each,
// counting into done what committed.
func inChunks[T any](ctx context.Context, to storage.Store, what string, recs []T, n int, done *int, put func(*storage.Tx, T) error) error {
	for chunk := range slices.Chunk(recs, n) {
		err := to.Update(ctx, func(tx *storage.Tx) error {
			for _, r := range chunk {
				if err := put(tx, r); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("%w (after copying %d of %d %s)", err, *done, len(recs), what)
		}
		*done += len(chunk)
	}
	return nil
}

// write copies h into to, labelled toHost, bookings first: every other
// record names its booking by the id write hands out.
func (h *hostPart) write(ctx context.Context, to storage.Store, toHost string, rep *Report) error {
	ids := rep.IDs
	err := inChunks(ctx, to, "bookings", h.parts, migrateBookingsPerTx, &rep.Bookings, func(tx *storage.Tx, p domain.Partition) error {
		old := p.ID
		p.ID, p.Host = 0, toHost
		if err := tx.PutPartition(&p); err != nil {
			return err
		}
		ids[old] = p.ID
		return nil
	})
	if err != nil {
		return err
	}
	rep.Live = countFunc(h.parts, func(p domain.Partition) bool { return p.State == domain.Live })
	steps := []func() error{
		func() error {
			return inChunks(ctx, to, "booking usages", h.usage, migrateRecordsPerTx, &rep.Holds, func(tx *storage.Tx, u domain.BookingUsage) error {
				u.Partition = ids[u.Partition]
				return tx.PutBookingUsage(u)
			})
		},
		func() error {
			return inChunks(ctx, to, "held intervals", h.held, migrateRecordsPerTx, &rep.Held, func(tx *storage.Tx, held heldOf) error {
				held.Partition = ids[held.Partition]
				return tx.AddHeld(held.uid, held.Held)
			})
		},
		func() error {
			return inChunks(ctx, to, "events", h.events, migrateRecordsPerTx, &rep.Events, func(tx *storage.Tx, e domain.Event) error {
				if e.Partition != 0 {
					e.Partition = ids[e.Partition]
				}
				return tx.AddEvent(e)
			})
		},
		func() error {
			return inChunks(ctx, to, "past requests", h.requests, migrateRecordsPerTx, &rep.Requests, func(tx *storage.Tx, r domain.Request) error {
				r.ID, r.Host = 0, toHost
				if r.Partition != 0 {
					r.Partition = ids[r.Partition]
				}
				return tx.PutRequest(&r)
			})
		},
		func() error {
			return inChunks(ctx, to, "users' usage", h.users, migrateRecordsPerTx, &rep.Users, addUserUsage)
		},
		func() error {
			return inChunks(ctx, to, "GPU minutes", h.minutes, migrateRecordsPerTx, &rep.Minutes, func(tx *storage.Tx, m domain.GPUMinute) error {
				m.Active, m.Idle = renumber(m.Active, ids), renumber(m.Idle, ids)
				return tx.PutGPUMinute(m)
			})
		},
		func() error {
			var n int
			return inChunks(ctx, to, "unbooked use", h.unbooked, migrateRecordsPerTx, &n, func(tx *storage.Tx, u domain.UnbookedUse) error {
				return tx.AddUnbooked(u.Day, u.UID, u.User, u.GPUTime)
			})
		},
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return fmt.Errorf("%w; every booking was copied", err)
		}
	}
	return nil
}

// addUserUsage adds u to what the target holds of its user: decayed usage
// adds up, each part decayed to the later of the two instants.
func addUserUsage(tx *storage.Tx, u domain.UserUsage) error {
	there, ok, err := tx.UserUsage(u.UID)
	if err != nil || !ok {
		if err == nil {
			err = tx.PutUserUsage(u)
		}
		return err
	}
	pol, err := ledger.Policy(tx)
	if err != nil {
		return err
	}
	at := admission.Later(u.At, there.At)
	there.GPUSeconds = admission.Decay(there.GPUSeconds, there.At, at, pol.HalfLife) + admission.Decay(u.GPUSeconds, u.At, at, pol.HalfLife)
	there.At = at
	return tx.PutUserUsage(there)
}

// renumber maps booking ids through ids, leaving out those not copied.
func renumber(in []uint64, ids map[uint64]uint64) []uint64 {
	var out []uint64
	for _, id := range in {
		if n, ok := ids[id]; ok {
			out = append(out, n)
		}
	}
	return out
}

// check reads back every booking and booking usage Host wrote and
// says which differ from the source. It reads them in batches (one round
// trip to etcd for many), so that a large ledger is checked within one
// transaction's time.
func (h *hostPart) check(ctx context.Context, to storage.Store, toHost string, ids map[uint64]uint64) error {
	return to.View(ctx, func(tx *storage.Tx) error {
		news := make([]uint64, len(h.parts))
		for i, p := range h.parts {
			news[i] = ids[p.ID]
		}
		got, err := tx.PartitionsByID(news)
		if err != nil {
			return fmt.Errorf("check: %w", err)
		}
		for i, want := range h.parts {
			old := want.ID
			want.ID, want.Host, want.V = news[i], toHost, storage.SchemaVersion
			if !reflect.DeepEqual(got[i], want) {
				return fmt.Errorf("check: booking %d (was %d) reads back as %+v, not %+v", want.ID, old, got[i], want)
			}
		}
		used := make([]uint64, len(h.usage))
		for i, u := range h.usage {
			used[i] = ids[u.Partition]
		}
		gotUsage, err := tx.UsageOf(used)
		if err != nil {
			return fmt.Errorf("check: %w", err)
		}
		for i, want := range h.usage {
			want.Partition = used[i]
			if !reflect.DeepEqual(gotUsage[i], want) {
				return fmt.Errorf("check: booking %d's usage (holds, idle time) reads back as %+v, not %+v", want.Partition, gotUsage[i], want)
			}
		}
		return nil
	})
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
