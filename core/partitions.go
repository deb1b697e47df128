package core

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"os"
	"time"

	"github.com/chronos-gpu/chronos/core/admission"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/core/ledger"
	"github.com/chronos-gpu/chronos/core/policy"
	"github.com/chronos-gpu/chronos/core/proc"
	"github.com/chronos-gpu/chronos/core/setup"
	"github.com/chronos-gpu/chronos/gpu"
	"github.com/chronos-gpu/chronos/storage"
)

// Request asks for a booking.
type Request struct {
	// Host is the machine whose GPU is asked for, in a ledger many hosts
	// share; empty means this host.
	Host string
	// Device is the GPU's index on that host, or AnyDevice for whichever
	// of its GPUs has room first.
	Device int
	// Devices are the GPUs of a booking of several named ones (0-3), in
	// order, Device the first; Count how many of any of the host's GPUs
	// (any --gpus 4), the best connected with room. A booking of several
	// holds the same memory share of each, all from one start to one end.
	Devices  []int
	Count    int
	Memory   human.Memory
	Duration time.Duration
	// Compute is an optional cap on the share of SMs, in percent (0: none).
	// It is applied through MPS where an MPS daemon runs.
	Compute int
	// For books on behalf of another user; root only. Empty: yourself.
	For string
	// Start books ahead: the booking holds its share from Start (zero:
	// now) until Start + Duration.
	Start time.Time
}

// Create books a share of a device, now or ahead of time. Admission — at
// no instant of the booking more than 100% of the device booked, the
// owner's quotas kept, no request waiting ahead in line delayed — is
// decided inside the transaction that writes the booking, so no
// interleaving of processes can overbook.
func (c *Client) Create(req Request) (*Partition, error) {
	p, _, err := c.submit(req, nil)
	return p, err
}

// submit books req, or with wait set, puts it in the waiting line when it
// cannot start yet: the request is checked, then admitted in one
// transaction (after reading the machine's GPUs once, when the ledger has
// none yet), then the rest of the line is placed.
func (c *Client) submit(req Request, wait *admission.WaitOptions) (*Partition, *admission.QueueEntry, error) {
	s, err := c.newSubmission(req, wait)
	if err != nil {
		return nil, nil, err
	}
	err = c.ledger.Update(c.ctx, func(tx *storage.Tx) error { return c.admit(tx, s, nil) })
	if errors.Is(err, domain.ErrNeedDevices) {
		inv, ierr := c.fetchInventory()
		if ierr != nil {
			return nil, nil, ierr
		}
		if !c.mayCache(domain.Inventory{}, false, inv) {
			return nil, nil, fmt.Errorf("%w: %s has no GPU inventory yet, and simulated GPUs are not recorded in a shared ledger: "+
				"run `chronos stats` on this machine once (as root, for simulated GPUs)", domain.ErrNoDevice, c.ledger)
		}
		err = c.ledger.Update(c.ctx, func(tx *storage.Tx) error { return c.admit(tx, s, &inv) })
	}
	if err != nil {
		return nil, nil, err
	}
	c.PlaceRest(s.more)
	if s.out == nil {
		return nil, s.entry, nil
	}
	p := c.wrap(*s.out)
	p.Room = s.room
	return &p, nil, nil
}

// submission is a checked request on its way through admission, and what
// the transaction that admitted it made of it.
type submission struct {
	req    Request
	wait   *admission.WaitOptions // nil: book now or refuse
	owner  domain.Identity
	ask    domain.Request // the request as the line would keep it
	waiter domain.Process // the process that waits, when wait is set

	// Set by admit (each try of the transaction starts them afresh).
	out   *domain.Partition     // the booking made, or nil
	entry *admission.QueueEntry // the place in line taken, or nil
	room  Availability          // what the GPU had room for, for a booking that starts now
	more  bool                  // placement left for a transaction of its own
}

