package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core/clock"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/report"
	"github.com/chronos-gpu/chronos/core/view"
	"github.com/chronos-gpu/chronos/storage"
)

// usage shows, beside what is held now, the report's figures for the last
// 7 and 30 days: exact on a seeded ledger whose bookings ended long enough
// ago that nothing moves while the test runs, in two tables that each fit
// in 80 columns, and the same in --json.
func TestUsageShowsTheReportsFigures(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "chronos.db")
	now := clock.System().Now()
	// daemon: half a GPU for 4h three days ago (3h used, 1h idle), and a
	// whole GPU for 2h twenty days ago (1h used, 30m idle).
	seedUsage(t, db, 1, "daemon", 0, 500_000, now.Add(-72*time.Hour), 4*time.Hour, 3*time.Hour, time.Hour)
	seedUsage(t, db, 1, "daemon", 1, 1_000_000, now.Add(-20*24*time.Hour), 2*time.Hour, time.Hour, 30*time.Minute)
	// nobody: a quarter of a GPU for 2h ten days ago, all idle; and GPUs
	// used with no booking: 1.5h two days ago, 30m ten days ago.
	seedUsage(t, db, 65534, "nobody", 1, 250_000, now.Add(-10*24*time.Hour), 2*time.Hour, 0, 2*time.Hour)
	require.NoError(t, ledgerAt(db).Update(context.Background(), func(tx *storage.Tx) error {
		parts, err := tx.Partitions()
		for _, p := range parts { // what the ending of each wrote for fair share
			err = cmpErr(err, tx.AddHeld(p.UID, domain.Held{Partition: p.ID, Start: p.Start, End: p.Ended, SharePPM: p.SharePPM}))
		}
		err = cmpErr(err, tx.PutUserUsage(domain.UserUsage{UID: 1, User: "daemon", GPUSeconds: 4 * 3600, At: now.Add(-68 * time.Hour)}))
		err = cmpErr(err, tx.PutUserUsage(domain.UserUsage{UID: 65534, User: "nobody", GPUSeconds: 1800, At: now.Add(-238 * time.Hour)}))
		err = cmpErr(err, tx.AddUnbooked(now.Add(-48*time.Hour), 65534, "nobody", 90*time.Minute))
		return cmpErr(err, tx.AddUnbooked(now.Add(-10*24*time.Hour), 65534, "nobody", 30*time.Minute))
	}))

	r := cli(t, db, "usage")
	require.Equal(t, 0, r.code, r.stderr)
	lines := strings.Split(strings.TrimRight(r.stdout, "\n"), "\n")
	require.Len(t, lines, 8, r.stdout)
	require.Regexp(t, `^USER\s+GPUS NOW\s+AHEAD\s+GPUS LEFT\s+GPU-H LEFT\s+USAGE GPU-H\s+FAIR-SHARE\s+WAITING$`, lines[0])
	require.Regexp(t, `^daemon\s+0\s+0\s+`, lines[1])
	require.Regexp(t, `^nobody\s+0\s+0\s+`, lines[2])
	require.Equal(t, "", lines[3])
	require.Regexp(t, `^USER\s+BOOKED 7D\s+30D\s+USED 7D\s+30D\s+IDLE 7D\s+30D\s+UNBOOKED 7D\s+30D$`, lines[5])
	require.Regexp(t, `^daemon\s+2\.0\s+4\.0\s+3\.0\s+4\.0\s+0\.5\s+1\.0\s+0\.0\s+0\.0$`, lines[6])
	require.Regexp(t, `^nobody\s+0\.0\s+0\.5\s+0\.0\s+0\.0\s+0\.0\s+0\.5\s+1\.5\s+2\.0$`, lines[7])
	for _, l := range lines {
		require.LessOrEqual(t, len([]rune(l)), 80, l)
	}

	r = cli(t, db, "usage", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	var users []report.UserUsage
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &users))
	require.Len(t, users, 2)
	require.Equal(t, report.UserUsage{UID: 1, User: "daemon", Hours7d: 2, Hours30d: 4, Used7d: 3, Used30d: 4, Idle7d: 0.5, Idle30d: 1,
		Usage: users[0].Usage, Factor: users[0].Factor}, users[0], "usage and fair share decay with time")
	require.Equal(t, report.UserUsage{UID: 65534, User: "nobody", Hours30d: 0.5, Idle30d: 0.5, Unbooked7d: 1.5, Unbooked30d: 2,
		Usage: users[1].Usage, Factor: users[1].Factor}, users[1])
	require.Contains(t, r.stdout, `"used_gpu_hours_7d": 3,`)
	require.Contains(t, r.stdout, `"unbooked_gpu_hours_30d": 2,`)
}

