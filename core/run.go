package core

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/chronos-gpu/chronos/gpu"
	"github.com/chronos-gpu/chronos/storage"
)

// ExitExpired is the status `chronos run` exits with when it stopped the
// command because its booking ended (as timeout(1) does).
const ExitExpired = 124

// RunOptions describe one `chronos run`.
type RunOptions struct {
	// Partition runs inside an existing live booking of the caller's; zero
	// books Request instead, and releases it when the command ends.
	Partition uint64
	Request   Request
	Command   []string
	// WarnSignal goes to the command at the warning lead (0: none).
	WarnSignal syscall.Signal
	// Grace is the time between SIGTERM and SIGKILL; negative: the policy's.
	Grace time.Duration
	// MPS is the MPS daemon as detected; when it runs, the booking's limits
	// are passed to the command's CUDA clients.
	MPS            gpu.MPS
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	Say            func(format string, args ...any) // chronos's own messages
}

// RunResult is how a run ended.
type RunResult struct {
	Partition uint64
	// ExitCode is the command's status, 128+N if a signal ended it, or
	// ExitExpired when chronos stopped it at the booking's end.
	ExitCode int
	Expired  bool
}

// Run books (or joins) a partition, runs the command in it with the
// partition's environment, warns it before the deadline, stops it at the
// deadline (SIGTERM, then SIGKILL after the grace period, to its whole
// process group), and releases the booking it made when the command ends.
func (c *Client) Run(ctx context.Context, o RunOptions) (RunResult, error) {
	if len(o.Command) == 0 {
		return RunResult{}, inputErr("no command to run (chronos run 0 0.5 1h -- python train.py)")
	}
	path, err := exec.LookPath(o.Command[0])
	if err != nil {
		return RunResult{}, inputErr("cannot run %q: %v", o.Command[0], errors.Unwrap(err))
	}
	say := o.Say
	if say == nil {
		say = func(string, ...any) {}
	}
	pol, err := c.Policy()
	if err != nil {
		return RunResult{}, err
	}
	grace := o.Grace
	if grace < 0 {
		grace = pol.Grace
	}

	var p storage.Partition
	booked := false
	if o.Partition != 0 {
		err = c.ledger.View(func(tx *storage.Tx) error {
			p, err = c.mine(tx, o.Partition, "run in")
			return err
		})
		if err != nil {
			return RunResult{}, err
		}
		if p.Host != c.host {
			return RunResult{}, c.elsewhere(fmt.Sprintf("booking %d", p.ID), p.Host, p.Device)
		}
	} else {
		if host, err := c.gpuHost(o.Request.Host); err != nil {
			return RunResult{}, err
		} else if host != c.host {
			return RunResult{}, c.elsewhere("GPU "+FormatGPU(host, o.Request.Device), host, o.Request.Device)
		}
		got, err := c.Create(o.Request)
		if err != nil {
			return RunResult{}, err
		}
		p, booked = got.Partition, true
		say("booked %d: %s (%s) of GPU %d until %s", p.ID, FormatPercent(p.SharePPM), FormatBytes(p.Bytes), p.Device, p.Expires.Local().Format("15:04:05"))
	}
	release := func() {
		if booked {
			if _, err := c.Release(p.ID); err != nil && !errors.Is(err, ErrNotLive) {
				say("could not release booking %d: %v", p.ID, err)
			}
		}
	}

	cmd := exec.Command(path, o.Command[1:]...)
	cmd.Args[0] = o.Command[0]
	cmd.Env = RunEnv(os.Environ(), p, o.MPS)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = o.Stdin, o.Stdout, o.Stderr
	// Its own process group, so that signals reach everything it starts.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		release()
		return RunResult{}, fmt.Errorf("start %s: %w", o.Command[0], err)
	}
	pgid := cmd.Process.Pid
	// The start time names this exact process in claims, as monitors name it.
	childStart, _ := gpu.ProcStartTime(pgid)
	// signalOnce sends sig to the command's group unless a monitor has
	// already signalled the command for the same reason: both take the same
	// claim in the ledger, so the command gets each signal once.
	signalOnce := func(kind string, sig syscall.Signal, why string) bool {
		won, err := c.claimSignal(p, kind, pgid, childStart, fmt.Sprintf("%s to %s (process group): %s", signalName(sig), o.Command[0], why))
		if err != nil {
			say("could not record the signal in the ledger (%v); sending it anyway", err)
			won = true
		}
		if won {
			_ = syscall.Kill(-pgid, sig)
		}
		return won
	}

	forward := make(chan os.Signal, 4)
	signal.Notify(forward, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(forward)

	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	changes := c.ledger.Changes(watchCtx, time.Second)

	warned := o.WarnSignal == 0
	var termAt time.Time // when SIGTERM went out
	expired := false
	timer := time.NewTimer(0)
	defer timer.Stop()
	var waitErr error
loop:
	for {
		now := c.now()
		switch {
		case termAt.IsZero() && !now.Before(p.Expires):
			expired = true
			termAt = now
			if signalOnce("term", syscall.SIGTERM, fmt.Sprintf("booking #%d ended", p.ID)) {
				say("booking %d ended: sent SIGTERM (SIGKILL in %s)", p.ID, FormatDuration(grace))
			} else {
				say("booking %d ended: a monitor sent SIGTERM (SIGKILL in %s)", p.ID, FormatDuration(grace))
			}
		case !termAt.IsZero() && !now.Before(termAt.Add(grace)):
			if signalOnce("kill", syscall.SIGKILL, fmt.Sprintf("still running %s after SIGTERM", FormatDuration(grace))) {
				say("still running %s after SIGTERM: sent SIGKILL", FormatDuration(grace))
			}
			termAt = now.Add(24 * time.Hour) // once
		case !warned && !now.Before(p.Expires.Add(-WarnLead(p, pol.WarnLead))):
			warned = true
			say("booking %d ends in %s: sending %s", p.ID, FormatDuration(p.Expires.Sub(now)), signalName(o.WarnSignal))
			_ = syscall.Kill(-pgid, o.WarnSignal)
		}
		next := p.Expires
		if !warned {
			next = p.Expires.Add(-WarnLead(p, pol.WarnLead))
		}
		if !termAt.IsZero() {
			next = termAt.Add(grace)
		}
		timer.Reset(min(max(time.Until(next), 0), maxSleep))
		select {
		case waitErr = <-exited:
			break loop
		case s := <-forward:
			_ = syscall.Kill(-pgid, s.(syscall.Signal))
		case <-changes:
			// Extended or released elsewhere: follow the ledger.
			if got, err := c.Get(p.ID); err == nil {
				if got.State == storage.Released && termAt.IsZero() {
					say("booking %d was released: stopping the command", p.ID)
					p.Expires = c.now()
				} else if got.State == storage.Live && got.Expires.After(p.Expires) && termAt.IsZero() {
					p.Expires = got.Expires
					warned = o.WarnSignal == 0 // warn again before the new end
				}
			}
		case <-timer.C:
		}
	}
	release()
	res := RunResult{Partition: p.ID, ExitCode: exitCodeOf(waitErr), Expired: expired}
	if expired {
		res.ExitCode = ExitExpired
	}
	return res, nil
}

