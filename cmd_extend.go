package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/chronos-gpu/chronos/core/human"
)

func extendCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "extend ID DURATION",
		Short: "Give a live booking more time",
		Long: `Give a live booking more time: DURATION more, in seconds (3600) or a
duration (90m, 1h30m, 8h, 2d). The time left afterwards may not pass the
policy's maximum (7d unless root changed it).`,
		Example: "  chronos extend 7 30m\n  chronos extend 7 1d",
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
			p, err := writerFor(c).Extend(id, d)
			if err != nil {
				return err
			}
			now := c.Now()
			if p.Upcoming(now) { // time before its start is not time left
				fmt.Fprintf(cmd.OutOrStdout(), "Extended %d by %s: now from %s until %s (%s long).\n", id, human.FormatDuration(d),
					human.FormatTime(p.Start, now), human.FormatTime(p.Expires, now), human.FormatDuration(p.TimeRemaining()))
				return nil
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Extended %d by %s: now until %s (%s left).\n", id, human.FormatDuration(d),
				human.FormatTime(p.Expires, now), human.FormatDuration(p.Expires.Sub(now)))
			return nil
		},
	}
}
