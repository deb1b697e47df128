package main

import (
	"go/ast"
	"go/build/constraint"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core/setup"
)

// The environment's tables name every variable the code reads — through
// os.Getenv or os.LookupEnv, or from a process's environ — and every one
// chronos run sets ("NAME=…" in the code), and nothing else.
func TestEnvironmentTableIsComplete(t *testing.T) {
	t.Parallel()
	fset := token.NewFileSet()
	var files []*ast.File
	require.NoError(t, filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && (path == "scripts" || path == filepath.Join("core", "soak") || strings.HasPrefix(d.Name(), ".")) && path != ".",
			d.IsDir() && (path == filepath.Join("storage", "etcd", "etcdtest") || path == filepath.Join("core", "coretest") || path == filepath.Join("core", "servicetest")):
			return filepath.SkipDir // programs of their own, and tests' helpers: not chronos
		case d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go"):
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		if onlyForTests(f) {
			return nil // the testclock build: never in a shipped binary
		}
		files = append(files, f)
		return nil
	}))
	// String constants by name, to read os.Getenv(BackendEnv).
	consts := map[string]string{}
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			if v, ok := n.(*ast.ValueSpec); ok {
				for i, name := range v.Names {
					if i < len(v.Values) {
						if lit, ok := v.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
							consts[name.Name], _ = strconv.Unquote(lit.Value)
						}
					}
				}
			}
			return true
		})
	}
	valueOf := func(e ast.Expr) string {
		switch e := e.(type) {
		case *ast.BasicLit:
			s, _ := strconv.Unquote(e.Value)
			return s
		case *ast.Ident:
			return consts[e.Name]
		case *ast.SelectorExpr:
			return consts[e.Sel.Name]
		}
		return ""
	}
	read, set := map[string]bool{}, map[string]bool{}
	assignment := regexp.MustCompile(`^([A-Z][A-Z0-9_]{2,})=`)
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CallExpr:
				name := ""
				switch fn := n.Fun.(type) {
				case *ast.SelectorExpr:
					name = fn.Sel.Name
				case *ast.Ident:
					name = fn.Name
				}
				switch {
				case (name == "Getenv" || name == "LookupEnv") && len(n.Args) == 1:
					read[valueOf(n.Args[0])] = true
				case name == "envValue" && len(n.Args) == 2: // a process's environ
					read[valueOf(n.Args[1])] = true
				}
			case *ast.BasicLit:
				if s := valueOf(n); assignment.MatchString(s) {
					set[assignment.FindStringSubmatch(s)[1]] = true
				}
			}
			return true
		})
	}
	require.NotEmpty(t, read)
	require.Contains(t, set, "CHRONOS_DEADLINE_UNIX")
	listed := map[string]bool{}
	for _, s := range setup.EnvSections {
		for _, v := range s.Vars {
			listed[v.Name] = true
		}
	}
	for name := range read {
		require.True(t, listed[name], "the code reads %s, which `chronos help environment` does not list", name)
	}
	for name := range set {
		require.True(t, listed[name], "the code sets %s, which `chronos help environment` does not list", name)
	}
	for name := range listed {
		mentioned := read[name] || set[name] || slices.Contains([]string{"HOME", "NO_COLOR"}, name) // os.UserHomeDir, lipgloss
		require.True(t, mentioned, "the table lists %s, which nothing reads or sets", name)
	}

	r := cli(t, t.TempDir()+"/c.db", "help", "environment")
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `(?m)^  CHRONOS_DB\s+the ledger file`, r.stdout)
}

// onlyForTests says whether f is built only with the testclock tag (the
// shiftable clock of core/clock), which no shipped binary has: its build
// constraint holds with that tag and not without it.
func onlyForTests(f *ast.File) bool {
	shipped := func(tag string) bool {
		return tag == runtime.GOOS || tag == runtime.GOARCH || tag == "unix" || tag == "cgo" || tag == "gc"
	}
	for _, g := range f.Comments {
		if g.Pos() >= f.Package {
			break
		}
		for _, c := range g.List {
			if expr, err := constraint.Parse(c.Text); err == nil {
				return !expr.Eval(shipped) && expr.Eval(func(tag string) bool { return tag == "testclock" || shipped(tag) })
			}
		}
	}
	return false
}
