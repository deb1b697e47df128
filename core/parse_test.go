package core

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// accepted checks a parser's answer in a table: with wantErr, a refusal
// (ErrInput) that says it; else no error. It reports whether the value is
// left to check.
func accepted(t *testing.T, err error, wantErr string) bool {
	t.Helper()
	if wantErr != "" {
		require.ErrorIs(t, err, ErrInput)
		require.ErrorContains(t, err, wantErr)
		return false
	}
	require.NoError(t, err)
	return true
}

func TestParseDuration(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want time.Duration
		err  string
	}{
		{"3600", time.Hour, ""},
		{"90m", 90 * time.Minute, ""},
		{"1h30m", 90 * time.Minute, ""},
		{"8h", 8 * time.Hour, ""},
		{" 45 ", 45 * time.Second, ""},
		{"2d", 48 * time.Hour, ""},
		{"1d12h", 36 * time.Hour, ""},
		{"0", 0, "must be positive"},
		{"-5", 0, "must be positive"},
		{"-1h", 0, "must be positive"},
		{"0.2", 0, "shorter than a second"},
		{"1000000000000", 0, "absurdly long"},
		{"9999999h", 0, "absurdly long"},
		{"NaN", 0, "is not seconds"},
		{"", 0, "empty duration"},
		{"soon", 0, "not seconds"},
		{"1x", 0, "not seconds"},
		{"d", 0, "not seconds"},
		{"0x10", 0, "not seconds"}, // hex, which strconv would read as 16
		{"1_000", 0, "not seconds"},
		{"Inf", 0, "not seconds"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseDuration(tc.in)
			if accepted(t, err, tc.err) {
				require.Equal(t, tc.want, got)
			}
		})
	}
}

func TestParseMemory(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want Memory
		err  string
	}{
		{"0.5", Fraction(0.5), ""},
		{"1", Fraction(1), ""},
		{"50%", Fraction(0.5), ""},
		{"12.5%", Fraction(0.125), ""},
		{"40GiB", Bytes(40 << 30), ""},
		{"40gib", Bytes(40 << 30), ""},
		{"40G", Bytes(40 << 30), ""},
		{"500MB", Bytes(500e6), ""},
		{"1.5TiB", Bytes(3 << 39), ""},
		{"0", Memory{}, "more than 0"},
		{"1.01", Memory{}, "at most 100%"},
		{"-0.5", Memory{}, "more than 0"},
		{"150%", Memory{}, "at most 100%"},
		{"0%", Memory{}, "more than 0"},
		{"0.0000001", Memory{}, "too small"},
		{"10KiB", Memory{}, "too small"},
		{"9000TiB", Memory{}, "absurdly large"},
		{"lots", Memory{}, "not a fraction"},
		{"GiB", Memory{}, "not a number"},
		{"%", Memory{}, "not a percent"},
		{"NaN", Memory{}, "not a fraction"},
		{"", Memory{}, "empty"},
		{".5", Fraction(0.5), ""},
		{"2.5e-1", Fraction(0.25), ""},
		{"0x1p-2", Memory{}, "not a fraction"}, // a hex float strconv reads as 0.25
		{"0x1p-2%", Memory{}, "not a percent"},
		{"0x1p4GiB", Memory{}, "not a number"},
		{"Inf", Memory{}, "not a fraction"},
		{"0_5", Memory{}, "not a fraction"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseMemory(tc.in)
			if accepted(t, err, tc.err) {
				require.InDelta(t, tc.want.Fraction, got.Fraction, 1e-12)
				require.Equal(t, tc.want.Bytes, got.Bytes)
			}
		})
	}
}

