// Command demoledger fills a ledger with bookings by the simulated GPUs'
// users (alice, bob, carol, …), so that screenshots and demos show the app
// as a busy lab sees it. It acts as those users through core's Go API; the
// real command line always books as the OS user who runs it. A monitor
// watches the simulated GPUs through the hour before now, on a clock of its
// own, with each booking made at its time: the GPUs' history then holds
// the hour, as if monitors had run all along (erin's booking on GPU 3 has
// done nothing for most of it).
//
//	go run ./scripts/demoledger /tmp/demo.db
package main

import (
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/gpu"
	"github.com/chronos-gpu/chronos/storage"
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
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: demoledger LEDGER")
		os.Exit(2)
	}
	now := time.Now()
	at := now.Add(-2 * time.Hour)
	clock := func() time.Time { return at }
	ledger := storage.New(os.Args[1])
	sim := gpu.NewSim(gpu.SimOptions{Now: clock})
	devices := func() (string, []gpu.Device, error) {
		devs, err := sim.Devices()
		return sim.Name(), devs, err
	}
	client := func(id core.Identity) *core.Client {
		return core.NewClient(core.Options{Ledger: ledger, Devices: devices, Now: clock, As: &id})
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
			_, err := client(core.Identity{UID: b.uid, User: b.user}).Create(core.Request{Device: b.device, Memory: core.Fraction(b.share), Duration: b.length})
			at, made[i] = saved, true
			check(err)
		}
	}
	mon := core.NewMonitor(client(core.CurrentIdentity()), core.MonitorOptions{Backend: sim, Signaller: noSignals{}})
	for at = now.Add(-time.Hour); at.Before(now); at = at.Add(15 * time.Second) {
		book()
		_, err := mon.Tick()
		check(err)
	}
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "demoledger:", err)
		os.Exit(1)
	}
}
