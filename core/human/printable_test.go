package human

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPrintable(t *testing.T) { // serial: AllocsPerRun
	for in, want := range map[string]string{
		"python train.py --lr 0.1":    "python train.py --lr 0.1",
		"naïve ✓ 日本":                  "naïve ✓ 日本",
		"\x1b]2;pwned\x07":            `\x1b]2;pwned\x07`,
		"\x1b[2J\x1b[H":               `\x1b[2J\x1b[H`,
		"a\x9b2Jb":                    `a\x9b2Jb`, // a lone C1 byte: not UTF-8
		"a\u009b2Jb":                  `a\u009b2Jb`,
		"tab\there\nnew\rline\x7f":    `tab\x09here\x0anew\x0dline\x7f`,
		"evil\u202etxt.exe\u2028next": `evil\u202etxt.exe\u2028next`,
	} {
		require.Equal(t, want, Printable(in), "%q", in)
	}
	plain := "python train.py"
	require.Equal(t, 0.0, testing.AllocsPerRun(100, func() { _ = Printable(plain) }))
}
