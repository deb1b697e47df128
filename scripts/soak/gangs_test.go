package main

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/core/admission"
	"github.com/chronos-gpu/chronos/core/clock"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/gpu"
	"github.com/chronos-gpu/chronos/storage"
	"github.com/chronos-gpu/chronos/storage/bolt"
)

// t0 is the instant the tests' bookings start from: no expectation
// depends on today's date.
var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// booking is a live booking of share (in percent) of GPUs over
// [t0+from, t0+to), seconds.
func booking(id uint64, share int64, from, to int, gpus ...int) domain.Partition {
	p := domain.Partition{ID: id, Device: gpus[0], DeviceUUID: uuidOf(gpus[0]), SharePPM: share * 10_000, State: domain.Live,
		Start: t0.Add(time.Duration(from) * time.Second), Expires: t0.Add(time.Duration(to) * time.Second)}
	if len(gpus) > 1 {
		p.Devices = gpus
		for _, g := range gpus {
			p.DeviceUUIDs = append(p.DeviceUUIDs, uuidOf(g))
		}
	}
	return p
}

func uuidOf(gpu int) string { return "GPU-" + string(rune('0'+gpu)) }

func TestPeaksCountEveryGPUOfAGang(t *testing.T) {
	t.Parallel()
	// 60% of GPUs 0 and 1 and 50% of GPU 1 at once: GPU 1 is over,
	// which counting a gang on its first GPU alone does not see.
	live := []domain.Partition{booking(1, 60, 0, 10, 0, 1), booking(2, 50, 0, 10, 1)}
	got := peaks(live, t0.Add(time.Second), onGPUs)
	require.Equal(t, int64(600_000), got[gpuKey{"", 0}].ppm)
	require.Equal(t, int64(1_100_000), got[gpuKey{"", 1}].ppm)
	// A user's quota counts the gang's share on each of its GPUs.
	users := peaks(live, t0.Add(time.Second), forUser)
	require.Equal(t, int64(1_700_000), users[0].ppm)
}

func TestSweepFindsEveryInstantOverAFullGPU(t *testing.T) {
	t.Parallel()
	released := func(p domain.Partition, at int) domain.Partition {
		p.State, p.Ended = domain.Released, t0.Add(time.Duration(at)*time.Second)
		return p
	}
	for _, tc := range []struct {
		name  string
		parts []domain.Partition
		over  string // the GPU over 100%, "" for none
		peak1 int64  // GPU 1's highest sum
	}{
		{"a single on a gang's second GPU while it holds it",
			[]domain.Partition{booking(1, 60, 0, 10, 0, 1), booking(2, 50, 5, 15, 1)}, "GPU 1 booked 110.0000%", 1_100_000},
		{"a single on a gang's last GPU of four",
			[]domain.Partition{booking(1, 30, 0, 10, 0, 1, 2, 3), booking(2, 80, 9, 15, 3)}, "GPU 3 booked 110.0000%", 300_000},
		{"two gangs that share a GPU",
			[]domain.Partition{booking(1, 60, 0, 10, 0, 1), booking(2, 60, 0, 10, 1, 2)}, "GPU 1 booked 120.0000%", 1_200_000},
		{"one starting as the other ends",
			[]domain.Partition{booking(1, 60, 0, 10, 0, 1), booking(2, 50, 10, 20, 1)}, "", 600_000},
		{"after a gang released early",
			[]domain.Partition{released(booking(1, 60, 0, 20, 0, 1), 5), booking(2, 50, 5, 15, 1)}, "", 600_000},
		{"a gang ahead released before its start",
			[]domain.Partition{released(booking(1, 60, 10, 20, 0, 1), 5), booking(2, 50, 0, 30, 1)}, "", 500_000},
		{"reclaimed early", // expired, its deadline kept, its end earlier
			[]domain.Partition{func() domain.Partition {
				p := booking(1, 60, 0, 20, 0, 1)
				p.State, p.Ended = domain.Expired, t0.Add(5*time.Second)
				return p
			}(), booking(2, 50, 5, 15, 1)}, "", 600_000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			held, over := sweep(tc.parts)
			require.Equal(t, tc.peak1, held[gpuKey{"", 1}].ppm)
			if tc.over == "" {
				require.Empty(t, over)
				return
			}
			require.Len(t, over, 1)
			require.Contains(t, over[0], tc.over)
		})
	}
}

