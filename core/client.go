// Package core is chronos's booking service: the Client that books,
// waits in line, releases, extends, reports and migrates, each decision in
// one ledger transaction. The monitor that makes bookings end on time is
// core/monitor, the supervisor of `chronos run` core/supervisor; both
// build on a Client, and core imports neither. What the ledger holds is in
// core/domain, who may have a GPU when in core/admission, text for people
// in core/human, process facts in core/proc and notices in core/notice;
// the ledger is a storage.Store the caller opens (storage/bolt or
// storage/etcd), and GPUs are read through gpu.
package core

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/chronos-gpu/chronos/core/clock"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/ledger"
	"github.com/chronos-gpu/chronos/core/notice"
	"github.com/chronos-gpu/chronos/core/proc"
	"github.com/chronos-gpu/chronos/core/setup"
	"github.com/chronos-gpu/chronos/gpu"
	"github.com/chronos-gpu/chronos/storage"
)

// DeviceSource lists the GPUs when the ledger has no inventory cached yet,
// typically by opening a gpu.Backend. Its answer is cached in the ledger.
type DeviceSource func() (Listing, error)

// Listing is what a DeviceSource read: the backend's name, its GPUs, and
// how they are linked (unknown when the source cannot tell).
type Listing struct {
	Backend  string
	Devices  []gpu.Device
	Topology gpu.Topology
}

// Options configure a Client. Only Ledger is required.
type Options struct {
	// Ledger is where the bookings live: a bbolt file (storage/bolt) or any
	// other storage.Store.
	Ledger storage.Store
	// Devices is asked for the inventory when the ledger has none cached.
	Devices DeviceSource
	// Clock tells the time and makes timers; nil means clock.System().
	Clock clock.Clock
	// As is who acts; the zero value means the current process's user.
	As *domain.Identity
	// Host is this machine's name in a ledger many hosts share (a store
	// that is a storage.Presence); empty means setup.HostName() there. A ledger
	// file is one host's alone and has no host names.
	Host string
	// NotifyFile holds root's webhook address; NotifyFile() when empty.
	NotifyFile string
	// Context is what every ledger transaction of the client runs under:
	// its end (the command's Ctrl-C) cuts short a wait on the ledger, such
	// as an etcd transaction retrying. Nil means context.Background().
	// Leaving the line and releasing a run's booking still go ahead after
	// it ends.
	Context context.Context
}

// Client is the Go API: every call opens the ledger, runs one transaction
// and closes it, so a Client holds no lock between calls and any number of
// processes can use the same ledger.
type Client struct {
	ledger  storage.Store
	devices DeviceSource
	clock   clock.Clock
	me      domain.Identity
	host    string
	notify  string // the notify file
	ctx     context.Context
}

// NewClient returns a client for the ledger in opts.
func NewClient(opts Options) *Client {
	c := &Client{ledger: opts.Ledger, devices: opts.Devices, clock: clock.OrSystem(opts.Clock), host: opts.Host, notify: cmp.Or(opts.NotifyFile, notice.NotifyFile()), ctx: cmp.Or(opts.Context, context.Background())}
	if _, shared := opts.Ledger.(storage.Presence); shared && c.host == "" {
		// Every process on this host must book its GPUs under one name.
		c.host = setup.HostName()
	}
	if opts.As != nil {
		c.me = *opts.As
	} else {
		c.me = proc.CurrentIdentity()
	}
	return c
}

// Open is the short way to a client of the ledger s (the command layer
// opens it: setup.FindStore says which): the current user, and the GPU backend
// from CHRONOS_BACKEND for the device inventory.
func Open(s storage.Store) *Client {
	return OpenAt(s, BackendDevices(gpu.KindFromEnv()))
}

// OpenAt returns a client of the ledger s as the current user; on a ledger
// many hosts share it acts as this host (HostName).
func OpenAt(s storage.Store, devices DeviceSource) *Client {
	return NewClient(Options{Ledger: s, Devices: devices})
}

// Lasting is c with ledger calls that outlive the end of its Context, for
// work that must finish after Ctrl-C (leaving the line, forwarding a
// signal, releasing a run's booking); its own waits watch their ctx.
func (c *Client) Lasting() *Client {
	d := *c
	d.ctx = context.WithoutCancel(c.ctx)
	return &d
}

// BackendDevices is a DeviceSource that opens the named GPU backend once.
func BackendDevices(kind string) DeviceSource {
	return func() (Listing, error) {
		b, _, err := gpu.Open(kind)
		if err != nil {
			return Listing{}, err
		}
		defer b.Close()
		devs, err := b.Devices()
		return Listing{Backend: b.Name(), Devices: devs, Topology: gpu.TopologyOf(b)}, err
	}
}

// OpenGPUs opens the GPU backend of the given kind (auto, nvml, sim) and
// caches its device inventory in the ledger, so that later one-shot
// commands can validate devices without starting NVML. The notice says why
// auto fell back to simulated GPUs.
func (c *Client) OpenGPUs(kind string) (b gpu.Backend, notice string, err error) {
	if b, notice, err = gpu.Open(kind); err != nil {
		return nil, "", err
	}
	devs, err := b.Devices()
	if err == nil {
		err = c.SaveInventory(ledger.BackendInventory(b, devs, c.now()))
	}
	if err != nil && !ledger.CannotWrite(err) {
		b.Close()
		return nil, "", fmt.Errorf("cache the GPU inventory in %s: %w", c.ledger, err)
	}
	// A ledger this process may only read is shown as it is, uncached.
	return b, notice, nil
}

