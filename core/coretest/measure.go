package coretest

import (
	"slices"
	"time"
)

func Median(d []time.Duration) time.Duration { return Percentile(d, 0.5) }

func Percentile(d []time.Duration, q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

func Ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
