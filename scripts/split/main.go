// Command split moves top-level declarations between the packages of one
// Go module and rewrites every reference to them, exporting the names that
// come to be used across packages.
//
//	split -root DIR -plan FILE [-write] [-graph]
//
// Plan lines:
//
//	pkg DIR [NAME]        a target package (DIR relative to the root)
//	file PATH DIR         move a whole file (its decls) to DIR
//	decl DIR:NAME DIR2    move one top-level decl (a func, or a group holding NAME)
//	rename DIR:KEY NEW    name an object NEW (KEY: Name, or Type.Field / Type.Method)
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unicode"

	"golang.org/x/tools/go/ast/astutil"
	"golang.org/x/tools/go/packages"
)

type plan struct {
	names   map[string]string // dir -> package name
	files   map[string]string // rel file -> dir
	decls   map[string]string // dir:Name -> dir
	renames map[string]string // dir:Key -> new name
	unalias map[string]bool   // dir:Name aliases whose uses name what they alias
	via     map[string]string // dir:Type.member -> accessor used from other packages
}

type unit struct {
	file     string // rel path
	decl     ast.Decl
	pos, end int // offsets
	src      string
	target   string // dir
	names    []string
	recv     string // receiver base type for methods
}

var (
	root   string
	module string
	fset   = token.NewFileSet()
	pl     plan
	units  = map[string][]*unit{} // rel file -> units in order
	files  = map[string]*ast.File{}
	srcs   = map[string][]byte{}
	infos  = map[string]*types.Info{}
	pkgdir = map[string]string{} // rel file -> original dir
	pkgnm  = map[string]string{} // rel file -> original package name
)

func main() {
	planFile := flag.String("plan", "", "plan file")
	write := flag.Bool("write", false, "write the result")
	graph := flag.Bool("graph", false, "print the package graph")
	flag.StringVar(&root, "root", ".", "module root")
	flag.Parse()
	var err error
	root, err = filepath.Abs(root)
	check(err)
	readPlan(*planFile)
	load()
	resolveTargets()
	findAliases()
	exports, edits, needs := rewrite()
	if *graph {
		printGraph()
	}
	report(exports)
	if *write {
		emit(edits, needs)
	}
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "split:", err)
		os.Exit(1)
	}
}

func readPlan(path string) {
	pl = plan{names: map[string]string{}, files: map[string]string{}, decls: map[string]string{}, renames: map[string]string{}, unalias: map[string]bool{}, via: map[string]string{}}
	f, err := os.Open(path)
	check(err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if i := strings.Index(line, "#"); i >= 0 {
			line = line[:i]
		}
		w := strings.Fields(line)
		if len(w) == 0 {
			continue
		}
		switch {
		case w[0] == "pkg" && len(w) == 2:
			pl.names[w[1]] = filepath.Base(w[1])
		case w[0] == "pkg" && len(w) == 3:
			pl.names[w[1]] = w[2]
		case w[0] == "file" && len(w) == 3:
			pl.files[w[1]] = w[2]
		case w[0] == "decl" && len(w) == 3:
			pl.decls[w[1]] = w[2]
		case w[0] == "via" && len(w) == 3:
			pl.via[w[1]] = w[2]
		case w[0] == "unalias" && len(w) == 2:
			pl.unalias[w[1]] = true
		case w[0] == "rename" && len(w) == 3:
			pl.renames[w[1]] = w[2]
		default:
			check(fmt.Errorf("bad plan line %q", sc.Text()))
		}
	}
}