// newSubmission checks req as given, before any transaction: who it is
// for, its share, length and compute, its GPU's host, and the process that
// will wait.
func (c *Client) newSubmission(req Request, wait *admission.WaitOptions) (*submission, error) {
	s := &submission{req: req, wait: wait, owner: c.me}
	if req.For != "" {
		if !c.me.Root() {
			return nil, fmt.Errorf("%w: booking for another user (--user %s)", domain.ErrNotRoot, req.For)
		}
		var err error
		if s.owner, err = proc.LookupUser(req.For); err != nil {
			return nil, err
		}
	}
	if req.Memory.Fraction == 0 && req.Memory.Bytes == 0 {
		return nil, domain.InputErr("no memory share given")
	}
	if req.Memory.Bytes == 0 {
		if _, err := human.CheckFraction(fmt.Sprint(req.Memory.Fraction), req.Memory.Fraction); err != nil {
			return nil, err
		}
	}
	if req.Duration < time.Second {
		return nil, domain.InputErr("duration %s must be at least a second", req.Duration)
	}
	if req.Compute < 0 || req.Compute > 100 {
		return nil, domain.InputErr("compute share %d%% must be between 1%% and 100%%", req.Compute)
	}
	if err := checkGPUs(req); err != nil {
		return nil, err
	}
	host, err := c.GPUHost(req.Host)
	if err != nil {
		return nil, err
	}
	s.ask = domain.Request{Host: host, Device: req.Device, Bytes: req.Memory.Bytes, Duration: req.Duration, ComputePct: req.Compute,
		UID: s.owner.UID, User: s.owner.User}
	if len(req.Devices) > 1 {
		s.ask.Devices = req.Devices
	}
	if req.Device == domain.AnyDevice && req.Count > 1 {
		s.ask.Count = req.Count
	}
	if req.Memory.Bytes == 0 {
		s.ask.SharePPM = int64(math.Round(req.Memory.Fraction * human.Ppm))
	}
	if wait != nil {
		if s.waiter, err = proc.ThisProcess(cmp.Or(wait.PID, os.Getpid())); err != nil {
			return nil, fmt.Errorf("wait in line: name the waiting process: %w", err)
		}
	}
	return s, nil
}

// checkGPUs checks the GPUs a request names against how many it asks
// for: a list and --gpus must agree, and one GPU named is one GPU.
func checkGPUs(req Request) error {
	n := max(1, len(req.Devices))
	switch {
	case req.Device < domain.AnyDevice:
		return domain.InputErr("GPU %d: give an index (0, 1, …) or any", req.Device)
	case len(req.Devices) > 0 && req.Devices[0] != req.Device:
		return domain.InputErr("GPU %d is not the first of the GPUs %s", req.Device, human.FormatGPUs("", req.Devices))
	case req.Count < 0:
		return domain.InputErr("--gpus %d: ask for 1 GPU or more", req.Count)
	case req.Count > gpu.MaxGPUIndex+1:
		return domain.InputErr("--gpus %d: no host has that many GPUs", req.Count)
	case req.Count == 0, req.Device == domain.AnyDevice:
	case req.Count != n && len(req.Devices) > 0:
		return domain.InputErr("GPUs %s are %d, but --gpus asks for %d: name the GPUs or give how many of any (any --gpus %d)",
			human.FormatGPUs("", req.Devices), n, req.Count, req.Count)
	case req.Count != n:
		return domain.InputErr("GPU %d is one GPU, but --gpus asks for %d: name them (%d-%d) or ask for any (any --gpus %d)",
			req.Device, req.Count, req.Device, req.Device+req.Count-1, req.Count)
	}
	return nil
}

// admit decides s in tx: booked now or ahead, refused, or (with wait) in
// line; then it places whoever else the change lets start. fetched is the
// machine's inventory read outside the transaction, when the ledger had
// none (admit asks for it with ErrNeedDevices).
func (c *Client) admit(tx *storage.Tx, s *submission, fetched *domain.Inventory) error {
	s.out, s.entry, s.more = nil, nil, false
	host := s.ask.Host
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
		return fmt.Errorf("%w: no GPUs of host %s are known: chronos has not run there yet", domain.ErrNoDevice, host)
	}
	if !ok {
		return domain.ErrNeedDevices
	}
	now := c.now()
	r := s.ask
	r.Created = now
	start := now
	if !s.req.Start.IsZero() {
		if s.req.Start.Before(now.Add(-human.StartSlack)) {
			return domain.InputErr("the start %s has passed", human.FormatTime(s.req.Start, now))
		}
		start = admission.Later(s.req.Start, now)
		r.NotBefore = start
	}
	b, err := ledger.Books(tx, c.host, now)
	if err != nil {
		return err
	}
	if s.owner.UID != c.me.UID {
		b.OnBehalf = s.owner.User
	}
	if err := admission.CheckLength(b.LimitsFor(s.owner.UID, s.owner.User), s.req.Duration, start, now); err != nil {
		return err
	}
	plan, err := b.Plan(&r)
	if err != nil {
		return err
	}
	switch {
	case plan.CandPart != nil:
		err = c.bookAdmitted(tx, s, b, plan.CandPart, inv, now)
	case s.wait == nil:
		err = b.Refusal(plan.Cal, plan.CandBlk, plan.CandFit, start, true)
	default:
		err = c.joinLine(tx, s, b, r, *plan.Cand, now)
	}
	if err != nil {
		return err
	}
	s.more, err = c.applyLine(tx, b, plan)
	return err
}

