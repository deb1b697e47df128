package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/chronos-gpu/chronos/core/view"
	"github.com/chronos-gpu/chronos/gpu/procfs"
)

func statsCmd(g *globals) *cobra.Command {
	var asJSON bool
	var watch watchFlag
	cmd := &cobra.Command{
		Use:     "stats",
		Short:   "Each GPU's memory, load and processes, with the booking each counts against",
		Long:    "Each GPU's memory, load and processes, with the booking each counts against.\n\n--watch redraws every 2s (--watch 5s) until Ctrl-C, like nvidia-smi -l.",
		Example: "  chronos stats\n  chronos stats --watch\n  chronos stats --watch 5s",
		Args:    args(watch.args),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			b, notice, err := c.OpenGPUs(g.backendKind())
			if err != nil {
				return err
			}
			defer b.Close()
			if notice != "" && !asJSON {
				fmt.Fprintln(cmd.ErrOrStderr(), "chronos:", notice)
			}
			mps := procfs.DetectMPS("")
			return watch.run(cmd, "chronos stats", func(w io.Writer) error {
				st, err := c.Stats(b, mps)
				if err != nil {
					return err
				}
				if asJSON {
					return view.PrintJSON(w, st)
				}
				return view.WriteBuffered(w, func(w io.Writer) error { return view.WriteStats(w, st) })
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	watch.add(cmd)
	return cmd
}