func load() {
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	check(err)
	for _, l := range strings.Split(string(mod), "\n") {
		if strings.HasPrefix(l, "module ") {
			module = strings.TrimSpace(strings.TrimPrefix(l, "module "))
		}
	}
	cfg := &packages.Config{
		Mode:  packages.NeedName | packages.NeedFiles | packages.NeedSyntax | packages.NeedTypes | packages.NeedTypesInfo | packages.NeedImports,
		Tests: true, Dir: root, Fset: fset, BuildFlags: []string{"-tags=testclock"},
	}
	pkgs, err := packages.Load(cfg, "./...")
	check(err)
	for _, p := range pkgs {
		for _, e := range p.Errors {
			fmt.Fprintln(os.Stderr, "load:", e)
		}
		for i, f := range p.Syntax {
			_ = i
			name := fset.Position(f.Package).Filename
			rel, err := filepath.Rel(root, name)
			if err != nil || strings.HasPrefix(rel, "..") {
				continue
			}
			if _, seen := files[rel]; seen {
				continue
			}
			files[rel] = f
			infos[rel] = p.TypesInfo
			pkgdir[rel] = filepath.Dir(rel)
			pkgnm[rel] = f.Name.Name
			b, err := os.ReadFile(name)
			check(err)
			srcs[rel] = b
		}
	}
	// second testclock-less pass is not needed: files under other tags are
	// reported so the plan can deal with them by hand.
}

func off(p token.Pos) int { return fset.Position(p).Offset }

// aliases maps each object the plan unaliases to what it stands for.
var aliases = map[string]types.Object{} // position key of alias -> target

func poskey(o types.Object) string {
	p := fset.Position(o.Pos())
	return fmt.Sprintf("%s:%d", p.Filename, p.Offset)
}

func findAliases() {
	for rel, f := range files {
		info := infos[rel]
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok {
				continue
			}
			for _, sp := range g.Specs {
				switch sp := sp.(type) {
				case *ast.TypeSpec:
					if !pl.unalias[pkgdir[rel]+":"+sp.Name.Name] {
						continue
					}
					obj := info.Defs[sp.Name]
					if n, ok := types.Unalias(obj.Type()).(*types.Named); ok {
						aliases[poskey(obj)] = n.Obj()
					}
				case *ast.ValueSpec:
					for i, n := range sp.Names {
						if !pl.unalias[pkgdir[rel]+":"+n.Name] || i >= len(sp.Values) {
							continue
						}
						var id *ast.Ident
						switch v := sp.Values[i].(type) {
						case *ast.Ident:
							id = v
						case *ast.SelectorExpr:
							id = v.Sel
						}
						if id != nil && info.Uses[id] != nil {
							aliases[poskey(info.Defs[n])] = info.Uses[id]
						}
					}
				}
			}
		}
	}
	// the alias declarations themselves are dropped
	for rel, us := range units {
		for _, u := range us {
			if _, ok := u.decl.(*ast.GenDecl); !ok {
				continue
			}
			for _, n := range u.names {
				if pl.unalias[pkgdir[rel]+":"+n] {
					u.target = "DROP"
				}
			}
		}
	}
}

func unaliased(o types.Object) types.Object {
	if o == nil || len(aliases) == 0 || !o.Pos().IsValid() {
		return o
	}
	if t, ok := aliases[poskey(o)]; ok {
		return t
	}
	return o
}

// resolveTargets cuts every file into units (top-level decls) and gives each
// its target directory.
func resolveTargets() {
	typeTarget := map[string]string{} // dir:Type -> target
	for rel, f := range files {
		dir := pkgdir[rel]
		ft := dir
		if t, ok := pl.files[rel]; ok {
			ft = t
		}
		prevEnd := off(f.Name.End())
		for _, d := range f.Decls {
			if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.IMPORT {
				prevEnd = off(g.End())
				continue
			}
			u := &unit{file: rel, decl: d, pos: prevEnd, end: off(d.End()), target: ft}
			prevEnd = u.end
			switch d := d.(type) {
			case *ast.FuncDecl:
				u.names = []string{d.Name.Name}
				if d.Recv != nil {
					u.recv = recvName(d.Recv.List[0].Type)
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						u.names = append(u.names, s.Name.Name)
					case *ast.ValueSpec:
						for _, n := range s.Names {
							u.names = append(u.names, n.Name)
						}
					}
				}
			}
			if u.recv == "" {
				for _, n := range u.names {
					if t, ok := pl.decls[dir+":"+n]; ok {
						u.target = t
					}
				}
			}
			if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.TYPE {
				for _, n := range u.names {
					typeTarget[dir+":"+n] = u.target
				}
			}
			units[rel] = append(units[rel], u)
		}
	}
	for rel, us := range units {
		for _, u := range us {
			if u.recv != "" {
				t, ok := typeTarget[pkgdir[rel]+":"+u.recv]
				if !ok {
					check(fmt.Errorf("%s: no type %s for method %s", rel, u.recv, u.names[0]))
				}
				u.target = t
			}
		}
	}
}