// bookAdmitted writes the booking the plan admitted, once what its GPU
// physically holds allows it (for a booking that starts now).
func (c *Client) bookAdmitted(tx *storage.Tx, s *submission, b *admission.Books, out *domain.Partition, inv domain.Inventory, now time.Time) error {
	if !out.Start.After(now) {
		cal := admission.CalendarOf(b.Parts)
		for i, d := range out.GPUs() {
			if i > 0 && b.Pol.Admit != policy.AdmitPhysical {
				break // the first GPU's room is what create shows; the rest only admit=physical reads
			}
			dev, _ := admission.FindDevice(inv, d)
			room := c.AvailabilityOf(tx, s.ask.Host, inv, cal, b.Parts, b.Line, dev, now)
			if err := admitPhysical(b.Pol, room, out.Bytes); err != nil {
				return err
			}
			if i == 0 {
				s.room = room
			}
		}
	}
	if err := c.book(tx, out, s.owner, ""); err != nil {
		return err
	}
	s.out = out
	return nil
}

// joinLine puts r in the waiting line at the place the plan gave it.
// Waiting that long is booking that far ahead: the policy's limit on how
// far ahead holds for both (it queued with an ETA a week out while --at
// that far was refused).
func (c *Client) joinLine(tx *storage.Tx, s *submission, b *admission.Books, r domain.Request, e admission.QueueEntry, now time.Time) error {
	if eta := e.ETA; !eta.IsZero() {
		if err := admission.CheckLength(b.LimitsFor(s.owner.UID, s.owner.User), s.req.Duration, eta, now); err != nil {
			return fmt.Errorf("it would wait in line until %s: %w", human.FormatTime(eta, now), err)
		}
	}
	r.Waiter = s.waiter
	if s.wait.Timeout > 0 {
		r.Deadline = now.Add(s.wait.Timeout)
	}
	r.State = domain.Waiting
	if err := tx.PutRequest(&r); err != nil {
		return err
	}
	e.Request = r
	s.entry = &e
	why := fmt.Sprintf("waits at position %d, should start at %s: %s", e.Position, human.FormatTime(e.ETA, now), e.Reason)
	return c.lineEvent(tx, domain.EventQueued, r, why)
}

// admitPhysical refuses, when the policy says admit=physical, a booking
// of more memory than is physically free. With no fresh reading nothing is
// known and the booking is admitted on booked shares.
func admitPhysical(pol domain.Policy, room Availability, bytes uint64) error {
	if pol.Admit != policy.AdmitPhysical {
		return nil
	}
	if w := room.Warning(bytes); w != "" {
		return fmt.Errorf("%w (the policy admits only what is physically free): %s", domain.ErrMemoryInUse, w)
	}
	return nil
}

func (c *Client) fetchInventory() (domain.Inventory, error) {
	if c.devices == nil {
		return domain.Inventory{}, fmt.Errorf("no GPU inventory: run `chronos stats` once on this machine so chronos can list its GPUs")
	}
	l, err := c.devices()
	if err != nil {
		return domain.Inventory{}, fmt.Errorf("list GPUs: %w", err)
	}
	return ledger.WithTopology(ledger.InventoryOf(l.Backend, l.Devices, c.now()), l.Topology), nil
}

// GPUHost resolves the host a request names: none, or this host's own
// name, is this host; another name is that host's GPU, which only a ledger
// many hosts share holds.
func (c *Client) GPUHost(host string) (string, error) {
	switch {
	case host == "" || host == c.host:
		return c.host, nil
	case c.host == "" && host == setup.HostName():
		return "", nil
	case c.host == "":
		return "", fmt.Errorf("%w: %s is another host, and this ledger (%s) is this host's alone; a lab of hosts shares one ledger on etcd (see chronos init --store)", domain.ErrNoDevice, host, c.ledger)
	}
	return host, nil
}