// cmpErr is the first of two errors.
func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// GPU-H LEFT is what admission leaves: bookings ahead count, as they do
// when a request is weighed. AHEAD prints shares as they are booked.
func TestUsageHoursLeftCountsBookingsAhead(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "chronos.db")
	require.Equal(t, 0, cli(t, db, "policy", "set", "user-hours=3/7d").code)
	require.Equal(t, 0, cli(t, db, "create", "0", "100%", "2h").code)
	for _, b := range [][]string{{"1", "10%", "5h"}, {"1", "20%", "150m"}} {
		r := cli(t, db, append([]string{"create"}, append(b, "--at", "+1h")...)...)
		require.Equal(t, 0, r.code, r.stderr)
	}
	r := cli(t, db, "create", "1", "10%", "1h")
	require.Equal(t, 1, r.code, r.stdout)
	require.Contains(t, r.stderr, "over your quota: user-hours=3/7d: 3.0 GPU-hours booked in the window, 0.1 asked")

	r = cli(t, db, "usage")
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `(?m)^root\s+1\s+0\.3\s+no limit\s+0\.0\s`, r.stdout)
	var users []report.UserUsage
	require.NoError(t, json.Unmarshal([]byte(cli(t, db, "usage", "--json").stdout), &users))
	require.Len(t, users, 1)
	require.InDelta(t, 0, *users[0].HoursLeft, 1e-9)
}

// GPUS LEFT shows what user-gpus leaves to the hundredth, as shares are
// booked, and never more than is left: 1.25 of 1.5 held leaves 0.25 (it
// showed 0.2), and one more 25% booking fits, and no more.
func TestUsageGPUsLeftIsExact(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "chronos.db")
	require.Equal(t, 0, cli(t, db, "policy", "set", "user-gpus=1.5").code)
	require.Equal(t, 0, cli(t, db, "create", "0", "100%", "1h").code)
	require.Equal(t, 0, cli(t, db, "create", "1", "25%", "1h").code)
	r := cli(t, db, "usage")
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `(?m)^root\s+1\.25\s+0\s+0\.25\s+no limit\s`, r.stdout)

	require.Equal(t, 0, cli(t, db, "create", "1", "25%", "1h").code, "0.25 left: it fits")
	require.Regexp(t, `(?m)^root\s+1\.5\s+0\s+0\s+no limit\s`, cli(t, db, "usage").stdout)
	r = cli(t, db, "create", "1", "1%", "1h")
	require.Equal(t, 1, r.code, r.stdout)
	require.Contains(t, r.stderr, "user-gpus=1.5")
}

// An hours quota's remainder reads to the hundredth, rounded down: 0.0965
// GPU-hours left is 0.09, not 0.0 (usage --json said 0.0965 beside it).
func TestHoursLeftReadsSmallFigures(t *testing.T) {
	t.Parallel()
	for f, want := range map[float64]string{0.0965: "0.09", 0: "0.0", 16.875: "16.87", 3: "3.0"} {
		require.Equal(t, want, view.HoursLeft(&f), "%v", f)
	}
	require.Equal(t, "no limit", view.HoursLeft(nil))
}
