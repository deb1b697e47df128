package core

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/chronos-gpu/chronos/gpu"
	"github.com/chronos-gpu/chronos/storage"
)

// Request asks for a booking.
type Request struct {
	// Host is the machine whose GPU is asked for, in a ledger many hosts
	// share; empty means this host.
	Host     string
	Device   int
	Memory   Memory
	Duration time.Duration
	// Compute is an optional cap on the share of SMs, in percent (0: none).
	// It is applied through MPS where an MPS daemon runs.
	Compute int
	// For books on behalf of another user; root only. Empty: yourself.
	For string
}

// Create books a share of a device. Admission — never more than 100% of a
// device booked — is decided inside the transaction that writes the booking,
// so no interleaving of processes can overbook.
func (c *Client) Create(req Request) (*Partition, error) {
	owner := c.me
	if req.For != "" {
		if !c.me.Root() {
			return nil, fmt.Errorf("%w: booking for another user (--user %s)", ErrNotRoot, req.For)
		}
		var err error
		if owner, err = LookupUser(req.For); err != nil {
			return nil, err
		}
	}
	if req.Memory.Fraction == 0 && req.Memory.Bytes == 0 {
		return nil, inputErr("no memory share given")
	}
	if req.Memory.Bytes == 0 {
		if _, err := checkFraction(fmt.Sprint(req.Memory.Fraction), req.Memory.Fraction); err != nil {
			return nil, err
		}
	}
	if req.Duration < time.Second {
		return nil, inputErr("duration %s must be at least a second", req.Duration)
	}
	if req.Compute < 0 || req.Compute > 100 {
		return nil, inputErr("compute share %d%% must be between 1%% and 100%%", req.Compute)
	}
	host, err := c.gpuHost(req.Host)
	if err != nil {
		return nil, err
	}

	var out storage.Partition
	var room Availability
	create := func(fetched *storage.Inventory) error {
		return c.ledger.Update(func(tx *storage.Tx) error {
			inv, ok, err := tx.HostInventory(host)
			if err != nil {
				return err
			}
			if fetched != nil {
				inv, ok = *fetched, true
				if err := c.cacheInventory(tx, inv); err != nil {
					return err
				}
			}
			if !ok && host != c.host {
				return fmt.Errorf("%w: no GPUs of host %s are known: chronos has not run there yet", ErrNoDevice, host)
			}
			if !ok {
				return errNeedDevices
			}
			pol, err := policyIn(tx)
			if err != nil {
				return err
			}
			if req.Duration > pol.MaxLength {
				return fmt.Errorf("%w: %s asked, the most is %s", ErrTooLong, FormatDuration(req.Duration), FormatDuration(pol.MaxLength))
			}
			dev, err := findDevice(inv, req.Device)
			if err != nil {
				return err
			}
			share, bytes, err := shareOf(req.Memory, dev)
			if err != nil {
				return err
			}
			now := c.now()
			parts, err := tx.LivePartitions()
			if err != nil {
				return err
			}
			if used := bookedPPM(parts, host, req.Device, now); used+share > ppm {
				return c.overbooked(host, inv, parts, dev, share, now)
			}
			room = c.availabilityOf(tx, host, inv, parts, dev, now)
			if err := admitPhysical(pol, room, bytes); err != nil {
				return err
			}
			out = storage.Partition{
				Host: host, Device: dev.Index, DeviceUUID: dev.UUID, SharePPM: share, Bytes: bytes,
				ComputePct: req.Compute, UID: owner.UID, User: owner.User,
				Created: now, Expires: now.Add(req.Duration), State: storage.Live,
			}
			if err := tx.PutPartition(&out); err != nil {
				return err
			}
			detail := fmt.Sprintf("%s (%s) of GPU %s for %s", FormatPercent(share), FormatBytes(bytes), FormatGPU(host, dev.Index), FormatDuration(req.Duration))
			if owner != c.me {
				detail += " for " + owner.User
			}
			return c.event(tx, storage.EventCreated, out, detail)
		})
	}
	err = create(nil)
	if errors.Is(err, errNeedDevices) {
		inv, ierr := c.fetchInventory()
		if ierr != nil {
			return nil, ierr
		}
		if !c.mayCache(storage.Inventory{}, false, inv) {
			return nil, fmt.Errorf("%w: %s has no GPU inventory yet, and simulated GPUs are not recorded in a shared ledger: "+
				"run `chronos stats` on this machine once (as root, for simulated GPUs)", ErrNoDevice, c.ledger)
		}
		err = create(&inv)
	}
	if err != nil {
		return nil, err
	}
	p := c.wrap(out)
	p.Room = room
	return &p, nil
}

