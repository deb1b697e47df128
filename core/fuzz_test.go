package core

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/core/policy"
)

// Fuzz targets for every parser a person's input reaches. Each holds: no
// panic; a refusal is an ErrInput with a message; what is accepted keeps its
// invariants. Seeds are in testdata/fuzz/<name>/; `make fuzz` runs each.

func requireInputErr(t *testing.T, in string, err error) {
	t.Helper()
	if !errors.Is(err, domain.ErrInput) {
		t.Fatalf("%q: error %v is not ErrInput", in, err)
	}
	if strings.TrimSpace(err.Error()) == "" {
		t.Fatalf("%q: empty error message", in)
	}
	// The message names the input, never repeats a long one whole.
	if len(err.Error()) > 200+len(human.Quote(in)) || len(in) > 4*human.MaxEcho && strings.Contains(err.Error(), in) {
		t.Fatalf("%q: the message repeats too much: %q", in, err)
	}
}

func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{"3600", "90m", "1h30m", "8h", "7d", "1d12h", "0", "-1", "1e9", "NaN", "1.5", "366d", "367d", "0.5s", " 2h "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := human.ParseDuration(s)
		if err != nil {
			requireInputErr(t, s, err)
			return
		}
		if d < time.Second || d > human.MaxParsedDuration {
			t.Fatalf("%q parsed to %v, outside [1s, 366d]", s, d)
		}
		back, err := human.ParseDuration(human.FormatDuration(d))
		if err != nil || back != d.Round(time.Second) {
			t.Fatalf("%q: %v prints as %q, which reads back as %v (%v)", s, d, human.FormatDuration(d), back, err)
		}
	})
}

func FuzzParseMemory(f *testing.F) {
	for _, s := range []string{"0.5", "50%", "40GiB", "40G", "500MB", "1", "0", "1.5", "1e-7", "1MiB", "1023KiB", "-1", "NaN%", "inf", "2TiB"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := human.ParseMemory(s)
		if err != nil {
			requireInputErr(t, s, err)
			return
		}
		switch {
		case m.Bytes > 0 && m.Fraction != 0:
			t.Fatalf("%q: both a fraction and a size: %+v", s, m)
		case m.Bytes > 0 && (m.Bytes < 1<<20 || m.Bytes > 1<<50):
			t.Fatalf("%q: size %d outside [1MiB, 1PiB]", s, m.Bytes)
		case m.Bytes == 0 && !(m.Fraction > 0 && m.Fraction <= 1):
			t.Fatalf("%q: fraction %v outside (0, 1]", s, m.Fraction)
		}
		_ = m.String()
	})
}

func FuzzParseCompute(f *testing.F) {
	for _, s := range []string{"", "25%", "0.25", "25", "100", "101", "0", "-5", "0.001", "NaN"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		pct, err := human.ParseCompute(s)
		if err != nil {
			requireInputErr(t, s, err)
			return
		}
		if strings.TrimSpace(s) == "" {
			if pct != 0 {
				t.Fatalf("empty input gave %d", pct)
			}
			return
		}
		if pct < 1 || pct > 100 {
			t.Fatalf("%q gave %d%%, outside 1..100", s, pct)
		}
	})
}

func FuzzParseID(f *testing.F) {
	for _, s := range []string{"7", "#7", " 12 ", "0", "-1", "18446744073709551615", "18446744073709551616", "#", "0x10"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, err := human.ParseID(s)
		if err != nil {
			requireInputErr(t, s, err)
			return
		}
		if id == 0 {
			t.Fatalf("%q gave id 0", s)
		}
		if back, err := human.ParseID(strconv.FormatUint(id, 10)); err != nil || back != id {
			t.Fatalf("%d does not read back: %v %v", id, back, err)
		}
	})
}

func FuzzParseDevice(f *testing.F) {
	for _, s := range []string{"0", "1", " 3", "-1", "gpu0", "99999999999999999999", "", "any", " ANY "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		i, err := human.ParseDevice(s)
		if err != nil {
			requireInputErr(t, s, err)
			return
		}
		if i == domain.AnyDevice && !strings.EqualFold(strings.TrimSpace(s), "any") || i < domain.AnyDevice {
			t.Fatalf("%q gave device %d", s, i)
		}
	})
}

