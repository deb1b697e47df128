package view

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/core/policy"
)

// WritePolicy prints every policy knob with its value, its default and
// what it does, then each user's or group's settings: what `chronos
// policy` and `policy set` show.
func WritePolicy(w io.Writer, p domain.Policy) error {
	knobs, overrides := policy.Knobs(p)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tVALUE\tDEFAULT\tMEANING")
	for _, k := range knobs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", k.Key, k.Value, k.Default, k.Meaning)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, o := range overrides {
		if _, err := fmt.Fprintln(w, "set: "+human.Printable(o)); err != nil {
			return err
		}
	}
	return nil
}