// admitPhysical refuses, when the policy says admit=physical, a booking
// of more memory than is physically free. With no fresh reading nothing is
// known and the booking is admitted on booked shares.
func admitPhysical(pol Policy, room Availability, bytes uint64) error {
	if pol.Admit != AdmitPhysical {
		return nil
	}
	if w := room.Warning(bytes); w != "" {
		return fmt.Errorf("%w (the policy admits only what is physically free): %s", ErrMemoryInUse, w)
	}
	return nil
}

func (c *Client) fetchInventory() (storage.Inventory, error) {
	if c.devices == nil {
		return storage.Inventory{}, fmt.Errorf("no GPU inventory: run `chronos stats` once on this machine so chronos can list its GPUs")
	}
	backend, devs, err := c.devices()
	if err != nil {
		return storage.Inventory{}, fmt.Errorf("list GPUs: %w", err)
	}
	return InventoryOf(backend, devs, c.now()), nil
}

// InventoryOf is the ledger's form of a backend's device list, as seen on
// this host.
func InventoryOf(backend string, devs []gpu.Device, now time.Time) storage.Inventory {
	inv := storage.Inventory{Backend: backend, Host: hostname(), Updated: now}
	for _, d := range devs {
		inv.Devices = append(inv.Devices, storage.Device{Index: d.Index, UUID: d.UUID, Name: d.Name, MemoryTotal: d.MemoryTotal})
	}
	return inv
}

func findDevice(inv storage.Inventory, index int) (storage.Device, error) {
	for _, d := range inv.Devices {
		if d.Index == index {
			return d, nil
		}
	}
	if len(inv.Devices) == 0 {
		return storage.Device{}, fmt.Errorf("%w: GPU %d (this machine has no GPUs)", ErrNoDevice, index)
	}
	return storage.Device{}, fmt.Errorf("%w: GPU %d (this machine has GPUs 0–%d)", ErrNoDevice, index, len(inv.Devices)-1)
}

// shareOf turns a requested amount into parts per million of the device
// and the bytes they stand for. Sizes round up, so a booking never holds less
// than was asked.
func shareOf(m Memory, dev storage.Device) (int64, uint64, error) {
	if m.Bytes > 0 {
		if dev.MemoryTotal == 0 {
			return 0, 0, inputErr("GPU %d's memory size is unknown; book a fraction (0.5) instead", dev.Index)
		}
		if m.Bytes > dev.MemoryTotal {
			return 0, 0, inputErr("%s is more than GPU %d has (%s)", FormatBytes(m.Bytes), dev.Index, FormatBytes(dev.MemoryTotal))
		}
		share := int64(math.Ceil(float64(m.Bytes) * ppm / float64(dev.MemoryTotal)))
		return share, m.Bytes, nil
	}
	share := int64(math.Round(m.Fraction * ppm))
	return share, bytesOf(share, dev.MemoryTotal), nil
}

