//go:build !testclock

package clock

import "time"

// System is the clock of this process: the operating system's. (A test
// build, with the testclock tag, shifts it: see system_testclock.go.)
func System() Clock { return wall{} }

// FromKernel is a time the kernel wrote (a process's start, a file's
// modification) as the system clock reads it.
func FromKernel(t time.Time) time.Time { return t }