func recvName(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.StarExpr:
		return recvName(e.X)
	case *ast.IndexExpr:
		return recvName(e.X)
	case *ast.IndexListExpr:
		return recvName(e.X)
	case *ast.Ident:
		return e.Name
	}
	return ""
}

// unitAt is the unit holding offset o of file rel.
func unitAt(rel string, o int) *unit {
	us := units[rel]
	i := sort.Search(len(us), func(i int) bool { return us[i].end > o })
	if i < len(us) && us[i].pos <= o {
		return us[i]
	}
	return nil
}

// where is the target and original dir of an object of this module, or "".
func where(obj types.Object) (target, dir, rel string) {
	if obj == nil || !obj.Pos().IsValid() {
		return "", "", ""
	}
	p := fset.Position(obj.Pos())
	rel, err := filepath.Rel(root, p.Filename)
	if err != nil || strings.HasPrefix(rel, "..") {
		return "", "", ""
	}
	u := unitAt(rel, p.Offset)
	if u == nil {
		return "", "", ""
	}
	return u.target, pkgdir[rel], rel
}

func where0(obj types.Object) string { _, _, rel := where(obj); return rel }

func topLevel(obj types.Object) bool {
	return obj.Pkg() != nil && obj.Parent() == obj.Pkg().Scope()
}

// key names an object for rename directives: dir:Name or dir:Type.Member.
func key(obj types.Object) string {
	_, dir, _ := where(obj)
	if topLevel(obj) {
		return dir + ":" + obj.Name()
	}
	if f, ok := obj.(*types.Func); ok {
		if sig, ok := f.Type().(*types.Signature); ok && sig.Recv() != nil {
			return dir + ":" + typeName(sig.Recv().Type()) + "." + obj.Name()
		}
	}
	// fields and interface methods: the enclosing top-level type
	p := fset.Position(obj.Pos())
	rel, _ := filepath.Rel(root, p.Filename)
	if u := unitAt(rel, p.Offset); u != nil && len(u.names) > 0 {
		return dir + ":" + u.names[0] + "." + obj.Name()
	}
	return dir + ":?." + obj.Name()
}

func typeName(t types.Type) string {
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	if n, ok := t.(*types.Named); ok {
		return n.Obj().Name()
	}
	return "?"
}

type edit struct {
	pos, end int
	text     string
}

type edge struct{ from, to string }

var (
	edges    = map[edge]map[string]bool{}
	testEdge = map[edge]bool{}
	fileUse  = map[string]int{}
)

func exported(name string) string {
	r := []rune(name)
	r[0] = unicode.ToUpper(r[0])
	return string(r)
}

