package core

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/gpu"
	"github.com/chronos-gpu/chronos/storage"
)

// SkewWarning is how far apart hosts' clocks may be before chronos warns:
// deadlines are wall-clock instants, so a host whose clock is off ends its
// bookings early or late by as much.
const SkewWarning = time.Second

// HostStatus is what a host's monitor publishes for the other hosts.
type HostStatus struct {
	Host string `json:"host"`
	// Time is the publisher's clock when it published.
	Time      time.Time `json:"time"`
	Backend   string    `json:"backend"`
	Simulated bool      `json:"simulated,omitempty"`
	// Devices are the last reading of the host's GPUs, without processes.
	Devices []gpu.DeviceSample `json:"devices"`
	// Skew is how far other hosts' clocks are ahead of this host's, as its
	// monitor measured them from their statuses, in seconds.
	Skew map[string]float64 `json:"skew_seconds,omitempty"`
}

// HostView is another host of the ledger as this one sees it.
type HostView struct {
	Host string
	// Status is its last published status; nil when none of its monitors
	// published within the TTL: its GPUs are shown as last known.
	Status *HostStatus
	// Inventory is its GPUs as cached in the ledger.
	Inventory domain.Inventory
	// Skew is its clock minus this host's, when SkewKnown.
	Skew      time.Duration
	SkewKnown bool
}

// Live reports whether a monitor of the host is publishing.
func (h HostView) Live() bool { return h.Status != nil }

// OnThisHost reports whether p holds one of this host's GPUs: what this
// host's monitor enforces and its GPU panel shows.
func (c *Client) OnThisHost(p domain.Partition) bool { return p.Host == c.host }

func (c *Client) Presence() storage.Presence {
	if c.host == "" {
		return nil
	}
	p, _ := c.ledger.(storage.Presence)
	return p
}

// Hosts returns the other hosts of a ledger many hosts share, by name: each
// with its GPUs, whether its monitor is publishing, and its clock's skew.
// A ledger file has none.
func (c *Client) Hosts() ([]HostView, error) {
	pr := c.Presence()
	if pr == nil {
		return nil, nil
	}
	var invs map[string]domain.Inventory
	err := c.ledger.View(c.ctx, func(tx *storage.Tx) error {
		var err error
		invs, err = tx.HostInventories()
		return err
	})
	if err != nil {
		return nil, err
	}
	raw, err := pr.Present(c.ctx)
	if err != nil {
		return nil, err
	}
	statuses := map[string]*HostStatus{}
	for host, data := range raw {
		var st HostStatus
		if json.Unmarshal(data, &st) == nil {
			statuses[host] = &st
		}
	}
	names := map[string]bool{}
	for h := range invs {
		names[h] = true
	}
	for h := range statuses {
		names[h] = true
	}
	var out []HostView
	for _, h := range slices.Sorted(maps.Keys(names)) {
		if h == c.host {
			continue
		}
		v := HostView{Host: h, Status: statuses[h], Inventory: invs[h]}
		v.Skew, v.SkewKnown = skewOf(statuses, c.host, h)
		out = append(out, v)
	}
	return out, nil
}

// skewOf is host's clock minus me's: as my monitor measured it, else as
// host's measured mine.
func skewOf(statuses map[string]*HostStatus, me, host string) (time.Duration, bool) {
	if st := statuses[me]; st != nil {
		if s, ok := st.Skew[host]; ok {
			return time.Duration(s * float64(time.Second)), true
		}
	}
	if st := statuses[host]; st != nil {
		if s, ok := st.Skew[me]; ok {
			return -time.Duration(s * float64(time.Second)), true
		}
	}
	return 0, false
}

// SkewWarnings says, for each other host whose clock is more than
// SkewWarning from this one's, by how much; first, when most of the hosts'
// clocks disagree with this host's (see SkewBound), what its monitor does
// about it.
func SkewWarnings(host string, hosts []HostView) []string {
	var out []string
	if st := standingOfViews(host, hosts); st.InDoubt() {
		out = append(out, st.String())
	}
	for _, h := range hosts {
		if !h.SkewKnown || h.Skew.Abs() <= SkewWarning {
			continue
		}
		dir := "ahead of"
		if h.Skew < 0 {
			dir = "behind"
		}
		out = append(out, fmt.Sprintf("%s's clock is %.1f s %s this host's: check NTP (deadlines are wall-clock instants)", h.Host, h.Skew.Abs().Seconds(), dir))
	}
	return out
}
