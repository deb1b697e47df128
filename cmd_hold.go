package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/chronos-gpu/chronos/core/human"
)

// holdCmd is `chronos hold ID DURATION --reason …`: exempt a booking from
// idle reclaim for a while.
func holdCmd(g *globals) *cobra.Command {
	var reason string
	cmd := &cobra.Command{
		Use:   "hold ID DURATION --reason TEXT",
		Short: "Keep an idle booking from being reclaimed for a while (yours; root: anyone's)",
		Long: `Exempt a live booking from idle reclaim for DURATION (at most the policy's
hold-max, 4h unless root changes it), saying why: a job preparing data on the
CPU, say. The hold and its reason go in the audit trail. When it ends, the idle
warnings start over from the first.`,
		Example: `  chronos hold 7 2h --reason "preprocessing on CPU"`,
		Args:    args(cobra.ExactArgs(2)),
		RunE: func(cmd *cobra.Command, a []string) error {
			id, d, err := idAndDuration(a)
			if err != nil {
				return err
			}
			c, err := g.client()
			if err != nil {
				return err
			}
			u, err := writerFor(c).Hold(id, d, reason)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Held %d until %s: it will not be reclaimed for being idle before then.\n",
				id, human.FormatTime(u.HeldUntil, c.Now()))
			return nil
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why the booking sits idle (required; it goes in the audit trail)")
	return cmd
}

// idAndDuration reads the ID DURATION arguments of extend and hold.
func idAndDuration(a []string) (uint64, time.Duration, error) {
	id, err := human.ParseID(a[0])
	if err != nil {
		return 0, 0, err
	}
	d, err := human.ParseDuration(a[1])
	return id, d, err
}