// GPUName names a GPU as people type it: its index on this host,
// host:index on another.
func (c *Client) GPUName(host string, device int) string {
	return admission.GpuName(c.host, host, device)
}

// GPUsName names GPUs of a host as people type them: 0-3 on this host,
// host:0,1 on another.
func (c *Client) GPUsName(host string, devices []int) string {
	return admission.GpusName(c.host, host, devices)
}

// GPUName names the booking's GPUs as GPUsName does (host:index for
// another host's GPU; 0-3 for several).
func (p Partition) GPUName() string {
	if len(p.Devices) > 1 {
		if p.client == nil {
			return human.FormatGPUs(p.Host, p.Devices)
		}
		return p.client.GPUsName(p.Host, p.Devices)
	}
	if p.client == nil {
		return human.FormatGPU(p.Host, p.Device)
	}
	return p.client.GPUName(p.Host, p.Device)
}

// OtherHost is host when it is another host, else empty.
func (c *Client) OtherHost(host string) string {
	if host == c.host {
		return ""
	}
	return host
}

// List returns bookings, oldest first: the live and upcoming ones, or with
// all, every booking ever made that the ledger still holds.
func (c *Client) List(all bool) ([]Partition, error) {
	var out []Partition
	err := c.ledger.View(c.ctx, func(tx *storage.Tx) error {
		var err error
		out, err = c.ListIn(tx, all, c.now())
		return err
	})
	return out, err
}