func TestBookingFlawsFindAGangHeldInPart(t *testing.T) {
	t.Parallel()
	var devs []domain.Device
	for i := range 4 {
		devs = append(devs, domain.Device{Index: i, UUID: uuidOf(i)})
	}
	invs := map[string]domain.Inventory{"": {Devices: devs}}
	for _, tc := range []struct {
		name  string
		edit  func(*domain.Partition)
		invs  map[string]domain.Inventory
		wants string // "" when whole
	}{
		{"whole", func(*domain.Partition) {}, invs, ""},
		{"a GPU's UUID dropped", func(p *domain.Partition) { p.DeviceUUIDs = p.DeviceUUIDs[:2] }, invs, "3 GPUs, 2 UUIDs"},
		{"Device not the first", func(p *domain.Partition) { p.Device = 2 }, invs, "Device is 2, not the first"},
		{"DeviceUUID not the first's", func(p *domain.Partition) { p.DeviceUUID = uuidOf(3) }, invs, "DeviceUUID GPU-3 is not the first GPU's GPU-0"},
		{"all GPUs but one dropped", func(p *domain.Partition) { p.Devices, p.DeviceUUIDs = p.Devices[:1], p.DeviceUUIDs[:1] }, invs, "a gang of one GPU"},
		{"a GPU twice", func(p *domain.Partition) { p.Devices[2], p.DeviceUUIDs[2] = 0, uuidOf(0) }, invs, "GPU 0 twice"},
		{"a GPU the host lacks", func(p *domain.Partition) { p.Devices[2], p.DeviceUUIDs[2] = 7, uuidOf(7) }, invs, `GPU 7 is not one of host ""'s 4`},
		{"another GPU's UUID", func(p *domain.Partition) { p.DeviceUUIDs[1] = uuidOf(3) }, invs, "GPU 1's UUID GPU-3 is not the host's GPU-1"},
		{"a host with no inventory", func(p *domain.Partition) { p.Host = "gpu9" }, invs, `no inventory of host "gpu9"`},
		{"not checked against hosts without inventories", func(p *domain.Partition) { p.Host = "gpu9" }, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := booking(1, 50, 0, 10, 0, 1, 2)
			tc.edit(&p)
			flaws := bookingFlaws(p, tc.invs)
			if tc.wants == "" {
				require.Empty(t, flaws)
				return
			}
			require.Len(t, flaws, 1)
			require.Contains(t, flaws[0], tc.wants)
		})
	}
	// A booking of one GPU is checked against its host too.
	require.Contains(t, strings.Join(bookingFlaws(booking(2, 50, 0, 10, 5), invs), ";"), "GPU 5 is not one")
	require.Empty(t, bookingFlaws(booking(2, 50, 0, 10, 3), invs))
}

func TestGrantFlawSaysAGangGotOtherGPUsThanAsked(t *testing.T) {
	t.Parallel()
	anyGPU := domain.AnyDevice
	for _, tc := range []struct {
		name  string
		asked domain.Request
		got   domain.Partition
		wants string
	}{
		{"a list, exactly", domain.Request{ID: 4, Device: 0, Devices: []int{0, 2}}, booking(1, 50, 0, 1, 0, 2), ""},
		{"a list, other GPUs", domain.Request{ID: 4, Device: 0, Devices: []int{0, 2}}, booking(1, 50, 0, 1, 0, 1), "request 4 asked for GPUs [0 2], booking 1 holds [0 1]"},
		{"a list, one short", domain.Request{ID: 4, Device: 0, Devices: []int{0, 1, 2}}, booking(1, 50, 0, 1, 0, 1), "request 4 asked for 3 GPUs, booking 1 holds 2"},
		{"any 3, exactly 3", domain.Request{ID: 5, Device: anyGPU, Count: 3}, booking(1, 50, 0, 1, 3, 1, 2), ""},
		{"any 3, got 2", domain.Request{ID: 5, Device: anyGPU, Count: 3}, booking(1, 50, 0, 1, 3, 1), "request 5 asked for 3 GPUs, booking 1 holds 2"},
		{"any one, got two", domain.Request{Device: anyGPU}, booking(1, 50, 0, 1, 3, 1), "a create asked for 1 GPUs, booking 1 holds 2"},
		{"one named, another", domain.Request{Device: 2}, booking(1, 50, 0, 1, 3), "a create asked for GPU 2, booking 1 holds GPU 3"},
		{"another host", domain.Request{ID: 6, Host: "a", Device: 0}, func() domain.Partition { p := booking(1, 50, 0, 1, 0); p.Host = "b"; return p }(), "host a, booking 1 is on b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			flaw := grantFlaw(tc.asked, tc.got)
			if tc.wants == "" {
				require.Empty(t, flaw)
				return
			}
			require.Contains(t, flaw, tc.wants)
		})
	}
}