// Ledger is the ledger this client uses.
func (c *Client) Ledger() storage.Store { return c.ledger }

// Host is this machine's name in a ledger shared by many hosts; empty for a
// ledger file, which is one host's alone.
func (c *Client) Host() string { return c.host }

// HostOf is the host whose GPU p holds: a ledger file's bookings are this
// host's.
func (c *Client) HostOf(p domain.Partition) string {
	if p.Host == "" {
		return setup.HostName()
	}
	return p.Host
}

// Me is who this client acts as.
func (c *Client) Me() domain.Identity { return c.me }

// Now is the time by the client's clock.
func (c *Client) Now() time.Time { return c.clock.Now() }

// Clock is the client's clock, for everything that acts on its bookings'
// times (the monitor, the app, the run supervisor).
func (c *Client) Clock() clock.Clock { return c.clock }

// Context is what the client's ledger transactions run under (Options).
func (c *Client) Context() context.Context { return c.ctx }

// NotifyFile is the file that holds the webhook's address (Options), which
// root's monitor reads.
func (c *Client) NotifyFile() string { return c.notify }

func (c *Client) now() time.Time { return c.clock.Now() }

// Partition is a booking, with the calls that act on it.
type Partition struct {
	domain.Partition
	// Room is what the GPU had room for when Create made the booking:
	// the bookable share and the memory physically free before it.
	Room Availability
	// GPUGone says its GPU is no longer in the machine's inventory (a card
	// removed, the driver's view changed): the booking stands, and is
	// shown as such.
	GPUGone bool
	// WrapperGone says the `chronos run` that made it, on this machine, is
	// gone: it shows as orphaned before a monitor has recorded it so.
	WrapperGone bool
	// CapNotApplied says its compute cap is only recorded: its GPU, AMD or
	// Intel, has no MPS to apply it.
	CapNotApplied bool
	// Usage is what monitors measured of it (List fills it in): idle and
	// GPU time, its place on the idle ladder, its holds.
	Usage  domain.BookingUsage
	client *Client
}

// TimeRemaining is how long the booking has left (zero once it has ended;
// its whole length while it has not started).
func (p *Partition) TimeRemaining() time.Duration {
	return p.Remaining(p.client.now())
}

// Release ends the booking now.
func (p *Partition) Release() error {
	got, err := p.client.Release(p.ID)
	if err == nil {
		p.Partition = got.Partition
	}
	return err
}

// Extend adds d to the booking's deadline.
func (p *Partition) Extend(d time.Duration) error {
	got, err := p.client.Extend(p.ID, d)
	if err == nil {
		p.Partition = got.Partition
	}
	return err
}

// Status is what a person sees of the booking: Status, or StatusGPUGone
// while it is live on a GPU that is gone.
func (p Partition) Status(now time.Time, warnLead time.Duration) domain.BookingStatus {
	s := p.BaseStatus(now, warnLead)
	if p.GPUGone && !s.Ended() {
		return domain.StatusGPUGone
	}
	return s
}

// BaseStatus is the booking's status apart from its GPU: the record's Status,
// orphaned too when this machine sees its wrapper gone.
func (p Partition) BaseStatus(now time.Time, warnLead time.Duration) domain.BookingStatus {
	s := domain.Status(p.Partition, now, warnLead)
	if p.WrapperGone && !s.Ended() {
		return domain.StatusOrphaned
	}
	return s
}

func (c *Client) wrap(p domain.Partition) Partition { return Partition{Partition: p, client: c} }

// wrapSeen wraps p read beside the inventory (inv, when ok).
func (c *Client) wrapSeen(p domain.Partition, inv domain.Inventory, ok bool) Partition {
	w := c.wrap(p)
	w.GPUGone = gpuGone(inv, ok, p)
	w.WrapperGone = proc.WrapperDied(p)
	w.CapNotApplied = capNotApplied(inv, ok, p)
	return w
}

// seenIn wraps bookings read in tx, each checked against its own host's
// GPUs (a shared ledger holds each host's inventory).
func (c *Client) seenIn(tx *storage.Tx) func(domain.Partition) Partition {
	type known struct {
		inv domain.Inventory
		ok  bool
	}
	invs := map[string]known{}
	return func(p domain.Partition) Partition {
		k, read := invs[p.Host]
		if !read {
			k.inv, k.ok, _ = tx.HostInventory(p.Host)
			invs[p.Host] = k
		}
		return c.wrapSeen(p, k.inv, k.ok)
	}
}

func (c *Client) RecordEvent(tx *storage.Tx, kind domain.EventKind, p domain.Partition, detail string) error {
	return tx.AddEvent(domain.Event{Time: c.now(), Kind: kind, Partition: p.ID, UID: c.me.UID, User: c.me.User, Detail: domain.BoundDetail(detail)})
}
