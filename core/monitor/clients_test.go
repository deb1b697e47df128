package monitor

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/core/admission"
	"github.com/chronos-gpu/chronos/core/clock"
	"github.com/chronos-gpu/chronos/core/coretest"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/gpu"
	"github.com/chronos-gpu/chronos/storage"
	"github.com/chronos-gpu/chronos/storage/bolt"
)

// The clients the monitor's tests watch over, as core's tests make them
// (core's tests cannot import a package of helpers that imports core).

// testDevices is a DeviceSource of two 80 GiB GPUs.
func testDevices() (core.Listing, error) {
	return core.Listing{Backend: coretest.TestBackend, Devices: []gpu.Device{
		{Index: 0, UUID: "GPU-0", Name: "Test GPU", MemoryTotal: coretest.TestGPUMemory},
		{Index: 1, UUID: "GPU-1", Name: "Test GPU", MemoryTotal: coretest.TestGPUMemory},
	}}, nil
}

func newTestClient(t *testing.T, clk *clock.Fake, who domain.Identity) *core.Client {
	t.Helper()
	return clientAt(filepath.Join(t.TempDir(), "chronos.db"), clk, who)
}

func clientAt(path string, clk *clock.Fake, who domain.Identity) *core.Client {
	return clientOn(bolt.New(path), clk, who)
}

// clientOn is a client of the test GPUs on any store; clk nil is the
// system clock.
func clientOn(s storage.Store, clk *clock.Fake, who domain.Identity) *core.Client {
	opts := core.Options{Ledger: s, Devices: testDevices, As: &who}
	if clk != nil {
		opts.Clock = clk
	}
	return core.NewClient(opts)
}

func hostClient(s storage.Store, host string, who domain.Identity) *core.Client {
	return core.NewClient(core.Options{Ledger: s, Devices: testDevices, As: &who, Host: host})
}

func half(dev int, d time.Duration) core.Request {
	return core.Request{Device: dev, Memory: human.Fraction(0.5), Duration: d}
}

// uidOf looks a system user up; the test skips without it.
func uidOf(t *testing.T, name string) int {
	t.Helper()
	id, err := core.LookupUser(name)
	if err != nil || id.UID == 0 {
		t.Skipf("no %s user here", name)
	}
	return id.UID
}

func simInventory(n int, mem uint64, now time.Time) domain.Inventory {
	devs, _ := gpu.NewSim(gpu.SimOptions{Count: n, Memory: mem}).Devices()
	return core.InventoryOf(gpu.SimName, devs, now)
}

func inventoryOf(t *testing.T, c *core.Client) domain.Inventory {
	t.Helper()
	var inv domain.Inventory
	require.NoError(t, c.Ledger().View(context.Background(), func(tx *storage.Tx) error {
		var err error
		inv, _, err = tx.Inventory()
		return err
	}))
	return inv
}

// playWaiter is a waiting process: it asks for arg — a share of GPU 0, or
// "GPU SHARE" (gpu3:0 0.5) — for an hour, says "queued ID" when it joins
// the line, waits, and says "booked ID" when it is booked. SIGINT or
// SIGTERM makes it leave.
func playWaiter(c *core.Client, arg string) int {
	gpuName, shareText, ok := strings.Cut(arg, " ")
	if !ok {
		gpuName, shareText = "0", arg
	}
	host, dev, err := human.ParseGPU(gpuName)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return coretest.RoleFailed
	}
	share, _ := strconv.ParseFloat(shareText, 64)
	p, entry, err := c.Enqueue(core.Request{Host: host, Device: dev, Memory: human.Fraction(share), Duration: time.Hour}, admission.WaitOptions{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return coretest.RoleFailed
	}
	if p == nil {
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
		defer stop()
		fmt.Printf("queued %d\n", entry.ID)
		if p, err = c.Wait(ctx, entry.ID, nil); errors.Is(err, domain.ErrLeftLine) {
			fmt.Fprintln(os.Stderr, err)
			return coretest.RoleLeft
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return coretest.RoleFailed
		}
	}
	fmt.Printf("booked %d\n", p.ID)
	return coretest.RoleOK
}

// waiterProc is a waiting process started by a test.
type waiterProc struct {
	cmd     *exec.Cmd
	lines   *bufio.Scanner
	request uint64
	uid     int
}

// startWaiter starts a waiter process as uid (0: root) and returns once it
// has joined the line.
func startWaiter(t *testing.T, bin, db string, uid int, share string) *waiterProc {
	t.Helper()
	cmd := exec.Command(bin, "-test.run=^$")
	cmd.Env = coretest.RoleEnv("CHRONOS_TEST_ROLE=wait", "CHRONOS_TEST_DB="+db, "CHRONOS_TEST_ARG="+share)
	if uid != 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}}
	}
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	w := &waiterProc{cmd: cmd, lines: bufio.NewScanner(out), uid: uid}
	require.True(t, w.lines.Scan(), "the waiter said nothing")
	_, err = fmt.Sscanf(w.lines.Text(), "queued %d", &w.request)
	require.NoError(t, err, "the waiter said %q", w.lines.Text())
	return w
}

// requestIn is the waiter's request as the ledger has it now.
func (w *waiterProc) requestIn(t *testing.T, c *core.Client) domain.Request {
	t.Helper()
	r, err := c.Request(w.request)
	require.NoError(t, err)
	return r
}
