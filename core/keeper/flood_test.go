package keeper

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core/clock"
	"github.com/chronos-gpu/chronos/storage"
)

// figureRoles are the processes the figures start as other users (see
// playRole).
var figureRoles = map[string]func() int{"flood": flood, "creates": timedCreates}

// floodCount is what a flood sent and how it was answered.
type floodCount struct {
	Sent, Done, Busy, Failed int64
	Seconds                  float64
}

// TestKeeperFloodFigure measures, for BENCHMARKS.md, another user's
// create through the keeper (daemon's, p50 of its creates) alone and
// while a member (nobody) floods the keeper: requests sent as fast as
// KEEPER_FLOOD_RATE a second (10,000), each on a connection of its own,
// without waiting for the ones before. Two floods: creates and releases
// that commit, and releases of a booking not the member's, which fail
// inside their transaction. It runs only with KEEPER_FIGURES=1.
func TestKeeperFloodFigure(t *testing.T) {
	if os.Getenv("KEEPER_FIGURES") == "" {
		t.Skip("KEEPER_FIGURES=1 measures the keeper")
	}
	// KEEPER_RATE=-1 measures the keeper without its pacing of one user's
	// requests (see DefaultRate), for the baseline.
	k := startKeeper(t, func(s *Server) { s.Rate, _ = strconv.ParseFloat(os.Getenv("KEEPER_RATE"), 64) })
	daemon := &syscall.Credential{Uid: 1, Gid: daemonGID}
	victim := func() (p50, p90 time.Duration) {
		cmd := exec.Command(publicTestBinary(t), "-test.run=^$")
		cmd.Env = append(os.Environ(), "KEEPER_TEST_ROLE=creates", "KEEPER_TEST_SOCKET="+k.sock)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: daemon}
		cmd.Stderr = os.Stderr
		out, err := cmd.Output()
		require.NoError(t, err)
		var took []time.Duration
		require.NoError(t, json.Unmarshal(out, &took))
		return took[len(took)/2], took[len(took)*9/10]
	}
	// A booking of root's, which the member's releases cannot touch.
	r, err := exchangeFrame(k.sock, frameOf(Request{Op: OpCreate, Create: &Create{Device: 0, Bytes: 1 << 20, Duration: time.Hour}}))
	require.NoError(t, err)
	require.Equal(t, ReplyDone, r.Kind, r.Error)

	base50, base90 := victim()
	fmt.Printf("daemon's create alone: p50 %s, p90 %s (load %s)\n", base50, base90, loadAverage())
	kinds := []string{"create", "refused"}
	if only := os.Getenv("KEEPER_FLOOD_KIND"); only != "" {
		kinds = []string{only}
	}
	for _, kind := range kinds {
		cmd := exec.Command(publicTestBinary(t), "-test.run=^$")
		cmd.Env = append(os.Environ(), "KEEPER_TEST_ROLE=flood", "KEEPER_TEST_SOCKET="+k.sock, "KEEPER_FLOOD_KIND="+kind,
			fmt.Sprintf("KEEPER_FLOOD_VICTIM=%d", r.Partition.ID))
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: member}
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, os.Stderr
		require.NoError(t, cmd.Start())
		<-clock.Kernel.After(500 * time.Millisecond) // the flood under way
		p50, p90 := victim()
		// The member's bookings not yet released: what every create
		// weighs. (After the flood more are: creates it sent and gave up
		// on still book.)
		live, err := k.root.List(false)
		require.NoError(t, err)
		fmt.Printf("%d bookings live during the flood\n", len(live))
		require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
		require.NoError(t, cmd.Wait())
		var n floodCount
		require.NoError(t, json.Unmarshal(out.Bytes(), &n), "%s", out.String())
		fmt.Printf("flood of %s: %.0f requests a second sent (%.0f answered done, %.0f busy, %.0f refused or failed); "+
			"daemon's create p50 %s (%.2fx alone), p90 %s (%.2fx) (load %s)\n",
			kind, float64(n.Sent)/n.Seconds, float64(n.Done)/n.Seconds, float64(n.Busy)/n.Seconds, float64(n.Failed)/n.Seconds,
			p50, float64(p50)/float64(base50), p90, float64(p90)/float64(base90), loadAverage())
	}
}

func loadAverage() string {
	b, _ := os.ReadFile("/proc/loadavg")
	return strings.Join(strings.Fields(string(b))[:3], " ")
}

func frameOf(req Request) []byte {
	req.V = Version
	body, _ := json.Marshal(req)
	return rawFrame(uint32(len(body)), body)
}

// exchangeFrame sends one frame to the keeper at sock, on a connection of
// its own, and returns the final reply.
func exchangeFrame(sock string, frame []byte) (Reply, error) {
	conn, err := net.Dial("unix", sock)
	if err != nil {
		return Reply{}, err
	}
	defer conn.Close()
	if _, err := conn.Write(frame); err != nil {
		return Reply{}, err
	}
	for {
		var r Reply
		if err := ReadFrame(conn, &r); err != nil {
			return Reply{}, err
		}
		if r.Kind == ReplyDone || r.Kind == ReplyError {
			return r, nil
		}
	}
}