func TestParseIDDeviceCompute(t *testing.T) {
	t.Parallel()
	id, err := ParseID("#7")
	require.NoError(t, err)
	require.Equal(t, uint64(7), id)
	for _, bad := range []string{"", "0", "-1", "abc", "7a", "99999999999999999999999"} {
		_, err := ParseID(bad)
		require.ErrorIs(t, err, ErrInput, bad)
	}
	dev, err := ParseDevice("3")
	require.NoError(t, err)
	require.Equal(t, 3, dev)
	for _, bad := range []string{"", "-1", "gpu0", "1.5"} {
		_, err := ParseDevice(bad)
		require.ErrorIs(t, err, ErrInput, bad)
	}
	for in, want := range map[string]struct {
		host string
		dev  int
	}{"0": {"", 0}, "gpu3:1": {"gpu3", 1}, "gpu3.lab.example:12": {"gpu3.lab.example", 12}} {
		host, dev, err := ParseGPU(in)
		require.NoError(t, err, in)
		require.Equal(t, want.host, host, in)
		require.Equal(t, want.dev, dev, in)
	}
	for _, bad := range []string{":0", "gpu3:", "gpu3:x", "a:b:1", "gpu 3:0", "gpu3:-1"} {
		_, _, err := ParseGPU(bad)
		require.ErrorIs(t, err, ErrInput, bad)
	}
	for in, want := range map[string]int{"": 0, "25%": 25, "0.25": 25, "25": 25, "100%": 100} {
		got, err := ParseCompute(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	for _, bad := range []string{"0", "0%", "101%", "-3", "half"} {
		_, err := ParseCompute(bad)
		require.ErrorIs(t, err, ErrInput, bad)
	}
}

func TestFormat(t *testing.T) {
	t.Parallel()
	require.Equal(t, "50%", FormatPercent(500_000))
	require.Equal(t, "12.5%", FormatPercent(125_000))
	require.Equal(t, "40.0 GiB", FormatBytes(40<<30))
	require.Equal(t, "512 MiB", FormatBytes(512<<20))
	require.Equal(t, "1h30m", FormatDuration(90*time.Minute))
	require.Equal(t, "7d", FormatDuration(7*24*time.Hour))
	require.Equal(t, "0s", FormatDuration(0))
	// What FormatDuration prints, ParseDuration reads back.
	for _, d := range []time.Duration{time.Second, 90 * time.Minute, 7 * 24 * time.Hour, 26*time.Hour + 3*time.Second} {
		got, err := ParseDuration(FormatDuration(d))
		require.NoError(t, err)
		require.Equal(t, d, got)
	}
}

// create and run read a booking with the same parser.
func TestParseRequest(t *testing.T) {
	t.Parallel()
	r, err := ParseRequest("1", "40GiB", "1h30m", "25%")
	require.NoError(t, err)
	require.Equal(t, Request{Device: 1, Memory: Bytes(40 << 30), Duration: 90 * time.Minute, Compute: 25}, r)
	r, err = ParseRequest("0", "50%", "3600", "")
	require.NoError(t, err)
	require.Equal(t, Request{Device: 0, Memory: Fraction(0.5), Duration: time.Hour}, r)
	for _, bad := range [][4]string{
		{"gpu0", "0.5", "1h", ""}, {"0", "lots", "1h", ""}, {"0", "0.5", "soon", ""}, {"0", "0.5", "1h", "300%"},
	} {
		_, err := ParseRequest(bad[0], bad[1], bad[2], bad[3])
		require.ErrorIs(t, err, ErrInput, bad)
	}
}

// A whole number that only makes sense as a percent gets told how to write
// one; NaN and infinity are not durations (nor too long).
func TestParseSuggests(t *testing.T) {
	t.Parallel()
	_, err := ParseMemory("50")
	require.ErrorIs(t, err, ErrInput)
	require.EqualError(t, err, `memory share "50" must be a fraction of at most 1 (1 is the whole GPU): for 50 percent, write 50%`)
	for _, s := range []string{"1.5", "101", "0"} {
		_, err := ParseMemory(s)
		require.ErrorContains(t, err, "must be more than 0 and at most 100%", s)
	}
	for _, s := range []string{"NaN", "nan", "inf", "+Inf", "Infinity"} {
		_, err := ParseDuration(s)
		require.ErrorIs(t, err, ErrInput)
		require.ErrorContains(t, err, "is not seconds (3600) or a duration (90m, 1h30m, 8h, 2d)", s)
	}
	huge := strings.Repeat("9", 100_000)
	_, err = ParseMemory(huge + "x")
	require.EqualError(t, err, `memory share "9999999999999999999999999999999999999999…" (100001 bytes) is not a fraction (0.5), a percent (50%) or a size (40GiB)`)
}

func TestParseSignal(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]syscall.Signal{"SIGUSR1": syscall.SIGUSR1, "usr2": syscall.SIGUSR2, "none": 0, "10": syscall.Signal(10)} {
		got, err := ParseSignal(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	_, err := ParseSignal("SIGFOO")
	require.ErrorIs(t, err, ErrInput)
}

func TestParseWarnSignal(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want WarnSignal
		err  string
	}{
		{"USR1@5m", WarnSignal{syscall.SIGUSR1, 5 * time.Minute}, ""},
		{"SIGUSR2@300", WarnSignal{syscall.SIGUSR2, 5 * time.Minute}, ""},
		{"10@90s", WarnSignal{syscall.SIGUSR1, 90 * time.Second}, ""},
		{"sigusr1", WarnSignal{Signal: syscall.SIGUSR1}, ""},
		{"none", WarnSignal{}, ""},
		{"", WarnSignal{}, ""},
		{"USR1@", WarnSignal{}, "not a duration"},
		{"USR1@0", WarnSignal{}, "must be positive"},
		{"@5m", WarnSignal{}, "name a signal"},
		{"none@5m", WarnSignal{}, "name a signal"},
		{"FOO@5m", WarnSignal{}, "unknown signal"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseWarnSignal(tc.in)
			if accepted(t, err, tc.err) {
				require.Equal(t, tc.want, got)
			}
		})
	}
	require.Equal(t, "USR1@5m", WarnSignal{syscall.SIGUSR1, 5 * time.Minute}.String())
	require.Equal(t, "40@1h", WarnSignal{syscall.Signal(40), time.Hour}.String())
	require.Equal(t, "none", WarnSignal{}.String())
}
