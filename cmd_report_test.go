package main

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core/clock"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/report"
	"github.com/chronos-gpu/chronos/storage"
)

// seedUsage writes an ended booking and what monitors measured of it, as
// if it ran long ago: its figures do not move while a test runs.
func seedUsage(t *testing.T, db string, uid int, user string, device int, sharePPM int64, start time.Time, held, used, idle time.Duration) {
	t.Helper()
	require.NoError(t, ledgerAt(db).Update(context.Background(), func(tx *storage.Tx) error {
		p := domain.Partition{Device: device, SharePPM: sharePPM, UID: uid, User: user, Created: start, Expires: start.Add(held),
			Ended: start.Add(held), State: domain.Expired}
		if err := tx.PutPartition(&p); err != nil {
			return err
		}
		return tx.PutBookingUsage(domain.BookingUsage{Partition: p.ID, Through: p.Ended, GPUTime: used, Idle: idle})
	}))
}

func TestReportCommand(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "chronos.db")
	day := clock.System().Now().Add(-48 * time.Hour)
	seedUsage(t, db, 1, "daemon", 0, 500_000, day, 4*time.Hour, 3*time.Hour, time.Hour)
	seedUsage(t, db, 65534, "nobody", 1, 250_000, day, 2*time.Hour, 0, 2*time.Hour)

	r := cli(t, db, "report", "--since", "7d")
	require.Equal(t, 0, r.code, r.stderr)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	require.Regexp(t, `^USER\s+BOOKED\s+USED\s+IDLE\s+UNBOOKED\s+BOOKINGS\s+RECLAIMED\s+EXPIRED\s+FORCED$`, lines[2])
	// daemon booked 2 GPU-hours and used 3 (work beyond its share counts
	// as used): its bar is full and solid; nobody's a quarter, unused.
	require.Regexp(t, `^daemon\s+█{16}\s+2\.00\s+3\.00\s+0\.50\s+0\.00\s+1\s+0\s+1\s+0$`, lines[3])
	require.Regexp(t, `^nobody\s+▒{4}\s+0\.50\s+0\.00\s+0\.50\s+0\.00\s+1\s+0\s+1\s+0$`, lines[4])
	require.Regexp(t, `^TOTAL\s+2\.50\s+3\.00\s+1\.00\s+0\.00\s+2\s+0\s+2\s+0$`, lines[5])

	r = cli(t, db, "report", "--since", "all", "--by", "gpu", "--csv")
	require.Equal(t, 0, r.code, r.stderr)
	rows, err := csv.NewReader(strings.NewReader(r.stdout)).ReadAll()
	require.NoError(t, err)
	require.Equal(t, [][]string{
		{"gpu", "booked_gpu_hours", "used_gpu_hours", "idle_gpu_hours", "unbooked_gpu_hours", "bookings", "reclaimed", "expired", "forced"},
		{"0", "2", "3", "0.5", "", "1", "0", "1", "0"},
		{"1", "0.5", "0", "0.5", "", "1", "0", "1", "0"},
	}, rows)

	r = cli(t, db, "report", "--json", "--since", "1h")
	require.Equal(t, 0, r.code, r.stderr)
	var rep report.Report
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep))
	require.Empty(t, rep.Rows, "nothing ran in the last hour")
	require.WithinDuration(t, clock.System().Now().Add(-time.Hour), rep.From, 5*time.Second)
	r = cli(t, db, "report", "--since", "1h")
	require.Contains(t, r.stdout, "No GPU use recorded since ")
}