// rewrite computes the new name of each object and the edits to each file.
func rewrite() (map[string]string, map[string][]edit, map[string]map[string]bool) {
	newName := map[types.Object]string{}
	byKey := map[string]string{}
	// Pass 1: what is used across targets must be exported.
	for rel, f := range files {
		info := infos[rel]
		ast.Inspect(f, func(n ast.Node) bool {
			id, ok := n.(*ast.Ident)
			if !ok {
				return true
			}
			obj := unaliased(info.Uses[id])
			if obj == nil {
				return true
			}
			t, _, _ := where(obj)
			if t == "" {
				return true
			}
			u := unitAt(rel, off(id.Pos()))
			if u == nil {
				return true
			}
			if strings.HasSuffix(rel, "_test.go") && topLevel(obj) && !strings.HasSuffix(where0(obj), "_test.go") {
				fileUse[rel+" "+t]++
			}
			if t != u.target {
				e := edge{u.target, t}
				if strings.HasSuffix(rel, "_test.go") {
					e.from += " [tests]"
				}
				if edges[e] == nil {
					edges[e] = map[string]bool{}
				}
				edges[e][obj.Name()] = true
				if strings.HasSuffix(rel, "_test.go") {
					testEdge[e] = true
				}
				if strings.HasSuffix(where0(obj), "_test.go") {
					fmt.Fprintf(os.Stderr, "TESTHELPER %s (%s) used from %s (%s)\n", obj.Name(), where0(obj), rel, u.target)
				}
				if _, ok := pl.via[key(obj)]; !ok && !obj.Exported() {
					byKey[key(obj)] = exported(obj.Name())
				}
			}
			return true
		})
	}
	for k, v := range pl.renames {
		byKey[k] = v
	}
	name := func(obj types.Object) string {
		if n, ok := newName[obj]; ok {
			return n
		}
		n := obj.Name()
		if t, _, _ := where(obj); t != "" {
			if r, ok := byKey[key(obj)]; ok {
				n = r
			}
		}
		newName[obj] = n
		return n
	}
	edits := map[string][]edit{}
	needs := map[string]map[string]bool{} // rel:target -> dirs imported
	for rel, f := range files {
		info := infos[rel]
		sels := map[*ast.Ident]*ast.SelectorExpr{}
		ast.Inspect(f, func(n ast.Node) bool {
			if s, ok := n.(*ast.SelectorExpr); ok {
				sels[s.Sel] = s
			}
			return true
		})
		ast.Inspect(f, func(n ast.Node) bool {
			id, ok := n.(*ast.Ident)
			if !ok {
				return true
			}
			obj := unaliased(info.Uses[id])
			def := false
			if obj == nil {
				obj = info.Defs[id]
				def = true
			}
			if obj == nil {
				return true
			}
			if _, isPkg := obj.(*types.PkgName); isPkg {
				return true
			}
			t, _, _ := where(obj)
			if t == "" {
				return true
			}
			u := unitAt(rel, off(id.Pos()))
			if u == nil {
				return true
			}
			nn := name(obj)
			if acc, ok := pl.via[key(obj)]; ok && !def && t != u.target {
				if _, isVar := obj.(*types.Var); isVar {
					acc += "()"
				}
				edits[rel] = append(edits[rel], edit{off(id.Pos()), off(id.End()), acc})
				return true
			}
			if def || !topLevel(obj) {
				if nn != id.Name {
					edits[rel] = append(edits[rel], edit{off(id.Pos()), off(id.End()), nn})
					if def {
						if c := docOf(u.decl, id); c != nil && strings.HasPrefix(c.Text, "// "+id.Name+" ") {
							at := off(c.Pos()) + 3
							edits[rel] = append(edits[rel], edit{at, at + len(id.Name), nn})
						}
					}
				}
				return true
			}
			start, end := off(id.Pos()), off(id.End())
			if s, ok := sels[id]; ok {
				if x, ok := s.X.(*ast.Ident); ok {
					if _, ok := info.Uses[x].(*types.PkgName); ok {
						start = off(s.Pos())
					}
				}
			}
			text := nn
			if t != u.target || finalPkg(where0(obj), t) != finalPkg(rel, u.target) {
				text = pl.pkgName(t) + "." + nn
				k := rel + "\x00" + u.target
				if needs[k] == nil {
					needs[k] = map[string]bool{}
				}
				needs[k][t] = true
			}
			if text != string(srcs[rel][start:end]) {
				edits[rel] = append(edits[rel], edit{start, end, text})
			}
			return true
		})
	}
	return byKey, edits, needs
}

func (p plan) pkgName(dir string) string {
	if n, ok := p.names[dir]; ok {
		return n
	}
	return filepath.Base(dir)
}

func printGraph() {
	var es []edge
	for e := range edges {
		es = append(es, e)
	}
	sort.Slice(es, func(i, j int) bool {
		if es[i].from != es[j].from {
			return es[i].from < es[j].from
		}
		return es[i].to < es[j].to
	})
	for _, e := range es {
		var ns []string
		for n := range edges[e] {
			ns = append(ns, n)
		}
		sort.Strings(ns)
		if len(ns) > 12 {
			ns = append(ns[:12], fmt.Sprintf("…(%d)", len(edges[e])))
		}
		tag := ""
		if testEdge[e] {
			tag = " [tests]"
		}
		fmt.Printf("%s -> %s%s: %s\n", e.from, e.to, tag, strings.Join(ns, " "))
	}
	// cycles among non-test edges (test edges only matter for a package's own tests)
	adj := map[string][]string{}
	for e := range edges {
		if !strings.HasSuffix(e.from, "]") {
			adj[e.from] = append(adj[e.from], e.to)
		}
	}
	var fu []string
	for k, n := range fileUse {
		fu = append(fu, fmt.Sprintf("%s %d", k, n))
	}
	sort.Strings(fu)
	for _, l := range fu {
		fmt.Println("TESTUSE", l)
	}
	for from := range adj {
		if path := findPath(adj, from, from); path != nil {
			fmt.Printf("CYCLE: %s\n", strings.Join(path, " -> "))
		}
	}
}