// overbooked is the refusal of share on dev: what is free and what was
// asked (rounded so that the free figure never looks enough), who holds the
// rest and until when, and which GPUs have room for the request.
func (c *Client) overbooked(host string, inv storage.Inventory, parts []storage.Partition, dev storage.Device, share int64, now time.Time) error {
	free := max(0, ppm-bookedPPM(parts, host, dev.Index, now))
	var b strings.Builder
	fmt.Fprintf(&b, "GPU %s has %s (%s) free, %s asked", c.GPUName(host, dev.Index), FormatPercentDown(free), formatBytesDown(bytesOf(free, dev.MemoryTotal)), FormatPercentUp(share))
	var holders []storage.Partition
	for _, p := range parts {
		if p.Host == host && p.Device == dev.Index && p.LiveAt(now) {
			holders = append(holders, p)
		}
	}
	// The largest holders first; the ones ending soonest among equals.
	slices.SortFunc(holders, func(a, b storage.Partition) int {
		return cmp.Or(cmp.Compare(b.SharePPM, a.SharePPM), a.Expires.Compare(b.Expires))
	})
	const shown = 3
	for i, p := range holders[:min(len(holders), shown)] {
		sep := ", "
		if i == 0 {
			sep = ": held by "
		}
		fmt.Fprintf(&b, "%s%s (%s, #%d, until %s)", sep, p.User, FormatPercent(p.SharePPM), p.ID, FormatTime(p.Expires, now))
	}
	if len(holders) > shown {
		fmt.Fprintf(&b, " and %d more", len(holders)-shown)
	}
	var room []string
	for _, d := range inv.Devices {
		if f := ppm - bookedPPM(parts, host, d.Index, now); d.Index != dev.Index && f >= share {
			room = append(room, fmt.Sprintf("GPU %s has %s free", c.GPUName(host, d.Index), FormatPercentDown(f)))
		}
	}
	switch {
	case len(room) > 0:
		b.WriteString(". " + strings.Join(room, ", "))
	case len(inv.Devices) > 1:
		fmt.Fprintf(&b, ". No other GPU has %s free", FormatPercentUp(share))
	}
	return fmt.Errorf("%w: %s", ErrOverbooked, b.String())
}

func bytesOf(share int64, total uint64) uint64 {
	return uint64(float64(total) * float64(share) / ppm)
}

// gpuHost resolves the host a request names: none, or this host's own
// name, is this host; another name is that host's GPU, which only a ledger
// many hosts share holds.
func (c *Client) gpuHost(host string) (string, error) {
	switch {
	case host == "" || host == c.host:
		return c.host, nil
	case c.host == "" && host == HostName():
		return "", nil
	case c.host == "":
		return "", fmt.Errorf("%w: %s is another host, and this ledger (%s) is this host's alone; a lab of hosts shares one ledger on etcd (see chronos init --store)", ErrNoDevice, host, c.ledger)
	}
	return host, nil
}

// GPUName names a GPU as people type it: its index on this host,
// host:index on another.
func (c *Client) GPUName(host string, device int) string {
	return FormatGPU(c.otherHost(host), device)
}

// otherHost is host when it is another host, else empty.
func (c *Client) otherHost(host string) string {
	if host == c.host {
		return ""
	}
	return host
}

func bookedPPM(parts []storage.Partition, host string, device int, now time.Time) int64 {
	var sum int64
	for _, p := range parts {
		if p.Host == host && p.Device == device && p.LiveAt(now) {
			sum += p.SharePPM
		}
	}
	return sum
}

// List returns bookings, oldest first: the live ones, or with all, every
// booking ever made that the ledger still holds.
func (c *Client) List(all bool) ([]Partition, error) {
	var out []Partition
	err := c.ledger.View(func(tx *storage.Tx) error {
		read := tx.LivePartitions
		if all {
			read = tx.Partitions
		}
		parts, err := read()
		if err != nil {
			return err
		}
		seen := c.seenIn(tx)
		now := c.now()
		for _, p := range parts {
			if all || p.LiveAt(now) {
				out = append(out, seen(p))
			}
		}
		return withUsage(tx, out, func(Partition) bool { return true })
	})
	return out, err
}

// withUsage fills in what monitors measured of the bookings of parts that
// want it, in one read: on etcd a read is a round trip.
func withUsage(tx *storage.Tx, parts []Partition, want func(Partition) bool) error {
	var ids []uint64
	var at []int
	for i, p := range parts {
		if want(p) {
			ids, at = append(ids, p.ID), append(at, i)
		}
	}
	usage, err := tx.UsageOf(ids)
	for i := range usage {
		parts[at[i]].Usage = usage[i]
	}
	return err
}

