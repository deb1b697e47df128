package core

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
)

// accepted checks a parser's answer in a table: with wantErr, a refusal
// (ErrInput) that says it; else no error. It reports whether the value is
// left to check.
func accepted(t *testing.T, err error, wantErr string) bool {
	t.Helper()
	if wantErr != "" {
		require.ErrorIs(t, err, domain.ErrInput)
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
			got, err := human.ParseDuration(tc.in)
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
		want human.Memory
		err  string
	}{
		{"0.5", human.Fraction(0.5), ""},
		{"1", human.Fraction(1), ""},
		{"50%", human.Fraction(0.5), ""},
		{"12.5%", human.Fraction(0.125), ""},
		{"40GiB", human.Bytes(40 << 30), ""},
		{"40gib", human.Bytes(40 << 30), ""},
		{"40G", human.Bytes(40 << 30), ""},
		{"500MB", human.Bytes(500e6), ""},
		{"1.5TiB", human.Bytes(3 << 39), ""},
		{"0", human.Memory{}, "more than 0"},
		{"1.01", human.Memory{}, "at most 100%"},
		{"-0.5", human.Memory{}, "more than 0"},
		{"150%", human.Memory{}, "at most 100%"},
		{"0%", human.Memory{}, "more than 0"},
		{"0.0000001", human.Memory{}, "too small"},
		{"10KiB", human.Memory{}, "too small"},
		{"9000TiB", human.Memory{}, "absurdly large"},
		{"lots", human.Memory{}, "not a fraction"},
		{"GiB", human.Memory{}, "not a number"},
		{"%", human.Memory{}, "not a percent"},
		{"NaN", human.Memory{}, "not a fraction"},
		{"", human.Memory{}, "empty"},
		{".5", human.Fraction(0.5), ""},
		{"2.5e-1", human.Fraction(0.25), ""},
		{"0x1p-2", human.Memory{}, "not a fraction"}, // a hex float strconv reads as 0.25
		{"0x1p-2%", human.Memory{}, "not a percent"},
		{"0x1p4GiB", human.Memory{}, "not a number"},
		{"Inf", human.Memory{}, "not a fraction"},
		{"0_5", human.Memory{}, "not a fraction"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := human.ParseMemory(tc.in)
			if accepted(t, err, tc.err) {
				require.InDelta(t, tc.want.Fraction, got.Fraction, 1e-12)
				require.Equal(t, tc.want.Bytes, got.Bytes)
			}
		})
	}
}

