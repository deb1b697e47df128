package monitor

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/core/clock"
	"github.com/chronos-gpu/chronos/core/coretest"
	"github.com/chronos-gpu/chronos/core/ledger"
	"github.com/chronos-gpu/chronos/core/servicetest"
	"github.com/chronos-gpu/chronos/gpu"
)

// TestMain lets the test binary play a process of the monitor's tests
// (monitors, jobs and the writers they race: real OS processes).
func TestMain(m *testing.M) { servicetest.Main(m, playRole) }

// playRole acts on the store db names: a ledger file's path or an etcd URL.
func playRole(role, db, arg string) int {
	c := core.NewClient(core.Options{Ledger: coretest.OpenSpec(db), Devices: servicetest.Devices, Host: os.Getenv("CHRONOS_TEST_HOST")})
	switch role {
	case "book":
		return servicetest.PlayBook(c, arg)
	case "hold":
		return coretest.PlayHold(c.Ledger(), arg)
	case "wait":
		return servicetest.PlayWaiter(c, arg)
	case "monitor":
		// A monitor, with real processes named in CHRONOS_TEST_ATTACH shown
		// on the simulated idle GPU. Given a duration (arg), it runs that
		// long on the system clock. Given instants (RFC 3339, comma-
		// separated), it passes at each on a fake clock: the test picks
		// them, so no pass is early or late however loaded the machine.
		var at []time.Time
		d, err := time.ParseDuration(arg)
		if err != nil {
			for _, f := range strings.Split(arg, ",") {
				t, err := time.Parse(time.RFC3339Nano, f)
				if err != nil {
					fmt.Fprintln(os.Stderr, err)
					return coretest.RoleFailed
				}
				at = append(at, t)
			}
		}
		var fake *clock.Fake
		if at != nil {
			fake = clock.NewFake(at[0])
			c = core.NewClient(core.Options{Ledger: coretest.OpenSpec(db), Devices: servicetest.Devices, Host: os.Getenv("CHRONOS_TEST_HOST"), Clock: fake})
		}
		sim := gpu.NewSim(gpu.SimOptions{})
		devs, _ := sim.Devices() // as OpenGPUs does before a monitor starts
		if err := c.SaveInventory(ledger.InventoryOf(sim.Name(), devs, c.Now())); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return coretest.RoleFailed
		}
		for _, f := range strings.Fields(os.Getenv("CHRONOS_TEST_ATTACH")) {
			pid, _ := strconv.Atoi(f)
			sim.Attach(coretest.IdleGPU, pid, 1<<30)
		}
		m := New(c, Options{Backend: sim, OnAct: func(a Act) {
			if a.Kind == "error" {
				fmt.Fprintln(os.Stderr, a)
			}
		}})
		if fake == nil {
			ctx, cancel := context.WithTimeout(context.Background(), d)
			defer cancel()
			if err := m.Run(ctx); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return coretest.RoleFailed
			}
			break
		}
		for _, t := range at {
			fake.Set(t)
			// As Run does: pass again at once while more is due than
			// one pass's transaction holds.
			for range 100 {
				next, err := m.Tick()
				if err != nil {
					fmt.Fprintln(os.Stderr, err) // and try again, as Run does
					continue
				}
				if next.After(t) {
					break
				}
			}
		}
	case "sleep":
		// Stand in for a GPU job (or a daemon: the binary may be copied
		// under another name) until killed or arg passes.
		d, _ := time.ParseDuration(arg)
		time.Sleep(d)
	case "swap":
		// Swap a FIFO with the file at arg, as fast as possible, until
		// killed: renameat2(RENAME_EXCHANGE), so that the path is a FIFO
		// for a moment, the ledger the next.
		fifo := arg + ".fifo"
		if err := unix.Mkfifo(fifo, 0o666); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return coretest.RoleFailed
		}
		for {
			if err := unix.Renameat2(unix.AT_FDCWD, arg, unix.AT_FDCWD, fifo, unix.RENAME_EXCHANGE); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return coretest.RoleFailed
			}
		}
	default:
		return coretest.RoleFailed
	}
	return coretest.RoleOK
}
