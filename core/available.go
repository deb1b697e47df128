package core

import (
	"fmt"
	"time"

	"github.com/chronos-gpu/chronos/core/admission"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/core/ledger"
	"github.com/chronos-gpu/chronos/storage"
)

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
