package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core/coretest"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/storage"
)

// TestGuardedEtcdFigures measures, for BENCHMARKS.md, a member's whole
// create and list commands through the keeper against root's direct ones
// on the same etcd, alternating, in one run. GUARDED_ETCD_FIGURES=1 runs
// it (real time, on purpose).
func TestGuardedEtcdFigures(t *testing.T) {
	if os.Getenv("GUARDED_ETCD_FIGURES") == "" {
		t.Skip("GUARDED_ETCD_FIGURES=1 measures guarded mode on etcd")
	}
	lab := newEtcdLab(t)
	require.Equal(t, 0, lab.initGuarded(t, nil).code)
	lab.startKeeper(t)
	took := map[string][]time.Duration{}
	timed := func(name string, cred *syscall.Credential, args ...string) result {
		start := time.Now()
		r := lab.as(t, cred, args...)
		took[name] = append(took[name], time.Since(start))
		require.Equal(t, 0, r.code, r.stderr)
		return r
	}
	for i := range 30 {
		for _, who := range []struct {
			name string
			cred *syscall.Credential
		}{{"root", nil}, {"member", member}} {
			timed(who.name+" create", who.cred, "create", "0", "1%", "1h")
			timed(who.name+" list", who.cred, "list")
			require.Equal(t, 0, lab.as(t, who.cred, "release", "--mine", "--yes").code, "round %d", i)
		}
	}
	size := func() int {
		var data []byte
		require.NoError(t, lab.rootStore(t).View(context.Background(), func(tx *storage.Tx) error {
			snap, err := storage.TakeSnapshot(tx)
			if err == nil {
				data, _, err = snap.Encode()
			}
			return err
		}))
		return len(data)
	}
	fmt.Printf("the ledger after 30 rounds: a snapshot of %d bytes\n", size())
	// A ledger with a long history: 2,000 more events of 1 KB.
	for range 20 {
		require.NoError(t, lab.rootStore(t).Update(context.Background(), func(tx *storage.Tx) error {
			for range 100 {
				if err := tx.AddEvent(domain.Event{Time: time.Now(), Kind: domain.EventPolicy, Detail: strings.Repeat("z", 1000)}); err != nil {
					return err
				}
			}
			return nil
		}))
	}
	for range 10 {
		timed("root long list", nil, "list")
		timed("member long list", member, "list")
	}
	fmt.Printf("the ledger with 2,000 more events: a snapshot of %d bytes\n", size())
	for _, what := range []string{"create", "list", "long list"} {
		root, member := coretest.Median(took["root "+what]), coretest.Median(took["member "+what])
		fmt.Printf("%s (whole command, median of 30): root direct %.1f ms, member through the keeper %.1f ms (%.2fx)\n",
			what, coretest.Ms(root), coretest.Ms(member), float64(member)/float64(root))
	}
}