// TestPickGangAsksWhatTheCommandLineReads draws gangs as the workers do:
// each is two GPUs or more of the host, a list in order or a count of any,
// and the CLI's form of it reads back as the same ask.
func TestPickGangAsksWhatTheCommandLineReads(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	for n := 2; n <= 8; n++ {
		for range 200 {
			g := pickGang(rng, n)
			dev, extra := g.arg()
			req, err := core.ParseRequest(dev, "10%", "60", "")
			require.NoError(t, err)
			if g.Count > 0 {
				require.Equal(t, domain.AnyDevice, g.Device)
				require.GreaterOrEqual(t, g.Count, 2)
				require.LessOrEqual(t, g.Count, n)
				require.Equal(t, []string{"--gpus", strings.TrimSpace(extra[1])}, extra)
				require.Equal(t, domain.AnyDevice, req.Device)
				continue
			}
			require.Empty(t, extra)
			require.GreaterOrEqual(t, len(g.Devices), 2)
			require.True(t, slices.IsSorted(g.Devices), g.Devices)
			require.Len(t, slices.Compact(slices.Clone(g.Devices)), len(g.Devices))
			require.Equal(t, g.Devices[0], g.Device)
			require.GreaterOrEqual(t, g.Devices[0], 0)
			require.Less(t, g.Devices[len(g.Devices)-1], n)
			require.Equal(t, g.Devices, req.Devices)
			require.Equal(t, g.Device, req.Device)
		}
	}
}

// gangLedger is a real ledger file with four GPUs where core made, and
// ended, a gang of a list (0,1), two gangs granted from the line (any
// --gpus 4, and 2,3) and a booking of one GPU. It returns the ledger and
// the bookings' ids: the list, any 4, 2-3, the single.
func gangLedger(t *testing.T) (storage.Store, [4]uint64) {
	t.Helper()
	l := bolt.New(filepath.Join(t.TempDir(), "chronos.db"))
	four := func() (core.Listing, error) {
		var devs []gpu.Device
		for i := range 4 {
			devs = append(devs, gpu.Device{Index: i, UUID: uuidOf(i), Name: "Test GPU", MemoryTotal: 80 << 30})
		}
		return core.Listing{Backend: "test", Devices: devs}, nil
	}
	clk := clock.NewFake(t0)
	c := core.NewClient(core.Options{Ledger: l, Devices: four, Clock: clk, As: &domain.Identity{UID: 0, User: "root"}})
	hour := time.Hour
	pair, err := c.Create(core.Request{Device: 0, Devices: []int{0, 1}, Memory: human.Fraction(0.5), Duration: hour})
	require.NoError(t, err)
	full, err := c.Create(core.Request{Device: 3, Memory: human.Fraction(0.8), Duration: hour})
	require.NoError(t, err)
	// Neither fits while GPU 3 is 80% booked: both wait in line.
	var reqs []uint64
	for _, r := range []core.Request{
		{Device: domain.AnyDevice, Count: 4, Memory: human.Fraction(0.3), Duration: hour},
		{Device: 2, Devices: []int{2, 3}, Memory: human.Fraction(0.4), Duration: hour},
	} {
		p, entry, err := c.Enqueue(r, admission.WaitOptions{})
		require.NoError(t, err)
		require.Nil(t, p)
		reqs = append(reqs, entry.ID)
	}
	clk.Advance(time.Minute)
	_, err = c.Release(full.ID) // the line grants both
	require.NoError(t, err)
	var granted []uint64
	for _, id := range reqs {
		r, err := c.LineRequest(id)
		require.NoError(t, err)
		require.Equal(t, domain.Granted, r.State)
		granted = append(granted, r.Partition)
	}
	clk.Advance(time.Minute)
	for _, id := range append([]uint64{pair.ID}, granted...) {
		_, err := c.Release(id)
		require.NoError(t, err)
	}
	return l, [4]uint64{pair.ID, granted[0], granted[1], full.ID}
}

