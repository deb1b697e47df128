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