// A GPU as people name it reads back the same after FormatGPU.
func FuzzParseGPU(f *testing.F) {
	for _, s := range []string{"0", "gpu3:0", "gpu3.lab:12", ":0", "gpu3:", "a:b:1", "gpu 3:0", "h:-1", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		host, dev, err := human.ParseGPU(s)
		if err != nil {
			requireInputErr(t, s, err)
			return
		}
		h2, d2, err := human.ParseGPU(human.FormatGPU(host, dev))
		if err != nil || h2 != host || d2 != dev {
			t.Fatalf("%q: %q %d printed as %q, read back as %q %d (%v)", s, host, dev, human.FormatGPU(host, dev), h2, d2, err)
		}
	})
}

func FuzzParseSignal(f *testing.F) {
	for _, s := range []string{"SIGUSR1", "usr2", "10", "none", "", "0", "65", "SIGKILL", "sigterm", "-9"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sig, err := human.ParseSignal(s)
		if err != nil {
			requireInputErr(t, s, err)
			return
		}
		if sig < 0 || sig > 64 {
			t.Fatalf("%q gave signal %d", s, sig)
		}
		if sig == 0 && !strings.EqualFold(strings.TrimSpace(s), "none") && strings.TrimSpace(s) != "" {
			t.Fatalf("%q gave no signal", s)
		}
	})
}

// FuzzParseWarnSignal reads `chronos run --signal`: an accepted value names
// a real signal (or none), has a lead of at least a second, and prints in a
// form that reads back to itself.
func FuzzParseWarnSignal(f *testing.F) {
	for _, s := range []string{"USR1@5m", "SIGUSR2@300", "10@90s", "usr1", "none", "", "USR1@", "@5m", "none@1h", "USR1@0", "USR1@1e9", "64@1d", "USR1@@5m"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		w, err := human.ParseWarnSignal(s)
		if err != nil {
			requireInputErr(t, s, err)
			return
		}
		if w.Signal < 0 || w.Signal > 64 || (w.Signal == 0 && w.Lead != 0) || (w.Lead != 0 && w.Lead < time.Second) {
			t.Fatalf("%q gave %+v", s, w)
		}
		back, err := human.ParseWarnSignal(w.String())
		if err != nil || back.Signal != w.Signal || back.Lead != w.Lead.Round(time.Second) {
			t.Fatalf("%q: %+v prints as %q, which reads back as %+v (%v)", s, w, w, back, err)
		}
	})
}

