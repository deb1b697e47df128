package core

import (
	"github.com/chronos-gpu/chronos/core/admission"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/gpu"
	"github.com/chronos-gpu/chronos/gpu/procfs"
)

// Stats samples the backend and attributes every GPU process to a booking.
func (c *Client) Stats(b gpu.Backend, mps procfs.MPS) (Stats, error) {
	s, err := b.Sample()
	if err != nil {
		return Stats{}, err
	}
	parts, err := c.Recent(0)
	if err != nil {
		return Stats{}, err
	}
	// Only this host's bookings hold the GPUs sampled here.
	var raw []domain.Partition
	for _, p := range parts {
		if c.OnThisHost(p.Partition) {
			raw = append(raw, p.Partition)
		}
	}
	now := c.now()
	st := Stats{Sample: s, Mode: mps.Mode(), Booked: map[int]DeviceBooking{}, Processes: admission.Attribute(s, raw, now)}
	// What `create` tells of physical memory comes from readings like this
	// one; storing it is a courtesy (a read-only ledger just doesn't get it).
	_ = c.saveReading(admission.ReadingOf(s, st.Processes, now))
	for _, p := range raw {
		if !p.LiveAt(now) {
			continue
		}
		for _, d := range p.GPUs() {
			b := st.Booked[d]
			b.PPM += p.SharePPM
			b.Bytes += p.Bytes
			b.Count++
			st.Booked[d] = b
		}
	}
	return st, nil
}
