package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/core/admission"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/core/keeper"
	"github.com/chronos-gpu/chronos/core/supervisor"
	"github.com/chronos-gpu/chronos/core/view"
	"github.com/chronos-gpu/chronos/gpu/procfs"
)

//nolint:funlen // the command: its flags, then the order a run needs (parse, signals, Run, exit status)
func runCmd(g *globals) *cobra.Command {
	var booking, compute, warnSignal string
	var grace graceFlag
	var line lineFlags
	cmd := &cobra.Command{
		Use:   "run [DEVICE MEMORY DURATION | --booking ID] -- COMMAND [ARGS...]",
		Short: "Run a command inside a booking, ended at the booking's deadline",
		Long: `Book a share (or join your live booking with --booking), run the command
with only the booked GPU visible (CUDA_VISIBLE_DEVICES; on AMD ROCR_ and
HIP_VISIBLE_DEVICES; on Intel ZE_AFFINITY_MASK), CHRONOS_BOOKING_ID (and
CHRONOS_PARTITION_ID, its old name), CHRONOS_EXPIRES_AT and
CHRONOS_DEADLINE_UNIX set (and, while an MPS daemon runs, the booking's
memory and compute limits), and release the booking when the command ends.

MEMORY is a fraction (0.5), a percent (50%) or a size (40GiB).
DURATION is seconds (3600) or a duration (90m, 1h30m, 8h, 2d).

No signal comes before the end unless you ask: the deadline is in
CHRONOS_DEADLINE_UNIX. --signal USR1@5m sends SIGUSR1 to the command's process
group five minutes before the end (as Slurm's --signal; handle it, since
SIGUSR1's default action ends a program). At the deadline the group gets
SIGTERM, then SIGKILL after the grace period. chronos exits with the command's
status, or 124 when it stopped the command because the booking ended.

With --wait a request that cannot start now waits in line (Ctrl-C leaves
it); with --at the booking is made ahead and the command starts at its start.`,
		Example: "  chronos run 0 0.5 1h -- python train.py\n  chronos run 0 0.5 8h --signal USR1@5m -- python train.py\n  chronos run --booking 7 -- python eval.py\n" +
			"  chronos run 0 50% 2h --wait -- python train.py\n  chronos run 0 50% 2h --at 14:00 -- python train.py",
		RunE: func(cmd *cobra.Command, a []string) error {
			dash := cmd.ArgsLenAtDash()
			if dash < 0 || dash == len(a) {
				return usageError{errors.New("run: no command after -- (chronos run 0 0.5 1h -- python train.py)")}
			}
			spec, command := a[:dash], a[dash:]
			stderr := cmd.ErrOrStderr()
			opts := supervisor.RunOptions{Command: command, Grace: grace.orPolicy(), Stdin: cmd.InOrStdin(), Stdout: cmd.OutOrStdout(), Stderr: stderr,
				Say: func(f string, v ...any) { fmt.Fprintf(stderr, "chronos: "+f+"\n", v...) }}
			var err error
			if cmd.Flags().Changed("signal") && cmd.Flags().Changed("warn-signal") {
				return usageError{errors.New("run: --warn-signal is the old name of --signal: give one")}
			}
			if opts.WarnSignal, err = human.ParseWarnSignal(warnSignal); err != nil {
				return err
			}
			switch {
			case booking != "" && len(spec) == 0:
				if opts.Partition, err = human.ParseID(booking); err != nil {
					return err
				}
			case booking == "" && len(spec) == 3:
				if opts.Request, err = core.ParseRequest(spec[0], spec[1], spec[2], compute); err != nil {
					return err
				}
				if err := line.apply(&opts.Request); err != nil {
					return err
				}
				opts.Wait = line.waitOptions()
			default:
				return usageError{errors.New("run: give DEVICE MEMORY DURATION, or --booking ID, before --")}
			}
			c, err := g.client()
			if err != nil {
				return err
			}
			if k, guarded := writerFor(c).(*keeper.Client); guarded {
				opts.Writes = k // the keeper makes the run's writes, as this member
			}
			if opts.Wait != nil {
				opts.OnQueue = func(e admission.QueueEntry) { opts.Say("%s", view.WaitingLine(c, e)) }
			}
			opts.MPS = procfs.DetectMPS("")
			// Ctrl-C, SIGTERM and a hang-up end a wait in line or for the
			// start; then they go on to the command, which decides when
			// chronos ends, and until then it follows the ledger.
			sigs := make(chan os.Signal, 4)
			signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
			defer signal.Stop(sigs)
			opts.Signals = sigs
			res, err := supervisor.Run(context.WithoutCancel(cmd.Context()), c, opts)
			if err != nil {
				return err
			}
			if res.Expired {
				return exitStatus{code: supervisor.ExitExpired, msg: fmt.Sprintf("booking %d ended; the command was stopped (exit %d)", res.Partition, supervisor.ExitExpired)}
			}
			return exitStatus{code: res.ExitCode}
		},
	}
	line.add(cmd)
	cmd.Flags().StringVar(&booking, "booking", "", "run inside this live booking of yours instead of booking (--partition works too)")
	// --partition, the old name, is read as --booking.
	cmd.Flags().SetNormalizeFunc(func(_ *pflag.FlagSet, name string) pflag.NormalizedName {
		if name == "partition" {
			name = "booking"
		}
		return pflag.NormalizedName(name)
	})
	cmd.Flags().StringVar(&compute, "compute", "", "cap on the share of SMs, e.g. 25% (applied through MPS)")
	cmd.Flags().StringVar(&warnSignal, "signal", "none", "send SIG to the command LEAD before the end, as SIG@LEAD (USR1@5m)")
	cmd.Flags().StringVar(&warnSignal, "warn-signal", "none", "the old name of --signal")
	cmd.Flags().Var(&grace, "grace", "time between SIGTERM and SIGKILL, e.g. 10s (default: the policy's, 30s unless root changed it)")
	return cmd
}

// graceFlag is --grace: unset, the policy's grace applies, so the flag has
// no default of its own to show.
type graceFlag struct {
	d   time.Duration
	set bool
}

func (f *graceFlag) String() string {
	if !f.set {
		return ""
	}
	return f.d.String()
}

func (f *graceFlag) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return fmt.Errorf("not a duration like 10s or 1m")
	}
	f.d, f.set = d, true
	return nil
}

func (f *graceFlag) Type() string { return "duration" }

// orPolicy is the grace RunOptions takes: negative means the policy's.
func (f *graceFlag) orPolicy() time.Duration {
	if !f.set {
		return -1
	}
	return f.d
}