// ListIn is List in tx, as of now.
func (c *Client) ListIn(tx *storage.Tx, all bool, now time.Time) ([]Partition, error) {
	read := tx.LivePartitions
	if all {
		read = tx.Partitions
	}
	parts, err := read()
	if err != nil {
		return nil, err
	}
	var out []Partition
	seen := c.seenIn(tx)
	for _, p := range parts {
		if all || !p.EndedAt(now) {
			out = append(out, seen(p))
		}
	}
	return out, withUsage(tx, out, func(Partition) bool { return true })
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
	err := c.ledger.View(c.ctx, func(tx *storage.Tx) error {
		p, err := getPartition(tx, id)
		w = c.seenIn(tx)(p)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &w, nil
}

func getPartition(tx *storage.Tx, id uint64) (domain.Partition, error) {
	p, err := tx.Partition(id)
	if errors.Is(err, storage.ErrNotFound) {
		return p, fmt.Errorf("%w: %d", domain.ErrNoPartition, id)
	}
	return p, err
}

// Mine fetches a live or upcoming partition the client may change: its
// owner's, or any for root.
func (c *Client) Mine(tx *storage.Tx, id uint64, verb string) (domain.Partition, error) {
	p, err := getPartition(tx, id)
	if err != nil {
		return p, err
	}
	if !c.me.MayChange(p.UID) {
		return p, fmt.Errorf("%w: %d belongs to %s; only they or root may %s it", domain.ErrNotOwner, id, p.User, verb)
	}
	if now := c.now(); p.EndedAt(now) {
		state := p.State
		if state == domain.Live {
			state = domain.Expired
		}
		return p, fmt.Errorf("%w: %d is %s", domain.ErrNotLive, id, state)
	}
	return p, nil
}

// Release ends a live booking now (or cancels an upcoming one), and in the
// same transaction gives the room to the waiting line. Its owner or root
// may.
func (c *Client) Release(id uint64) (Partition, error) {
	var p domain.Partition
	var more bool
	err := c.ledger.Update(c.ctx, func(tx *storage.Tx) error {
		var err error
		if p, err = c.Mine(tx, id, "release"); err != nil {
			return err
		}
		if err := ledger.EndBooking(tx, &p, domain.Released, c.now(), ledger.PolicyOnce(tx)); err != nil {
			return err
		}
		if err := c.RecordEvent(tx, domain.EventReleased, p, ""); err != nil {
			return err
		}
		more, err = c.PlaceLine(tx)
		return err
	})
	if err == nil {
		c.PlaceRest(more)
	}
	return c.wrap(p), err
}

// Extend moves a live or upcoming booking's deadline later by d. Its owner
// or root may; the time left afterwards may not exceed the policy's
// maximum length, and the added time is admitted like a new booking.
func (c *Client) Extend(id uint64, d time.Duration) (Partition, error) {
	if d < time.Second {
		return Partition{}, domain.InputErr("extension %s must be at least a second", d)
	}
	var p domain.Partition
	err := c.ledger.Update(c.ctx, func(tx *storage.Tx) error {
		var err error
		if p, err = c.Mine(tx, id, "extend"); err != nil {
			return err
		}
		now := c.now()
		b, err := ledger.Books(tx, c.host, now)
		if err != nil {
			return err
		}
		if p.UID != c.me.UID {
			b.OnBehalf = p.User
		}
		lim := b.LimitsFor(p.UID, p.User)
		expires := p.Expires.Add(d)
		if left := expires.Sub(admission.Later(now, p.Start)); left > lim.MaxLength && !lim.Exempt {
			return fmt.Errorf("%w: that would leave %s, the most is %s", domain.ErrTooLong, human.FormatDuration(left), human.FormatDuration(lim.MaxLength))
		}
		// The added time is a new interval on the calendar: it must fit
		// beside the bookings (some may start ahead), the owner's quotas,
		// and the places kept for requests waiting in line.
		plan, err := b.Plan(nil)
		if err != nil {
			return err
		}
		cal := plan.Cal
		if !plan.HeldOf[p.UID] {
			held, err := b.Held(p.UID)
			if err != nil {
				return err
			}
			cal = append(cal, held...)
		}
		more, fit := b.ExtensionOf(p, d)
		if blk := cal.Check(more, p.Expires); blk != nil {
			return fmt.Errorf("extend %d by %s: %w", id, human.FormatDuration(d), b.Refusal(cal, blk, fit, p.Expires, false))
		}
		p.Expires, p.Warned = expires, false
		if err := tx.PutPartition(&p); err != nil {
			return err
		}
		return c.RecordEvent(tx, domain.EventExtended, p, human.FormatDuration(d)+" more, until "+expires.UTC().Format(time.RFC3339))
	})
	return c.wrap(p), err
}

// Availability is how much of a device is free to book now, and next to
// it what its memory physically holds; and, when bookings made ahead take
// some of it later, how much is free from then.
type Availability struct {
	// Host is the device's host when it is another host's; empty for
	// this host's.
	Host      string
	Device    domain.Device
	FreePPM   int64
	FreeBytes uint64
	Bookings  int
	Physical  admission.PhysicalMemory
	// Ahead is when bookings made ahead leave the least free (zero: they
	// never leave less than now), and FreeAheadPPM how much.
	Ahead        time.Time
	FreeAheadPPM int64
	// Waiting counts the requests in line for this GPU (or any).
	Waiting int
	// At is when this was read: times are written relative to it.
	At time.Time
}

// AvailabilityOf is what is free on d of host at now, on the calendar of
// the stored live bookings, with the requests waiting in line.
func (c *Client) AvailabilityOf(tx *storage.Tx, host string, inv domain.Inventory, cal admission.Calendar, parts []domain.Partition, line []domain.Request, d domain.Device, now time.Time) Availability {
	g := admission.GpuID{Host: host, Device: d.Index}
	free := max(0, human.Ppm-cal.BookedAt(g, now))
	a := Availability{Host: c.OtherHost(host), Device: d, FreePPM: free, FreeBytes: admission.BytesOf(free, d.MemoryTotal), At: now}
	if host == c.host {
		// The stored readings are this host's GPUs'.
		a.Physical = ledger.Physical(tx, inv, d, now)
	}
	for _, p := range parts {
		switch {
		case p.Host != host || !p.Holds(d.Index):
		case p.LiveAt(now):
			a.Bookings++
		case p.Upcoming(now):
			// The least free at any start ahead, when less than now.
			if then := max(0, human.Ppm-cal.BookedAt(g, p.Start)); then < free && (a.Ahead.IsZero() || then < a.FreeAheadPPM) {
				a.Ahead, a.FreeAheadPPM = p.Start, then
			}
		}
	}
	for _, r := range line {
		if r.Host == host && r.Wants(d.Index) {
			a.Waiting++
		}
	}
	return a
}

func (a Availability) String() string {
	s := fmt.Sprintf("%s (%s) free on GPU %s", human.FormatPercentDown(a.FreePPM), human.FormatBytesDown(a.FreeBytes), human.FormatGPU(a.Host, a.Device.Index))
	if !a.Ahead.IsZero() {
		s += fmt.Sprintf("; %s from %s (booked ahead)", human.FormatPercentDown(a.FreeAheadPPM), human.FormatTime(a.Ahead, a.At))
	}
	if a.Waiting > 0 {
		s += fmt.Sprintf("; %d waiting in line", a.Waiting)
	}
	return s
}

// Available says how much of every device (device < 0) or one device of
// this host is free.
func (c *Client) Available(device int) ([]Availability, error) {
	return c.AvailableOn("", device)
}

// AvailableOn says how much of every device (device < 0) or one device of
// host ("": this host) is free.
func (c *Client) AvailableOn(host string, device int) ([]Availability, error) {
	host, err := c.GPUHost(host)
	if err != nil {
		return nil, err
	}
	var inv domain.Inventory
	if host == c.host {
		inv, err = c.Inventory()
	} else {
		var ok bool
		err = c.ledger.View(c.ctx, func(tx *storage.Tx) error {
			inv, ok, err = tx.HostInventory(host)
			return err
		})
		if err == nil && !ok {
			err = fmt.Errorf("%w: no GPUs of host %s are known: chronos has not run there yet", domain.ErrNoDevice, host)
		}
	}
	if err != nil {
		return nil, err
	}
	var out []Availability
	err = c.ledger.View(c.ctx, func(tx *storage.Tx) error {
		parts, err := tx.LivePartitions()
		if err != nil {
			return err
		}
		line, err := tx.WaitingRequests()
		if err != nil {
			return err
		}
		now := c.now()
		cal := admission.CalendarOf(parts)
		for _, d := range inv.Devices {
			if device >= 0 && d.Index != device {
				continue
			}
			out = append(out, c.AvailabilityOf(tx, host, inv, cal, parts, line, d, now))
		}
		return nil
	})
	if err == nil && device >= 0 && len(out) == 0 {
		_, err = admission.FindDevice(inv, device)
	}
	return out, err
}

// Inventory returns the cached device list, asking the device source (and
// caching its answer) when the ledger has none.
func (c *Client) Inventory() (domain.Inventory, error) {
	var inv domain.Inventory
	var ok bool
	err := c.ledger.View(c.ctx, func(tx *storage.Tx) error {
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
	if err := c.SaveInventory(inv); err != nil && !ledger.CannotWrite(err) {
		return inv, err
	}
	return inv, nil
}

// SaveInventory caches the device list (see cacheInventory) when it differs
// from the one stored, looking first without writing, so that watchers are
// not woken by a write that changes nothing.
func (c *Client) SaveInventory(inv domain.Inventory) error {
	same := false
	err := c.ledger.View(c.ctx, func(tx *storage.Tx) error {
		old, ok, err := tx.HostInventory(c.host)
		same = err == nil && ok && (sameInventory(old, inv) || !c.mayCache(old, ok, inv))
		return nil
	})
	if err != nil || same {
		return err
	}
	return c.ledger.Update(c.ctx, func(tx *storage.Tx) error { return c.cacheInventory(tx, inv) })
}

// Events returns audit events numbered after seq (0: from the start), at most
// limit (0: all).
func (c *Client) Events(after uint64, limit int) ([]domain.Event, error) {
	var out []domain.Event
	err := c.ledger.View(c.ctx, func(tx *storage.Tx) error {
		var err error
		out, err = tx.Events(after, limit)
		return err
	})
	return out, err
}

// LastEvents returns the newest n audit events, oldest first, reading only
// those: the trail grows for as long as the machine is used.
func (c *Client) LastEvents(n int) ([]domain.Event, error) { return c.FindEvents(EventFilter{}, n) }

// Recent returns the live bookings and those made within the window (zero:
// long enough that every booking that can still have processes is in it):
// what attributing GPU processes needs, without reading the whole history.
// Live bookings come with their usage.
func (c *Client) Recent(window time.Duration) ([]Partition, error) {
	var out []Partition
	err := c.ledger.View(c.ctx, func(tx *storage.Tx) error {
		if window <= 0 {
			pol, err := ledger.Policy(tx)
			if err != nil {
				return err
			}
			window = pol.MaxLength + admission.AttributionWindow
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
