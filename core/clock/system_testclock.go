//go:build testclock

package clock

import (
	"os"
	"strings"
	"sync"
	"time"
)

// In a test build (the testclock tag; the shipped binary never has it) the
// system clock is the kernel's shifted by two amounts, so that a test can
// move the time of every process it starts, real binaries included:
//
//   - CHRONOS_TEST_CLOCK_OFFSET, a Go duration fixed for the whole run
//     (make test-anytime puts the suite at 23:59:50 on 31 December), and
//   - the Go duration written in the file CHRONOS_TEST_CLOCK_FILE, which a
//     test rewrites to advance its processes' time (Shift.Advance).
//
// Timers of a file-shifted clock poll it, so an advance fires them within
// a few milliseconds.
const (
	OffsetEnv = "CHRONOS_TEST_CLOCK_OFFSET"
	FileEnv   = "CHRONOS_TEST_CLOCK_FILE"
)

var (
	systemOnce sync.Once
	system     Clock
)

// System is the clock of this process: the kernel's, shifted as the
// environment says.
func System() Clock {
	systemOnce.Do(func() { system = shiftedFromEnv() })
	return system
}

func shiftedFromEnv() Clock {
	s := &shifted{file: os.Getenv(FileEnv)}
	if v := os.Getenv(OffsetEnv); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			panic("clock: " + OffsetEnv + "=" + v + ": " + err.Error())
		}
		s.fixed = d
	}
	if s.file == "" && s.fixed == 0 {
		return wall{}
	}
	return s
}

type shifted struct {
	fixed time.Duration
	file  string

	mu     sync.Mutex
	extra  time.Duration
	readAt time.Time
}

func (s *shifted) offset() time.Duration {
	if s.file == "" {
		return s.fixed
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if time.Since(s.readAt) >= time.Millisecond {
		if b, err := os.ReadFile(s.file); err == nil {
			if d, err := time.ParseDuration(strings.TrimSpace(string(b))); err == nil && d >= s.extra {
				s.extra = d // the clock never goes back
			}
		}
		s.readAt = time.Now()
	}
	return s.fixed + s.extra
}

func (s *shifted) Now() time.Time { return time.Now().Add(s.offset()) }

func (s *shifted) After(d time.Duration) <-chan time.Time { return s.NewTimer(d).C() }

func (s *shifted) NewTimer(d time.Duration) Timer {
	if s.file == "" {
		return wall{}.NewTimer(d)
	}
	return newPolled(s.Now, d, 0)
}

func (s *shifted) NewTicker(d time.Duration) Ticker {
	if s.file == "" {
		return wall{}.NewTicker(d)
	}
	return polledTicker{newPolled(s.Now, d, d)}
}

// FromKernel is a time the kernel wrote (a process's start, a file's
// modification) as the system clock reads it: shifted as it is.
func FromKernel(t time.Time) time.Time {
	if s, ok := System().(*shifted); ok {
		return t.Add(s.offset())
	}
	return t
}
