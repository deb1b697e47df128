package monitor

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core/domain"
)

// The monitor's log keeps the fields scripts read, with the act's own time.
func TestActLogger(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 30, 9, 15, 42, 123456789, time.UTC)
	signalled := Act{Time: at, Kind: domain.EventSignalled, Partition: 7, User: "carol", UID: 1003, PID: 4242, Detail: "SIGTERM to python: booking #7 expired"}
	refused := Act{Time: at, Kind: domain.EventDenied, Detail: "needs root"}

	var out bytes.Buffer
	logAct, err := ActLogger(&out, "json")
	require.NoError(t, err)
	logAct(signalled)
	logAct(refused)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Len(t, lines, 2)
	var got map[string]any
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &got))
	require.Equal(t, map[string]any{"time": "2026-11-30T09:15:42.123456789Z", "level": "INFO", "kind": "signalled",
		"booking": 7.0, "partition": 7.0, "user": "carol", "uid": 1003.0, "pid": 4242.0, "detail": "SIGTERM to python: booking #7 expired"}, got)
	var back Act // what a script reading the old fields gets
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &back))
	require.Equal(t, signalled, back)
	got = nil
	require.NoError(t, json.Unmarshal([]byte(lines[1]), &got))
	require.Equal(t, map[string]any{"time": "2026-11-30T09:15:42.123456789Z", "level": "WARN", "kind": "denied", "detail": "needs root"}, got)

	out.Reset()
	logAct, err = ActLogger(&out, "text")
	require.NoError(t, err)
	logAct(signalled)
	require.Equal(t, `time=2026-11-30T09:15:42.123Z level=INFO detail="SIGTERM to python: booking #7 expired" kind=signalled booking=7 partition=7 user=carol uid=1003 pid=4242`+"\n", out.String())

	_, err = ActLogger(&out, "xml")
	require.ErrorContains(t, err, `--log-format "xml": use text or json`)
}