// elsewhere refuses to run a command here for a GPU of another host.
func (c *Client) elsewhere(what, host string, device int) error {
	return fmt.Errorf("%w: %s is on %s, and chronos run starts the command on this host (%s): run it on %s (chronos run %d …)",
		ErrOtherHost, what, host, c.host, host, device)
}

// claimSignal takes the claim a monitor would take before signalling the
// process pid (started at start), and in the same transaction flips the
// booking to expired when its deadline has passed. It reports whether this
// caller got the claim.
func (c *Client) claimSignal(p storage.Partition, kind string, pid int, start uint64, detail string) (bool, error) {
	key := fmt.Sprintf("%s/%d/%d", kind, pid, start)
	won := false
	err := c.ledger.Update(func(tx *storage.Tx) error {
		won = false
		claims, err := tx.Claims()
		if err != nil {
			return err
		}
		if _, taken := claims[key]; taken {
			return nil
		}
		now := c.now()
		if err := tx.PutClaim(key, storage.Claim{By: fmt.Sprintf("chronos run %d", os.Getpid()), At: now}); err != nil {
			return err
		}
		cur, err := tx.Partition(p.ID)
		if err != nil {
			return err
		}
		if cur.State == storage.Live && !now.Before(cur.Expires) {
			cur.State, cur.Ended = storage.Expired, cur.Expires
			if err := tx.PutPartition(&cur); err != nil {
				return err
			}
			late := now.Sub(cur.Expires).Round(time.Microsecond)
			if err := c.event(tx, storage.EventExpired, cur, fmt.Sprintf("GPU %d, %s; ended by chronos run; %s after the deadline", cur.Device, FormatPercent(cur.SharePPM), late)); err != nil {
				return err
			}
		}
		won = true
		return c.event(tx, storage.EventSignalled, cur, fmt.Sprintf("pid %d: %s", pid, detail))
	})
	return won, err
}