func TestParseIDDeviceCompute(t *testing.T) {
	t.Parallel()
	id, err := human.ParseID("#7")
	require.NoError(t, err)
	require.Equal(t, uint64(7), id)
	for _, bad := range []string{"", "0", "-1", "abc", "7a", "99999999999999999999999"} {
		_, err := human.ParseID(bad)
		require.ErrorIs(t, err, domain.ErrInput, bad)
	}
	dev, err := human.ParseDevice("3")
	require.NoError(t, err)
	require.Equal(t, 3, dev)
	for _, bad := range []string{"", "-1", "gpu0", "1.5"} {
		_, err := human.ParseDevice(bad)
		require.ErrorIs(t, err, domain.ErrInput, bad)
	}
	for in, want := range map[string]struct {
		host string
		dev  int
	}{"0": {"", 0}, "gpu3:1": {"gpu3", 1}, "gpu3.lab.example:12": {"gpu3.lab.example", 12}} {
		host, dev, err := human.ParseGPU(in)
		require.NoError(t, err, in)
		require.Equal(t, want.host, host, in)
		require.Equal(t, want.dev, dev, in)
	}
	for _, bad := range []string{":0", "gpu3:", "gpu3:x", "a:b:1", "gpu 3:0", "gpu3:-1"} {
		_, _, err := human.ParseGPU(bad)
		require.ErrorIs(t, err, domain.ErrInput, bad)
	}
	for in, want := range map[string]int{"": 0, "25%": 25, "0.25": 25, "25": 25, "100%": 100} {
		got, err := human.ParseCompute(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	for _, bad := range []string{"0", "0%", "101%", "-3", "half"} {
		_, err := human.ParseCompute(bad)
		require.ErrorIs(t, err, domain.ErrInput, bad)
	}
}

func TestFormat(t *testing.T) {
	t.Parallel()
	require.Equal(t, "50%", human.FormatPercent(500_000))
	require.Equal(t, "12.5%", human.FormatPercent(125_000))
	require.Equal(t, "40.0 GiB", human.FormatBytes(40<<30))
	require.Equal(t, "512 MiB", human.FormatBytes(512<<20))
	require.Equal(t, "1h30m", human.FormatDuration(90*time.Minute))
	require.Equal(t, "7d", human.FormatDuration(7*24*time.Hour))
	require.Equal(t, "0s", human.FormatDuration(0))
	// What FormatDuration prints, ParseDuration reads back.
	for _, d := range []time.Duration{time.Second, 90 * time.Minute, 7 * 24 * time.Hour, 26*time.Hour + 3*time.Second} {
		got, err := human.ParseDuration(human.FormatDuration(d))
		require.NoError(t, err)
		require.Equal(t, d, got)
	}
}

// create and run read a booking with the same parser.
func TestParseRequest(t *testing.T) {
	t.Parallel()
	r, err := ParseRequest("1", "40GiB", "1h30m", "25%")
	require.NoError(t, err)
	require.Equal(t, Request{Device: 1, Memory: human.Bytes(40 << 30), Duration: 90 * time.Minute, Compute: 25}, r)
	r, err = ParseRequest("0", "50%", "3600", "")
	require.NoError(t, err)
	require.Equal(t, Request{Device: 0, Memory: human.Fraction(0.5), Duration: time.Hour}, r)
	for _, bad := range [][4]string{
		{"gpu0", "0.5", "1h", ""}, {"0", "lots", "1h", ""}, {"0", "0.5", "soon", ""}, {"0", "0.5", "1h", "300%"},
	} {
		_, err := ParseRequest(bad[0], bad[1], bad[2], bad[3])
		require.ErrorIs(t, err, domain.ErrInput, bad)
	}
}

// A whole number that only makes sense as a percent gets told how to write
// one; NaN and infinity are not durations (nor too long).
func TestParseSuggests(t *testing.T) {
	t.Parallel()
	_, err := human.ParseMemory("50")
	require.ErrorIs(t, err, domain.ErrInput)
	require.EqualError(t, err, `memory share "50" must be a fraction of at most 1 (1 is the whole GPU): for 50 percent, write 50%`)
	for _, s := range []string{"1.5", "101", "0"} {
		_, err := human.ParseMemory(s)
		require.ErrorContains(t, err, "must be more than 0 and at most 100%", s)
	}
	for _, s := range []string{"NaN", "nan", "inf", "+Inf", "Infinity"} {
		_, err := human.ParseDuration(s)
		require.ErrorIs(t, err, domain.ErrInput)
		require.ErrorContains(t, err, "is not seconds (3600) or a duration (90m, 1h30m, 8h, 2d)", s)
	}
	huge := strings.Repeat("9", 100_000)
	_, err = human.ParseMemory(huge + "x")
	require.EqualError(t, err, `memory share "9999999999999999999999999999999999999999…" (100001 bytes) is not a fraction (0.5), a percent (50%) or a size (40GiB)`)
}

func TestParseSignal(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]syscall.Signal{"SIGUSR1": syscall.SIGUSR1, "usr2": syscall.SIGUSR2, "none": 0, "10": syscall.Signal(10)} {
		got, err := human.ParseSignal(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	_, err := human.ParseSignal("SIGFOO")
	require.ErrorIs(t, err, domain.ErrInput)
}

func TestParseWarnSignal(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want human.WarnSignal
		err  string
	}{
		{"USR1@5m", human.WarnSignal{Signal: syscall.SIGUSR1, Lead: 5 * time.Minute}, ""},
		{"SIGUSR2@300", human.WarnSignal{Signal: syscall.SIGUSR2, Lead: 5 * time.Minute}, ""},
		{"10@90s", human.WarnSignal{Signal: syscall.SIGUSR1, Lead: 90 * time.Second}, ""},
		{"sigusr1", human.WarnSignal{Signal: syscall.SIGUSR1}, ""},
		{"none", human.WarnSignal{}, ""},
		{"", human.WarnSignal{}, ""},
		{"USR1@", human.WarnSignal{}, "not a duration"},
		{"USR1@0", human.WarnSignal{}, "must be positive"},
		{"@5m", human.WarnSignal{}, "name a signal"},
		{"none@5m", human.WarnSignal{}, "name a signal"},
		{"FOO@5m", human.WarnSignal{}, "unknown signal"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := human.ParseWarnSignal(tc.in)
			if accepted(t, err, tc.err) {
				require.Equal(t, tc.want, got)
			}
		})
	}
	require.Equal(t, "USR1@5m", human.WarnSignal{Signal: syscall.SIGUSR1, Lead: 5 * time.Minute}.String())
	require.Equal(t, "40@1h", human.WarnSignal{Signal: syscall.Signal(40), Lead: time.Hour}.String())
	require.Equal(t, "none", human.WarnSignal{}.String())
}
