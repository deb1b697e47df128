package monitor

import (
	"context"
	"errors"
	"fmt"

	"golang.org/x/sync/errgroup"
)

// Runner is what Beside runs: a *Monitor, or one with metrics served
// beside it.
type Runner interface {
	Run(ctx context.Context) error
}

// Beside runs fn while the monitor runs, then stops the monitor and
// waits for it, so that it never dies mid-act with the process; an error
// of either is returned.
func Beside(ctx context.Context, m Runner, fn func() error) error {
	grp, ctx := errgroup.WithContext(ctx)
	ctx, stop := context.WithCancel(ctx)
	grp.Go(func() error {
		if err := m.Run(ctx); err != nil {
			return fmt.Errorf("the monitor stopped: %w", err)
		}
		return nil
	})
	err := fn()
	stop()
	return errors.Join(err, grp.Wait())
}