func findPath(adj map[string][]string, from, to string) []string {
	seen := map[string]bool{}
	var walk func(n string, path []string) []string
	walk = func(n string, path []string) []string {
		for _, m := range adj[n] {
			if m == to {
				return append(path, m)
			}
			if !seen[m] {
				seen[m] = true
				if p := walk(m, append(path, m)); p != nil {
					return p
				}
			}
		}
		return nil
	}
	return walk(from, []string{from})
}

func report(exports map[string]string) {
	var ks []string
	for k := range exports {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	fmt.Fprintf(os.Stderr, "%d names change (exported or renamed)\n", len(ks))
	// collisions: two top-level objects with one name in a target
	names := map[string]string{}
	for rel, us := range units {
		for _, u := range us {
			if u.recv != "" {
				continue
			}
			for _, n := range u.names {
				nn := n
				if r, ok := exports[pkgdir[rel]+":"+n]; ok {
					nn = r
				}
				if nn == "_" || nn == "init" {
					continue
				}
				test := strings.HasSuffix(rel, "_test.go")
				k := fmt.Sprintf("%s %v %s", u.target, test, nn)
				if other, ok := names[k]; ok && other != rel+":"+n {
					fmt.Fprintf(os.Stderr, "COLLISION in %s: %s from %s and %s:%s\n", u.target, nn, other, rel, n)
				}
				names[k] = rel + ":" + n
			}
		}
	}
	for _, k := range ks {
		fmt.Fprintf(os.Stderr, "  %s -> %s\n", k, exports[k])
	}
}

// emit writes every file: units grouped by target, edits applied.
func emit(edits map[string][]edit, needs map[string]map[string]bool) {
	written := map[string]bool{}
	var outs []string
	for rel := range files {
		outs = append(outs, rel)
	}
	sort.Strings(outs)
	for _, rel := range outs {
		src := srcs[rel]
		es := edits[rel]
		sort.Slice(es, func(i, j int) bool { return es[i].pos < es[j].pos })
		apply := func(from, to int) string {
			var b strings.Builder
			at := from
			for _, e := range es {
				if e.pos < from || e.end > to {
					continue
				}
				if e.pos < at {
					continue // nested (a selector and its ident): first wins
				}
				b.Write(src[at:e.pos])
				b.WriteString(e.text)
				at = e.end
			}
			b.Write(src[at:to])
			return b.String()
		}
		f := files[rel]
		// header: build constraints and the package doc (kept only at home)
		header := string(src[:off(f.Package)])
		var constraints []string
		for _, l := range strings.Split(header, "\n") {
			if strings.HasPrefix(l, "//go:build") {
				constraints = append(constraints, l)
			}
		}
		imports := ""
		for _, d := range f.Decls {
			if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.IMPORT {
				imports += string(src[off(g.Pos()):off(g.End())]) + "\n"
			}
		}
		groups := map[string][]*unit{}
		var order []string
		for _, u := range units[rel] {
			if groups[u.target] == nil {
				order = append(order, u.target)
			}
			groups[u.target] = append(groups[u.target], u)
		}
		home := pkgdir[rel]
		base := filepath.Base(rel)
		for _, t := range order {
			if t == "DROP" {
				continue
			}
			var b strings.Builder
			pn := pl.pkgName(t)
			if strings.HasSuffix(pkgnm[rel], "_test") {
				pn += "_test"
			}
			if t == home {
				pn = pkgnm[rel]
			}
			if t == home {
				b.WriteString(header)
			} else if len(constraints) > 0 {
				b.WriteString(strings.Join(constraints, "\n") + "\n\n")
			}
			b.WriteString("package " + pn + "\n\n" + imports + "\n")
			for _, u := range groups[t] {
				b.WriteString(apply(u.pos, u.end))
				b.WriteString("\n")
			}
			out := filepath.Join(t, base)
			if t != home {
				if _, exists := files[out]; exists || written[out] {
					stem := strings.TrimSuffix(base, ".go")
					suffix := ""
					if strings.HasSuffix(stem, "_test") {
						stem, suffix = strings.TrimSuffix(stem, "_test"), "_test"
					}
					out = filepath.Join(t, stem+"_"+filepath.Base(home)+suffix+".go")
				}
			}
			written[out] = true
			if t == home && len(order) == 1 && len(es) == 0 {
				continue // untouched
			}
			actual := map[string]string{}
			for _, imp := range f.Imports {
				if pn := infos[rel].PkgNameOf(imp); pn != nil {
					actual[pn.Imported().Path()] = pn.Imported().Name()
				}
			}
			code := fixImports(out, b.String(), needs[rel+"\x00"+t], actual)
			check(os.MkdirAll(filepath.Join(root, t), 0o755))
			check(os.WriteFile(filepath.Join(root, out), code, 0o644))
		}
		if _, stays := groups[home]; !stays {
			check(os.Remove(filepath.Join(root, rel)))
		}
	}
}

func fixImports(name, code string, need map[string]bool, actual map[string]string) []byte {
	fs := token.NewFileSet()
	f, err := parser.ParseFile(fs, name, code, parser.ParseComments)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		return []byte(code)
	}
	for dir := range need {
		path := module + "/" + dir
		if dir == "." {
			path = module
		}
		n := pl.pkgName(dir)
		actual[path] = n
		if filepath.Base(path) == n {
			astutil.AddImport(fs, f, path)
		} else {
			astutil.AddNamedImport(fs, f, n, path)
		}
	}
	used := map[string]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		if s, ok := n.(*ast.SelectorExpr); ok {
			if x, ok := s.X.(*ast.Ident); ok {
				used[x.Name] = true
			}
		}
		return true
	})
	for _, imp := range append([]*ast.ImportSpec(nil), f.Imports...) {
		path := strings.Trim(imp.Path.Value, `"`)
		if imp.Name != nil && (imp.Name.Name == "_" || imp.Name.Name == ".") {
			continue
		}
		if path == "C" {
			continue
		}
		n, ok := actual[path]
		if imp.Name != nil {
			n, ok = imp.Name.Name, true
		}
		if !ok {
			continue
		}
		if !used[n] {
			if imp.Name != nil {
				astutil.DeleteNamedImport(fs, f, imp.Name.Name, path)
			} else {
				astutil.DeleteImport(fs, f, path)
			}
		}
	}
	var buf bytes.Buffer
	if err := format.Node(&buf, fs, f); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		return []byte(code)
	}
	return buf.Bytes()
}

// docOf is the first line of the doc comment of the decl or spec naming id.
func docOf(d ast.Decl, id *ast.Ident) *ast.Comment {
	var g *ast.CommentGroup
	switch d := d.(type) {
	case *ast.FuncDecl:
		if d.Name == id {
			g = d.Doc
		}
	case *ast.GenDecl:
		for _, sp := range d.Specs {
			switch sp := sp.(type) {
			case *ast.TypeSpec:
				if sp.Name == id {
					g = sp.Doc
				}
			case *ast.ValueSpec:
				for _, n := range sp.Names {
					if n == id {
						g = sp.Doc
					}
				}
			}
		}
		if g == nil && len(d.Specs) == 1 {
			g = d.Doc
		}
	}
	if g == nil || len(g.List) == 0 {
		return nil
	}
	return g.List[0]
}

// finalPkg is the package name a unit of file rel has once in target.
func finalPkg(rel, target string) string {
	if target == pkgdir[rel] {
		return pkgnm[rel]
	}
	n := pl.pkgName(target)
	if strings.HasSuffix(pkgnm[rel], "_test") {
		n += "_test"
	}
	return n
}
