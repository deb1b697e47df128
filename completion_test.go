package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/require"
)

// complete asks cobra's __complete, as the shells' scripts do, and returns
// the candidates and the directive.
func complete(t *testing.T, db string, args ...string) ([]string, cobra.ShellCompDirective) {
	t.Helper()
	r := cli(t, db, append([]string{"__complete"}, args...)...)
	require.Equal(t, 0, r.code, r.stderr)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	last := lines[len(lines)-1]
	require.True(t, strings.HasPrefix(last, ":"), r.stdout)
	var d int
	for _, c := range last[1:] {
		d = d*10 + int(c-'0')
	}
	return lines[:len(lines)-1], cobra.ShellCompDirective(d)
}

func TestCompletionKnowsTheDomain(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "chronos.db")
	for _, a := range [][]string{{"create", "0", "0.5", "1h"}, {"create", "1", "0.25", "30m", "--user", "nobody"}, {"create", "1", "0.25", "2h"}} {
		require.Equal(t, 0, cli(t, db, a...).code)
	}
	// Root may change every booking: each is offered with its owner, GPU,
	// share and time left; one already typed is not offered again.
	got, dir := complete(t, db, "release", "")
	require.Equal(t, cobra.ShellCompDirectiveNoFileComp, dir)
	require.Len(t, got, 3)
	require.Regexp(t, `^1\troot · GPU 0 · 50% · (59m|1h0m) left$`, got[0])
	require.Regexp(t, `^2\tnobody · GPU 1 · 25% · (29m|30m) left$`, got[1])
	got, _ = complete(t, db, "release", "1", "")
	require.Len(t, got, 2)
	require.True(t, strings.HasPrefix(got[0], "2\t"))
	got, _ = complete(t, db, "extend", "")
	require.Len(t, got, 3)
	got, _ = complete(t, db, "extend", "1", "")
	require.Contains(t, got, "30m")
	got, _ = complete(t, db, "run", "--booking", "")
	require.Len(t, got, 3)
	got, _ = complete(t, db, "show", "")
	require.Len(t, got, 3)

	// GPUs with what they have free.
	got, dir = complete(t, db, "create", "")
	require.Equal(t, cobra.ShellCompDirectiveNoFileComp, dir)
	require.Equal(t, []string{"0\t50% (40.0 GiB) free on GPU 0", "1\t50% (40.0 GiB) free on GPU 1"}, got)
	got, _ = complete(t, db, "list", "--gpu", "")
	require.Len(t, got, 2)
	got, _ = complete(t, db, "available", "")
	require.Len(t, got, 2)

	// Flag values.
	got, _ = complete(t, db, "--backend", "")
	require.Equal(t, []string{"auto", "nvml", "drm", "sim"}, firstWords(got))
	got, _ = complete(t, db, "--monitor", "--log-format", "")
	require.Equal(t, []string{"text", "json"}, got)
	got, _ = complete(t, db, "run", "0", "0.5", "1h", "--signal", "")
	require.Contains(t, firstWords(got), "USR1@5m")
	got, _ = complete(t, db, "report", "--by", "")
	require.Equal(t, []string{"user", "group", "gpu"}, got)
	got, dir = complete(t, db, "list", "--state", "live,")
	require.Equal(t, cobra.ShellCompDirectiveNoFileComp|cobra.ShellCompDirectiveNoSpace, dir)
	require.Contains(t, got, "live,expired")
	require.NotContains(t, got, "live,live")
	got, _ = complete(t, db, "list", "--user", "")
	require.Equal(t, []string{"root", "nobody"}, got)

	// No file names where a file makes no sense; file names where it does:
	// --db, and the command chronos run starts.
	for _, args := range [][]string{{"list", ""}, {"stats", ""}, {"create", "0", "0.5", "1h", ""}, {"hold", "1", "2h", "--reason", ""}, {"report", "--since", ""}} {
		_, dir := complete(t, db, args...)
		require.Equal(t, cobra.ShellCompDirectiveNoFileComp, dir&cobra.ShellCompDirectiveNoFileComp, "%v", args)
	}
	for _, args := range [][]string{{"--db", ""}, {"run", "0", "0.5", "1h", "--", "py"}, {"run", "--booking", "1", "--", ""}} {
		_, dir := complete(t, db, args...)
		require.Equal(t, cobra.ShellCompDirectiveDefault, dir, "%v", args)
	}
}

// An ordinary user is offered only the bookings they may change, and
// still sees everyone's for show.
func TestCompletionOffersOnlyYours(t *testing.T) {
	t.Parallel()
	bin, db := rootsLedgerForAll(t, "0.5")
	require.Equal(t, 0, asNobody(t, bin, db, "create", "1", "0.5", "1h").code)
	r := asNobody(t, bin, db, "__complete", "release", "")
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `^2\tnobody · GPU 1 · 50% · (59m|1h0m) left\n:4\n$`, r.stdout)
	r = asNobody(t, bin, db, "__complete", "show", "")
	require.Equal(t, 2, strings.Count(r.stdout, " left\n"))
}

func firstWords(lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i], _, _ = strings.Cut(l, "\t")
	}
	return out
}

// A booking made ahead is described by when it starts and how long it
// lasts, in completion and by extend: the time before its start is not
// time left (it read "1d8h left" for an 8-hour booking tomorrow).
func TestUpcomingBookingsAreNotTimeLeft(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "chronos.db")
	require.Equal(t, 0, cli(t, db, "create", "0", "0.5", "8h", "--at", "+1d").code)
	got, _ := complete(t, db, "release", "")
	require.Len(t, got, 1)
	require.Regexp(t, `^1\troot · GPU 0 · 50% · from .+ for 8h$`, got[0])
	require.NotContains(t, got[0], "left")

	r := cli(t, db, "extend", "1", "30m")
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `^Extended 1 by 30m: now from .+ until .+ \(8h30m long\)\.\n$`, r.stdout)
}

// Tab completes in bash without the bash-completion package: cobra's
// script needs its _get_comp_words_by_ref, and every Tab said "command not
// found" (newcomer report). A bare bash (no rc files, so no
// bash-completion) in tmux sources `chronos completion bash` and completes.
func TestBashCompletionWithoutBashCompletion(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, os.Symlink(chronosBin, filepath.Join(dir, "chronos")))
	db := filepath.Join(dir, "chronos.db")
	require.Equal(t, 0, cli(t, db, "create", "0", "0.5", "1h").code)
	s := newTmux(t, 120, 20, "CHRONOS_DB="+db, "CHRONOS_BACKEND=sim", "GOCOVERDIR="+coverDir)
	s.keys("exec bash --norc --noprofile", "Enter")
	s.keys("export PATH="+dir+":$PATH PS1='$ '; declare -F _get_comp_words_by_ref || echo no-bash-completion", "Enter")
	s.waitFor("no-bash-completion")
	s.keys("source <(chronos completion bash); clear", "Enter")
	// The completed words, not the prompt before them: on a loaded
	// machine bash may redraw the line after clear has wiped the prompt.
	s.keys("chronos lis", "Tab")
	s.waitFor("chronos list") // and a space, which the screen trims
	s.keys("C-u", "chronos list --sta", "Tab")
	scr := s.waitFor("chronos list --state")
	s.keys("C-u", "chronos release ", "Tab")
	scr += s.waitFor("chronos release 1")
	require.NotContains(t, scr, "command not found")
	require.NotContains(t, cli(t, db, "completion", "bash", "--help").stdout, "depends on")
}
