// Command demoledger fills a ledger with bookings by the simulated GPUs'
// users (alice, bob, carol, …), so that screenshots and demos show the app
// as a busy lab sees it. It acts as those users through core's Go API; the
// real command line always books as the OS user who runs it. A monitor
// watches the simulated GPUs through the hour before now, on a clock of its
// own, with each booking made at its time: the GPUs' history then holds
// the hour, as if monitors had run all along (erin's booking on GPU 3 has
// done nothing for most of it).
// With -week it first gives them a week of past bookings, each released
// at its end, so that `chronos usage` has use to show. With -waiter PID it
// then fills GPU 0, books GPU 2 ahead, and puts three requests in the
// waiting line with PID as their waiting process: they stay in line while
// it runs (the engine lets a request go when its waiter is gone).
//
//	go run ./scripts/demoledger /tmp/demo.db
//	go run ./scripts/demoledger -week /tmp/demo.db
//	sleep 600 & go run ./scripts/demoledger -waiter $! /tmp/demo.db
package main

import (
	"flag"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/core/admission"
	"github.com/chronos-gpu/chronos/core/clock"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/core/monitor"
	"github.com/chronos-gpu/chronos/core/proc"
	"github.com/chronos-gpu/chronos/gpu"
	"github.com/chronos-gpu/chronos/storage/bolt"
)

// demoBookings were made ago, for length in all.
var demoBookings = []struct {
	uid         int
	user        string
	device      int
	share       float64
	ago, length time.Duration
}{
	{2001, "alice", 0, 0.60, 100 * time.Minute, 4*time.Hour + 52*time.Minute},
	{2005, "erin", 3, 0.50, 70 * time.Minute, time.Hour + 57*time.Minute},
	{2004, "dave", 1, 0.20, 55 * time.Minute, 59*time.Minute + 30*time.Second},
	{2002, "bob", 1, 0.30, 50 * time.Minute, 2*time.Hour + 55*time.Minute},
	{2003, "carol", 3, 0.25, 45 * time.Minute, 20 * time.Minute},
	{2006, "frank", 3, 0.25, 30 * time.Minute, 55 * time.Minute},
	{2002, "bob", 2, 0.25, 20 * time.Minute, 8 * time.Hour},
}

// noSignals: the simulated GPUs' processes are made up.
type noSignals struct{}

func (noSignals) Signal(int, uint64, syscall.Signal) error { return nil }

func main() {
	week := flag.Bool("week", false, "first give the users a week of past bookings")
	waiter := flag.Int("waiter", 0, "then make a waiting line, its requests waited for by this process")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: demoledger [-week] LEDGER")
		os.Exit(2)
	}
	now := time.Now()
	at := now.Add(-2 * time.Hour)
	clk := settable{clock.System(), &at}
	ledger := bolt.New(flag.Arg(0))
	sim := gpu.NewSim(gpu.SimOptions{Now: clk.Now})
	devices := func() (core.Listing, error) {
		devs, err := sim.Devices()
		return core.Listing{Backend: sim.Name(), Devices: devs, Topology: gpu.TopologyOf(sim)}, err
	}
	if *week {
		pastWeek(ledger, devices)
	}
	client := func(id domain.Identity) *core.Client {
		return core.NewClient(core.Options{Ledger: ledger, Devices: devices, Clock: clk, As: &id})
	}
	made := make([]bool, len(demoBookings))
	book := func() {
		for i, b := range demoBookings {
			when := now.Add(-b.ago)
			if made[i] || at.Before(when) {
				continue
			}
			saved := at
			at = when
			_, err := client(domain.Identity{UID: b.uid, User: b.user}).Create(core.Request{Device: b.device, Memory: human.Fraction(b.share), Duration: b.length})
			at, made[i] = saved, true
			check(err)
		}
	}
	mon := monitor.New(client(proc.CurrentIdentity()), monitor.Options{Backend: sim, Signaller: noSignals{}})
	for at = now.Add(-time.Hour); at.Before(now); at = at.Add(15 * time.Second) {
		book()
		_, err := mon.Tick()
		check(err)
	}
	if *waiter > 0 {
		at = now
		line(client, *waiter)
	}
}

// line fills GPU 0, books half of GPU 2 ahead, and puts requests in line
// that GPU 0, GPU 3 and any GPU cannot take now.
func line(client func(domain.Identity) *core.Client, waiter int) {
	grace, henry := domain.Identity{UID: 2007, User: "grace"}, domain.Identity{UID: 2008, User: "henry"}
	_, err := client(grace).Create(core.Request{Device: 0, Memory: human.Fraction(0.4), Duration: 90 * time.Minute})
	check(err)
	_, err = client(grace).Create(core.Request{Device: 2, Memory: human.Fraction(0.5), Duration: 3 * time.Hour, Start: time.Now().Add(100 * time.Minute)})
	check(err)
	for _, w := range []struct {
		who    domain.Identity
		device int
		share  float64
		length time.Duration
	}{
		{henry, 0, 0.5, 2 * time.Hour},
		{domain.Identity{UID: 2003, User: "carol"}, 3, 0.6, time.Hour},
		{domain.Identity{UID: 2004, User: "dave"}, domain.AnyDevice, 0.8, time.Hour},
	} {
		_, _, err := client(w.who).Enqueue(core.Request{Device: w.device, Memory: human.Fraction(w.share), Duration: w.length}, admission.WaitOptions{PID: waiter})
		check(err)
	}
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "demoledger:", err)
		os.Exit(1)
	}
}

// pastWeek books, on a clock set back a week, each user's habits day by
// day, and releases each booking just before its end: the ledger's own accounting
// (fair-share usage, held intervals) is what `chronos usage` then reports.
func pastWeek(ledger *bolt.Ledger, devices core.DeviceSource) {
	at := time.Now().Add(-7 * 24 * time.Hour)
	clk := settable{clock.System(), &at}
	for day := range 7 {
		for _, h := range []struct {
			uid    int
			user   string
			device int
			share  float64
			length time.Duration
			every  int // days
		}{
			{2001, "alice", 0, 1.0, 10 * time.Hour, 1},
			{2002, "bob", 1, 0.5, 6 * time.Hour, 1},
			{2003, "carol", 2, 0.25, 3 * time.Hour, 2},
			{2004, "dave", 3, 0.5, 2 * time.Hour, 3},
		} {
			if day%h.every != 0 {
				continue
			}
			c := core.NewClient(core.Options{Ledger: ledger, Devices: devices, Clock: clk, As: &domain.Identity{UID: h.uid, User: h.user}})
			p, err := c.Create(core.Request{Device: h.device, Memory: human.Fraction(h.share), Duration: h.length})
			if err == nil {
				held := h.length - time.Minute // released just before its end
				at = at.Add(held)
				_, err = c.Release(p.ID)
				at = at.Add(-held)
			}
			check(err)
		}
		at = at.Add(24 * time.Hour)
	}
}

// settable is a clock the demo sets by hand, back and forth, to book each
// booking at its time; its timers are the system's.
type settable struct {
	clock.Clock
	at *time.Time
}

func (s settable) Now() time.Time { return *s.at }
