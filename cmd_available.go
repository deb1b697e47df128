package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/core/view"
)

func availableCmd(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "available [GPU | HOST:]",
		Short:   "How much of each GPU is free to book",
		Example: "  chronos available 0\n  chronos available gpu3:",
		Args:    args(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			dev, host := -1, ""
			if len(a) == 1 {
				var err error
				if h, ok := strings.CutSuffix(a[0], ":"); ok {
					host = h
				} else if host, dev, err = human.ParseGPU(a[0]); err != nil {
					return err
				}
			}
			c, err := g.client()
			if err != nil {
				return err
			}
			avail, err := c.AvailableOn(host, dev)
			if err != nil {
				return err
			}
			if asJSON {
				out := make([]view.AvailableJSON, 0, len(avail))
				for _, a := range avail {
					out = append(out, view.Available(a))
				}
				return view.PrintJSON(cmd.OutOrStdout(), out)
			}
			for _, a := range avail {
				fmt.Fprintln(cmd.OutOrStdout(), a)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