// FuzzApplyPolicy reads policy settings as `chronos policy set` and
// `--monitor --policy` take them. An accepted policy is valid and prints in a
// form that reads back to itself (to the second: durations print rounded).
func FuzzApplyPolicy(f *testing.F) {
	for _, s := range []string{"expiry=terminate grace=30s", "overbudget=warn unbooked=off", "max=7d warn=5m", "expiry=explode",
		"grace", "=", "max=30s", "grace=0", "warn-lead=1h over_budget=terminate", "max=366d grace=-1s", "admit=physical", "admit=both",
		"reclaim=always idle=2h idle-warn=1h,1h45m", "idle-warn=none,idle-sm=5%", "idle=30m idle-warn=40m", "notify-url=https://hooks.example/T/B?x=Y",
		"hold-max=4h idle-start=0", "reclaim=when-waiting", "notify-url=ftp://x", "idle-warn=1.2s,1.4s",
		"user-gpus=1.5 user-hours=200/7d ahead=14d", "halflife=3d age-weight=0.5 max-age=12h", "user-gpus=4 for=alice", "share=2", "user-hours=5/0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := policy.Apply(policy.Default(), policy.Split(s))
		if err != nil {
			requireInputErr(t, s, err)
			return
		}
		if p.Expiry != policy.ActTerminate && p.Expiry != policy.ActNotify {
			t.Fatalf("%q: expiry %q", s, p.Expiry)
		}
		for _, a := range []string{p.OverBudget, p.Unbooked} {
			if a != policy.ActOff && a != policy.ActWarn && a != policy.ActTerminate {
				t.Fatalf("%q: action %q", s, a)
			}
		}
		if p.Grace < 0 || p.WarnLead < 0 || p.MaxLength < time.Minute {
			t.Fatalf("%q: durations %v %v %v", s, p.Grace, p.WarnLead, p.MaxLength)
		}
		if !slices.Contains([]string{policy.ReclaimOff, policy.ReclaimWhenWaiting, policy.ReclaimAlways}, p.Reclaim) || p.Idle < time.Minute || p.IdleSM < 1 || p.IdleSM > 100 || p.HoldMax < time.Minute {
			t.Fatalf("%q: ladder %+v", s, p)
		}
		for i, w := range p.IdleWarn {
			if w >= p.Idle || (i > 0 && w <= p.IdleWarn[i-1]) {
				t.Fatalf("%q: idle warnings %v with idle %v", s, p.IdleWarn, p.Idle)
			}
		}
		back, err := policy.Apply(policy.Default(), policy.Split(policy.Format(p)))
		if err != nil {
			t.Fatalf("%q: %q does not read back: %v", s, policy.Format(p), err)
		}
		near := func(a, b time.Duration) bool { return (a - b).Abs() < time.Second }
		if p.Admit != policy.AdmitBooked && p.Admit != policy.AdmitPhysical {
			t.Fatalf("%q: admit %q", s, p.Admit)
		}
		steps := len(back.IdleWarn) == len(p.IdleWarn)
		for i := range back.IdleWarn {
			steps = steps && near(back.IdleWarn[i], p.IdleWarn[i])
		}
		if back.Expiry != p.Expiry || back.OverBudget != p.OverBudget || back.Unbooked != p.Unbooked || back.Admit != p.Admit ||
			!near(back.Grace, p.Grace) || !near(back.WarnLead, p.WarnLead) || !near(back.MaxLength, p.MaxLength) ||
			back.Reclaim != p.Reclaim || !near(back.Idle, p.Idle) || !steps || back.IdleSM != p.IdleSM ||
			!near(back.IdleStart, p.IdleStart) || !near(back.HoldMax, p.HoldMax) || back.NotifyURL != p.NotifyURL ||
			!equalLimit(back.UserGPUs, p.UserGPUs) || !equalLimit(back.UserHours, p.UserHours) || !near(back.HoursWindow, p.HoursWindow) ||
			!near(back.Ahead, p.Ahead) || !near(back.HalfLife, p.HalfLife) || back.AgeWeight != p.AgeWeight || !near(back.MaxAge, p.MaxAge) {
			t.Fatalf("%q: %+v reads back as %+v", s, p, back)
		}
	})
}

// FuzzParseStart reads --at as a person types it. An accepted start is no
// more than the typing minute in the past, not absurdly far ahead, and its
// RFC 3339 form reads back to the same instant.
func FuzzParseStart(f *testing.F) {
	for _, s := range []string{"14:00", "14:00:30", "tomorrow 09:00", "today 13:00", "2026-12-01 09:00", "2026-12-01T09:00:00Z",
		"+2h", "+90m", "now", "", "25:00", "+-1h", "+400d", "tomorrow", "yesterday", "2026-12-01T09:00:00+01:00", "9:5"} {
		f.Add(s)
	}
	now := time.Date(2026, 11, 29, 12, 30, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, s string) {
		got, err := human.ParseStart(s, now)
		if err != nil {
			requireInputErr(t, s, err)
			return
		}
		if got.Before(now.Add(-human.StartSlack)) || got.After(now.Add(human.MaxParsedDuration)) {
			t.Fatalf("%q parsed to %v, outside [now-1m, now+366d]", s, got)
		}
		back, err := human.ParseStart(got.Format(time.RFC3339Nano), now)
		if err != nil || !back.Equal(got) {
			t.Fatalf("%q: %v prints as %q, which reads back as %v (%v)", s, got, got.Format(time.RFC3339Nano), back, err)
		}
	})
}

// equalLimit says whether two quotas are the same: both none, or both the
// same figure.
func equalLimit(a, b *float64) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }
