// Command demoledger fills a ledger with bookings by the simulated GPUs'
// users (alice, bob, carol, …), so that screenshots and demos show the app
// as a busy lab sees it. It acts as those users through core's Go API; the
// real command line always books as the OS user who runs it.
//
//	go run ./scripts/demoledger /tmp/demo.db
package main

import (
	"fmt"
	"os"
	"time"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/gpu"
	"github.com/chronos-gpu/chronos/storage"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: demoledger LEDGER")
		os.Exit(2)
	}
	sim := gpu.NewSim(gpu.SimOptions{})
	devices := func() (string, []gpu.Device, error) {
		devs, err := sim.Devices()
		return sim.Name(), devs, err
	}
	for _, b := range []struct {
		uid    int
		user   string
		device int
		share  float64
		length time.Duration
	}{
		{2001, "alice", 0, 0.60, 3*time.Hour + 12*time.Minute},
		{2002, "bob", 1, 0.30, 2*time.Hour + 5*time.Minute},
		{2004, "dave", 1, 0.20, 4*time.Minute + 30*time.Second},
		{2002, "bob", 2, 0.25, 7*time.Hour + 40*time.Minute},
		{2005, "erin", 3, 0.50, 47 * time.Minute},
		{2006, "frank", 3, 0.25, 25 * time.Minute},
	} {
		c := core.NewClient(core.Options{Ledger: storage.New(os.Args[1]), Devices: devices, As: &core.Identity{UID: b.uid, User: b.user}})
		if _, err := c.Create(core.Request{Device: b.device, Memory: core.Fraction(b.share), Duration: b.length}); err != nil {
			fmt.Fprintln(os.Stderr, "demoledger:", err)
			os.Exit(1)
		}
	}
}
