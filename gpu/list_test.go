package gpu

import (
	"encoding/binary"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseGPUList(t *testing.T) {
	t.Parallel()
	for in, want := range map[string][]int{
		"0":            {0},
		"3":            {3},
		"0,1":          {0, 1},
		"1,0":          {0, 1},
		"0-3":          {0, 1, 2, 3},
		"0,2-3":        {0, 2, 3},
		" 0 , 2 - 3 ":  {0, 2, 3},
		"5-5":          {5},
		"6,0-1,3":      {0, 1, 3, 6},
		"007":          {7},
		"1023":         {1023},
		"1020-1023,12": {12, 1020, 1021, 1022, 1023},
	} {
		got, err := ParseGPUList(in)
		require.NoError(t, err, "%q", in)
		require.Equal(t, want, got, "%q", in)
	}
}

func TestParseGPUListRefuses(t *testing.T) {
	t.Parallel()
	for in, msg := range map[string]string{
		"":                        "no GPUs given",
		"  ":                      "no GPUs given",
		"0,0":                     `GPU 0 is named twice in "0,0"`,
		"0-3,2":                   `GPU 2 is named twice in "0-3,2"`,
		"1-2,0-3":                 `GPU 1 is named twice`,
		"3-1":                     `range "3-1" runs backwards: write 1-3`,
		"-1":                      `"-1": GPU indices start at 0, never negative`,
		"0,-2":                    `"-2": GPU indices start at 0, never negative`,
		"2--1":                    `"2--1": GPU indices start at 0, never negative`,
		"0,":                      `"0," has an empty item`,
		",1":                      `",1" has an empty item`,
		"0,,1":                    `"0,,1" has an empty item`,
		"abc":                     `"abc" is not a GPU index or range (0, 1, … or 0-3)`,
		"any":                     `"any" is not a GPU index`,
		"1.5":                     `"1.5" is not a GPU index`,
		"+1":                      `"+1" is not a GPU index`,
		"0-":                      `"0-" is not a GPU index`,
		"-":                       `never negative`,
		"1-2-3":                   `"1-2-3" is not a GPU index`,
		"0 1":                     `"0 1" is not a GPU index`,
		"0x1":                     `"0x1" is not a GPU index`,
		"1024":                    "GPU index 1024 is too large (at most 1023)",
		"0-9999999":               "GPU index 9999999 is too large",
		"99999999999999999999999": "GPU index 99999999999999999999999 is too large",
		strings.Repeat("7", 200):  "…",
	} {
		got, err := ParseGPUList(in)
		require.ErrorIs(t, err, ErrGPUList, "%q", in)
		require.ErrorContains(t, err, msg, "%q", in)
		require.Nil(t, got, "%q", in)
		require.Less(t, len(err.Error()), 200, "a message repeats a clipped input: %q", in)
	}
}

func TestFormatGPUList(t *testing.T) {
	t.Parallel()
	for want, in := range map[string][]int{
		"":          nil,
		"5":         {5},
		"0-3":       {3, 2, 1, 0},
		"0,2-3":     {0, 2, 3},
		"0,2":       {2, 0},
		"4,6":       {4, 6},
		"0-1,4-7,9": {0, 1, 4, 5, 6, 7, 9},
		"1-2":       {1, 2, 2, 1},
		"0,2,4,6":   {6, 4, 2, 0},
	} {
		require.Equal(t, want, FormatGPUList(in), "%v", in)
	}
	in := []int{3, 1, 2}
	FormatGPUList(in)
	require.Equal(t, []int{3, 1, 2}, in, "the caller's slice is left as it was")
}

// FuzzGPUList: parsing never panics and what it accepts is sorted, unique,
// in range and reads back the same from its formatting; any set of valid
// indices, formatted, reads back as itself.
func FuzzGPUList(f *testing.F) {
	for _, s := range []string{"0", "0,1", "0-3", "0,2-3", " 1 - 2 ", "0,0", "3-1", "-1", "", ",", "1023", "0-1023", "9-", "٣"} {
		f.Add(s, []byte{0, 1, 2, 7})
	}
	f.Fuzz(func(t *testing.T, s string, raw []byte) {
		got, err := ParseGPUList(s)
		if err != nil {
			require.ErrorIs(t, err, ErrGPUList)
			require.NotEmpty(t, strings.TrimPrefix(err.Error(), ErrGPUList.Error()+": "))
		} else {
			require.NotEmpty(t, got)
			require.True(t, slices.IsSorted(got), "%q gave %v", s, got)
			require.Equal(t, len(got), len(slices.Compact(slices.Clone(got))), "%q gave %v", s, got)
			require.GreaterOrEqual(t, got[0], 0)
			require.LessOrEqual(t, got[len(got)-1], MaxGPUIndex)
			again, err := ParseGPUList(FormatGPUList(got))
			require.NoError(t, err)
			require.Equal(t, got, again)
		}

		// raw as indices: two bytes each, taken below MaxGPUIndex.
		var gpus []int
		for len(raw) >= 2 {
			gpus = append(gpus, int(binary.LittleEndian.Uint16(raw))%(MaxGPUIndex+1))
			raw = raw[2:]
		}
		text := FormatGPUList(gpus)
		if len(gpus) == 0 {
			require.Empty(t, text)
			return
		}
		back, err := ParseGPUList(text)
		require.NoError(t, err, "%v wrote %q", gpus, text)
		require.Equal(t, slices.Compact(slices.Sorted(slices.Values(gpus))), back)
	})
}