// TestFinalCatchesAGangGrantedInPart is the checker's last look at a ledger
// core wrote: it passes as written, and fails once a record is edited as a
// broken admission would have written it.
func TestFinalCatchesAGangGrantedInPart(t *testing.T) {
	t.Parallel()
	edit := func(l storage.Store, id uint64, fn func(*domain.Partition)) {
		require.NoError(t, l.Update(context.Background(), func(tx *storage.Tx) error {
			p, err := tx.Partition(id)
			if err != nil {
				return err
			}
			fn(&p)
			return tx.PutPartition(&p)
		}))
	}
	for _, tc := range []struct {
		name  string
		brk   func(l storage.Store, ids [4]uint64)
		wants func(t *testing.T, f finalCheck)
	}{
		{"as core wrote it", func(storage.Store, [4]uint64) {}, func(t *testing.T, f finalCheck) {
			require.Empty(t, f.flaws)
			require.Empty(t, f.misgranted)
			require.Empty(t, f.overbooked)
			require.Empty(t, f.badGrants)
			require.Equal(t, map[int]int{2: 2, 4: 1}, f.gangs.bySize)
			require.Equal(t, gangFinal{bySize: f.gangs.bySize, requests: 2, granted: 2}, f.gangs)
			require.Equal(t, int64(800_000), f.held[gpuKey{"", 0}].ppm, "GPU 0: 0,1 at 50%% and any 4 at 30%%")
			require.Equal(t, int64(800_000), f.held[gpuKey{"", 3}].ppm, "GPU 3: 80%%, then any 4 at 30%% and 2,3 at 40%%")
		}},
		{"any --gpus 4 granted three", func(l storage.Store, ids [4]uint64) {
			edit(l, ids[1], func(p *domain.Partition) { p.Devices, p.DeviceUUIDs = p.Devices[:3], p.DeviceUUIDs[:3] })
		}, func(t *testing.T, f finalCheck) {
			require.Empty(t, f.flaws)
			require.Len(t, f.misgranted, 1)
			require.Contains(t, f.misgranted[0], "asked for 4 GPUs, booking")
		}},
		{"2,3 granted with one UUID", func(l storage.Store, ids [4]uint64) {
			edit(l, ids[2], func(p *domain.Partition) { p.DeviceUUIDs = p.DeviceUUIDs[:1] })
		}, func(t *testing.T, f finalCheck) {
			require.Empty(t, f.misgranted)
			require.Len(t, f.flaws, 1)
			require.Contains(t, f.flaws[0], "2 GPUs, 1 UUIDs")
		}},
		{"2,3 granted as 2,1", func(l storage.Store, ids [4]uint64) {
			edit(l, ids[2], func(p *domain.Partition) { p.Devices[1], p.DeviceUUIDs[1] = 1, uuidOf(1) })
		}, func(t *testing.T, f finalCheck) {
			require.Empty(t, f.flaws)
			require.Len(t, f.misgranted, 1)
			require.Contains(t, f.misgranted[0], "asked for GPUs [2 3], booking")
			require.Len(t, f.overbooked, 1, "GPU 1: 0,1 at 50%%, any 4 at 30%%, now 2,1 at 40%%")
			require.Contains(t, f.overbooked[0], "GPU 1 booked 120.0000%")
		}},
		{"the single held past its release", func(l storage.Store, ids [4]uint64) {
			edit(l, ids[3], func(p *domain.Partition) { p.Ended = time.Time{} })
		}, func(t *testing.T, f finalCheck) {
			require.Empty(t, f.flaws)
			require.Len(t, f.overbooked, 1, "GPU 3: 80%% until its deadline, and the two gangs granted at its release")
			require.Contains(t, f.overbooked[0], "GPU 3 booked 150.0000%")
		}},
		{"a gang's end event lost", func(l storage.Store, ids [4]uint64) {
			edit(l, ids[0], func(p *domain.Partition) { p.State = domain.Expired })
		}, func(t *testing.T, f finalCheck) {
			require.Len(t, f.wrongEnd, 1)
			require.Contains(t, f.wrongEnd[0], "is expired, its event says released")
			require.Equal(t, 1, f.gangs.events)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			l, ids := gangLedger(t)
			tc.brk(l, ids)
			f := newChecker(l, time.Second).final()
			require.Empty(t, f.err)
			tc.wants(t, f)
		})
	}
}