// Get returns one booking, live or not.
func (c *Client) Get(id uint64) (*Partition, error) {
	var w Partition
	err := c.ledger.View(func(tx *storage.Tx) error {
		p, err := getPartition(tx, id)
		w = c.seenIn(tx)(p)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &w, nil
}

func getPartition(tx *storage.Tx, id uint64) (storage.Partition, error) {
	p, err := tx.Partition(id)
	if errors.Is(err, storage.ErrNotFound) {
		return p, fmt.Errorf("%w: %d", ErrNoPartition, id)
	}
	return p, err
}

// mine fetches a live partition the client may change: its owner's, or any
// for root.
func (c *Client) mine(tx *storage.Tx, id uint64, verb string) (storage.Partition, error) {
	p, err := getPartition(tx, id)
	if err != nil {
		return p, err
	}
	if p.UID != c.me.UID && !c.me.Root() {
		return p, fmt.Errorf("%w: %d belongs to %s; only they or root may %s it", ErrNotOwner, id, p.User, verb)
	}
	if now := c.now(); !p.LiveAt(now) {
		state := p.State
		if state == storage.Live {
			state = storage.Expired
		}
		return p, fmt.Errorf("%w: %d is %s", ErrNotLive, id, state)
	}
	return p, nil
}

// Release ends a live booking now. Its owner or root may.
func (c *Client) Release(id uint64) (Partition, error) {
	var p storage.Partition
	err := c.ledger.Update(func(tx *storage.Tx) error {
		var err error
		if p, err = c.mine(tx, id, "release"); err != nil {
			return err
		}
		p.State, p.Ended = storage.Released, c.now()
		if err := tx.PutPartition(&p); err != nil {
			return err
		}
		return c.event(tx, storage.EventReleased, p, "")
	})
	return c.wrap(p), err
}

// Extend moves a live booking's deadline later by d. Its owner or root may;
// the time left afterwards may not exceed the policy's maximum length.
func (c *Client) Extend(id uint64, d time.Duration) (Partition, error) {
	if d < time.Second {
		return Partition{}, inputErr("extension %s must be at least a second", d)
	}
	var p storage.Partition
	err := c.ledger.Update(func(tx *storage.Tx) error {
		var err error
		if p, err = c.mine(tx, id, "extend"); err != nil {
			return err
		}
		pol, err := policyIn(tx)
		if err != nil {
			return err
		}
		expires := p.Expires.Add(d)
		if left := expires.Sub(c.now()); left > pol.MaxLength {
			return fmt.Errorf("%w: that would leave %s, the most is %s", ErrTooLong, FormatDuration(left), FormatDuration(pol.MaxLength))
		}
		p.Expires, p.Warned = expires, false
		if err := tx.PutPartition(&p); err != nil {
			return err
		}
		return c.event(tx, storage.EventExtended, p, FormatDuration(d)+" more, until "+expires.UTC().Format(time.RFC3339))
	})
	return c.wrap(p), err
}

// Availability is how much of a device is free to book now, and next to
// it what its memory physically holds.
type Availability struct {
	// Host is the device's host when it is another host's; empty for
	// this host's.
	Host      string
	Device    storage.Device
	FreePPM   int64
	FreeBytes uint64
	Bookings  int
	Physical  PhysicalMemory
}

func (c *Client) availabilityOf(tx *storage.Tx, host string, inv storage.Inventory, parts []storage.Partition, d storage.Device, now time.Time) Availability {
	free := max(0, ppm-bookedPPM(parts, host, d.Index, now))
	n := 0
	for _, p := range parts {
		if p.Host == host && p.Device == d.Index && p.LiveAt(now) {
			n++
		}
	}
	a := Availability{Host: c.otherHost(host), Device: d, FreePPM: free, FreeBytes: bytesOf(free, d.MemoryTotal), Bookings: n}
	if host == c.host {
		// The stored readings are this host's GPUs'.
		a.Physical = physicalIn(tx, inv, d, now)
	}
	return a
}

func (a Availability) String() string {
	return fmt.Sprintf("%s (%s) free on GPU %s", FormatPercentDown(a.FreePPM), formatBytesDown(a.FreeBytes), FormatGPU(a.Host, a.Device.Index))
}

// Available says how much of every device (device < 0) or one device of
// this host is free.
func (c *Client) Available(device int) ([]Availability, error) {
	return c.AvailableOn("", device)
}

// AvailableOn says how much of every device (device < 0) or one device of
// host ("": this host) is free.
func (c *Client) AvailableOn(host string, device int) ([]Availability, error) {
	host, err := c.gpuHost(host)
	if err != nil {
		return nil, err
	}
	var inv storage.Inventory
	if host == c.host {
		inv, err = c.Inventory()
	} else {
		var ok bool
		err = c.ledger.View(func(tx *storage.Tx) error {
			inv, ok, err = tx.HostInventory(host)
			return err
		})
		if err == nil && !ok {
			err = fmt.Errorf("%w: no GPUs of host %s are known: chronos has not run there yet", ErrNoDevice, host)
		}
	}
	if err != nil {
		return nil, err
	}
	var out []Availability
	err = c.ledger.View(func(tx *storage.Tx) error {
		parts, err := tx.LivePartitions()
		if err != nil {
			return err
		}
		now := c.now()
		for _, d := range inv.Devices {
			if device >= 0 && d.Index != device {
				continue
			}
			out = append(out, c.availabilityOf(tx, host, inv, parts, d, now))
		}
		return nil
	})
	if err == nil && device >= 0 && len(out) == 0 {
		_, err = findDevice(inv, device)
	}
	return out, err
}

// Inventory returns the cached device list, asking the device source (and
// caching its answer) when the ledger has none.
func (c *Client) Inventory() (storage.Inventory, error) {
	var inv storage.Inventory
	var ok bool
	err := c.ledger.View(func(tx *storage.Tx) error {
		var err error
		inv, ok, err = tx.HostInventory(c.host)
		return err
	})
	if err != nil || ok {
		return inv, err
	}
	if inv, err = c.fetchInventory(); err != nil {
		return inv, err
	}
	if err := c.SaveInventory(inv); err != nil && !cannotWrite(err) {
		return inv, err
	}
	return inv, nil
}

// SaveInventory caches the device list (see cacheInventory) when it differs
// from the one stored, looking first without writing, so that watchers are
// not woken by a write that changes nothing.
func (c *Client) SaveInventory(inv storage.Inventory) error {
	same := false
	err := c.ledger.View(func(tx *storage.Tx) error {
		old, ok, err := tx.HostInventory(c.host)
		same = err == nil && ok && (sameInventory(old, inv) || !c.mayCache(old, ok, inv))
		return nil
	})
	if err != nil || same {
		return err
	}
	return c.ledger.Update(func(tx *storage.Tx) error { return c.cacheInventory(tx, inv) })
}

// Events returns audit events numbered after seq (0: from the start), at most
// limit (0: all).
func (c *Client) Events(after uint64, limit int) ([]storage.Event, error) {
	var out []storage.Event
	err := c.ledger.View(func(tx *storage.Tx) error {
		var err error
		out, err = tx.Events(after, limit)
		return err
	})
	return out, err
}

// LastEvents returns the newest n audit events, oldest first, reading only
// those: the trail grows for as long as the machine is used.
func (c *Client) LastEvents(n int) ([]storage.Event, error) { return c.FindEvents(EventFilter{}, n) }

// Recent returns the live bookings and those made within the window (zero:
// long enough that every booking that can still have processes is in it):
// what attributing GPU processes needs, without reading the whole history.
// Live bookings come with their usage.
func (c *Client) Recent(window time.Duration) ([]Partition, error) {
	var out []Partition
	err := c.ledger.View(func(tx *storage.Tx) error {
		if window <= 0 {
			pol, err := policyIn(tx)
			if err != nil {
				return err
			}
			window = pol.MaxLength + attributionWindow
		}
		parts, err := tx.PartitionsSince(c.now().Add(-window))
		seen := c.seenIn(tx)
		for _, p := range parts {
			out = append(out, seen(p))
		}
		if err != nil {
			return err
		}
		// Whether each live booking sits idle; what ended has no idle to show.
		now := c.now()
		return withUsage(tx, out, func(p Partition) bool { return p.LiveAt(now) })
	})
	return out, err
}
