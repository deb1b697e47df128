package gpu

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// ErrGPUList marks a list of GPUs a person typed that is not valid; the
// error's message says what is wrong.
var ErrGPUList = errors.New("invalid GPU list")

// MaxGPUIndex is the highest GPU index a list may name: no host has more
// GPUs, and a typo like 0-99999999 must not become a list of millions.
const MaxGPUIndex = 1023

func listErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrGPUList, fmt.Sprintf(format, args...))
}

// ParseGPUList reads GPUs as people type them, the way CUDA_VISIBLE_DEVICES
// and Slurm's --gpus lists do: indices and ranges joined by commas ("0,1",
// "0-3", "0,2-3"), spaces allowed around each. The answer is sorted. A GPU
// named twice, a range written backwards, a negative or too large index, an
// empty item and anything else are refused with what was wrong.
func ParseGPUList(s string) ([]int, error) {
	if strings.TrimSpace(s) == "" {
		return nil, listErr("no GPUs given (write indices like 0,1 or a range like 0-3)")
	}
	var out []int
	seen := map[int]bool{}
	for item := range strings.SplitSeq(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			return nil, listErr("%q has an empty item: write indices joined by single commas, like 0,1", clip(s))
		}
		from, to, err := parseListItem(item)
		if err != nil {
			return nil, err
		}
		for i := from; i <= to; i++ {
			if seen[i] {
				return nil, listErr("GPU %d is named twice in %q", i, clip(s))
			}
			seen[i] = true
			out = append(out, i)
		}
	}
	slices.Sort(out)
	return out, nil
}

// parseListItem reads "3" or "0-3".
func parseListItem(item string) (from, to int, err error) {
	if strings.HasPrefix(item, "-") {
		return 0, 0, listErr("%q: GPU indices start at 0, never negative", clip(item))
	}
	a, b, isRange := strings.Cut(item, "-")
	if from, err = parseListIndex(strings.TrimSpace(a), item); err != nil {
		return 0, 0, err
	}
	if !isRange {
		return from, from, nil
	}
	b = strings.TrimSpace(b)
	if strings.HasPrefix(b, "-") {
		return 0, 0, listErr("%q: GPU indices start at 0, never negative", clip(item))
	}
	if to, err = parseListIndex(b, item); err != nil {
		return 0, 0, err
	}
	if to < from {
		return 0, 0, listErr("range %q runs backwards: write %d-%d", clip(item), to, from)
	}
	return from, to, nil
}

// parseListIndex reads one index of item: digits only (no sign, no spaces
// inside), at most MaxGPUIndex.
func parseListIndex(s, item string) (int, error) {
	if s == "" || strings.Trim(s, "0123456789") != "" {
		return 0, listErr("%q is not a GPU index or range (0, 1, … or 0-3)", clip(item))
	}
	i, err := strconv.Atoi(s)
	if err != nil || i > MaxGPUIndex {
		return 0, listErr("GPU index %s is too large (at most %d)", clip(s), MaxGPUIndex)
	}
	return i, nil
}

// FormatGPUList writes GPUs as ParseGPUList reads them, runs as ranges:
// "0-3", "0,2-3", "5". The input may be in any order; repeats are written
// once. No GPUs is "".
func FormatGPUList(gpus []int) string {
	sorted := slices.Compact(slices.Sorted(slices.Values(gpus)))
	var b strings.Builder
	for i := 0; i < len(sorted); {
		j := i
		for j+1 < len(sorted) && sorted[j+1] == sorted[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(sorted[i]))
		if j > i {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(sorted[j]))
		}
		i = j + 1
	}
	return b.String()
}

// clip is s cut to what a message may repeat of bad input.
func clip(s string) string {
	const most = 40
	if r := []rune(s); len(r) > most {
		return string(r[:most]) + "…"
	}
	return s
}