// timedCreates makes 200 creates (KEEPER_CREATES), each released before
// the next, 20 ms apart: faster than a person's commands (a chronos
// command takes about 10 ms to start), and within one user's rate (see
// DefaultRate), so that it measures the flood and not its own pacing. It
// prints how long each create took, sorted, as JSON.
func timedCreates() int {
	sock := os.Getenv("KEEPER_TEST_SOCKET")
	create := frameOf(Request{Op: OpCreate, Create: &Create{Device: 1, Bytes: 1 << 20, Duration: time.Hour}})
	var took []time.Duration
	creates, _ := strconv.Atoi(os.Getenv("KEEPER_CREATES"))
	if creates <= 0 {
		creates = 200
	}
	for range creates {
		start := clock.Kernel.Now()
		r, err := exchangeFrame(sock, create)
		took = append(took, clock.Kernel.Now().Sub(start))
		if err == nil && r.Kind != ReplyDone {
			err = errors.New(r.Error)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "create:", err)
			return 1
		}
		if r, err = exchangeFrame(sock, frameOf(Request{Op: OpRelease, ID: r.Partition.ID})); err != nil || r.Kind != ReplyDone {
			fmt.Fprintln(os.Stderr, "release:", err, r.Error)
			return 1
		}
		<-clock.Kernel.After(20 * time.Millisecond)
	}
	slices.Sort(took)
	_ = json.NewEncoder(os.Stdout).Encode(took)
	return 0
}

// flood sends requests to the keeper at KEEPER_FLOOD_RATE a second
// (10,000 unless set), each on a connection of its own and without
// waiting for those before, until SIGTERM, and prints what it sent and
// how it was answered. KEEPER_FLOOD_KIND=create sends creates, each
// released once booked (the releases, tried again until done, count
// against the rate: it is every request the keeper is sent); refused
// sends releases of booking KEEPER_FLOOD_VICTIM, another user's.
func flood() int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	sock := os.Getenv("KEEPER_TEST_SOCKET")
	rate, _ := strconv.Atoi(os.Getenv("KEEPER_FLOOD_RATE"))
	if rate <= 0 {
		rate = 10_000
	}
	victim, _ := strconv.ParseUint(os.Getenv("KEEPER_FLOOD_VICTIM"), 10, 64)
	create := frameOf(Request{Op: OpCreate, Create: &Create{Device: 0, Bytes: 1 << 20, Duration: time.Hour}})
	refused := frameOf(Request{Op: OpRelease, ID: victim})
	var n floodCount
	if os.Getenv("KEEPER_FLOOD_KIND") == "cpu" {
		// No requests: a process that takes one processor, to tell the
		// keeper's share of a slowdown from the processors'.
		for spins := 0; ctx.Err() == nil; spins++ {
			n.Sent += int64(spins % 2)
		}
		_ = json.NewEncoder(os.Stdout).Encode(n)
		return 0
	}
	// The rate's tokens, a tick's worth at a time; those the flood is too
	// far behind to use are dropped, not saved up.
	tokens := make(chan struct{}, max(rate/100, 1))
	start := clock.Kernel.Now()
	go func() {
		const tick = time.Millisecond
		for given := 0; ctx.Err() == nil; {
			due := int(clock.Kernel.Now().Sub(start) / (time.Second / time.Duration(rate)))
			for ; given < due; given++ {
				select {
				case tokens <- struct{}{}:
				default:
				}
			}
			select {
			case <-clock.Kernel.After(tick):
			case <-ctx.Done():
			}
		}
	}()
	// send sends frame once the rate allows, and returns the reply, and
	// whether it was sent at all (not once the flood ends).
	send := func(frame []byte) (r Reply, sent bool) {
		select {
		case <-tokens:
		case <-ctx.Done():
			return Reply{}, false
		}
		atomic.AddInt64(&n.Sent, 1)
		r, err := exchangeFrame(sock, frame)
		switch {
		case err == nil && r.Kind == ReplyDone:
			atomic.AddInt64(&n.Done, 1)
		case err == nil && errors.Is(r.err(), storage.ErrBusy):
			atomic.AddInt64(&n.Busy, 1)
		default:
			atomic.AddInt64(&n.Failed, 1)
		}
		return r, true
	}
	one := func() {
		if os.Getenv("KEEPER_FLOOD_KIND") == "refused" {
			send(refused)
			return
		}
		r, _ := send(create)
		if r.Kind != ReplyDone || r.Partition == nil {
			return
		}
		// Released, however busy the keeper: a flood that left its
		// bookings behind would measure admission over thousands of
		// them. Each try is one of the flood's requests.
		release := frameOf(Request{Op: OpRelease, ID: r.Partition.ID})
		for {
			if r, sent := send(release); !sent || r.Kind == ReplyDone {
				return
			}
		}
	}
	const workers = 2048 // the flood's requests under way at once
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for ctx.Err() == nil {
				one()
			}
		})
	}
	<-ctx.Done()
	n.Seconds = clock.Kernel.Now().Sub(start).Seconds()
	wg.Wait()
	_ = json.NewEncoder(os.Stdout).Encode(n)
	return 0
}
