package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/chronos-gpu/chronos/gpu"
	"github.com/chronos-gpu/chronos/tui"
)

func statsCmd(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "stats",
		Short: "Each GPU's memory, load and processes, with the booking each counts against",
		Args:  args(noArgs),
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
			st, err := c.Stats(b, gpu.DetectMPS(""))
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), st)
			}
			return writeBuffered(cmd.OutOrStdout(), func(w io.Writer) error { return tui.WriteStats(w, st) })
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