func exitCodeOf(err error) int {
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	}
	return 1
}

// RunEnv is the command's environment: the caller's, unchanged, except for
// the variables that tie it to the partition.
func RunEnv(base []string, p storage.Partition, mps gpu.MPS) []string {
	set := map[string]string{
		"CUDA_VISIBLE_DEVICES":  visibleDevice(p),
		gpu.PartitionEnv:        strconv.FormatUint(p.ID, 10),
		"CHRONOS_EXPIRES_AT":    p.Expires.UTC().Format(time.RFC3339Nano),
		"CHRONOS_DEADLINE_UNIX": strconv.FormatFloat(float64(p.Expires.UnixNano())/1e9, 'f', 6, 64),
	}
	if mps.Running {
		// The command sees one device, so the limit names device 0.
		set["CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"] = fmt.Sprintf("0=%dM", p.Bytes>>20)
		if p.ComputePct > 0 {
			set["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] = strconv.Itoa(p.ComputePct)
		}
	}
	out := make([]string, 0, len(base)+len(set))
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		if _, ours := set[k]; !ours {
			out = append(out, kv)
		}
	}
	for _, k := range []string{"CUDA_VISIBLE_DEVICES", gpu.PartitionEnv, "CHRONOS_EXPIRES_AT", "CHRONOS_DEADLINE_UNIX",
		"CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"} {
		if v, ok := set[k]; ok {
			out = append(out, k+"="+v)
		}
	}
	return out
}

// visibleDevice names the booked GPU for CUDA: by UUID when NVML gave one
// (indexes can differ between NVML and CUDA), else by index.
func visibleDevice(p storage.Partition) string {
	if strings.HasPrefix(p.DeviceUUID, "GPU-") || strings.HasPrefix(p.DeviceUUID, "MIG-") {
		return p.DeviceUUID
	}
	return strconv.Itoa(p.Device)
}

// ParseSignal reads a signal name ("SIGUSR1", "usr1", "10") or "none".
func ParseSignal(s string) (syscall.Signal, error) {
	t := strings.ToUpper(strings.TrimSpace(s))
	if t == "NONE" || t == "" {
		return 0, nil
	}
	if n, err := strconv.Atoi(t); err == nil && n > 0 && n < 65 {
		return syscall.Signal(n), nil
	}
	t = strings.TrimPrefix(t, "SIG")
	for sig, name := range signalNames {
		if name == t {
			return sig, nil
		}
	}
	return 0, inputErr("unknown signal %q (try SIGUSR1, SIGUSR2, SIGINT or none)", s)
}

var signalNames = map[syscall.Signal]string{
	syscall.SIGHUP: "HUP", syscall.SIGINT: "INT", syscall.SIGQUIT: "QUIT", syscall.SIGUSR1: "USR1",
	syscall.SIGUSR2: "USR2", syscall.SIGTERM: "TERM", syscall.SIGALRM: "ALRM", syscall.SIGWINCH: "WINCH",
}

func signalName(s syscall.Signal) string {
	if n, ok := signalNames[s]; ok {
		return "SIG" + n
	}
	return s.String()
}
