package bitt

// The exported API's shape, read from the package's own source: every time
// is a time.Time and every duration a time.Duration (no int64
// milliseconds), and no call takes option names at run time.

import (
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// exportedNames calls f with every exported struct field and every
// parameter and result of an exported function or method (of an exported
// type), with the source text of its type.
func exportedNames(t *testing.T, f func(where, name, typ string, expr ast.Expr)) {
	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fields := func(where string, fl *ast.FieldList) {
		if fl == nil {
			return
		}
		for _, fd := range fl.List {
			for _, n := range fd.Names {
				f(where, n.Name, types.ExprString(fd.Type), fd.Type)
			}
			if len(fd.Names) == 0 {
				f(where, "", types.ExprString(fd.Type), fd.Type)
			}
		}
	}
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			switch x := d.(type) {
			case *ast.FuncDecl:
				if !x.Name.IsExported() {
					continue
				}
				where := x.Name.Name
				if x.Recv != nil {
					recv := x.Recv.List[0].Type
					if st, ok := recv.(*ast.StarExpr); ok {
						recv = st.X
					}
					if id, ok := recv.(*ast.Ident); !ok || !id.IsExported() {
						continue
					}
					where = recv.(*ast.Ident).Name + "." + where
				}
				fields(where+" parameter", x.Type.Params)
				fields(where+" result", x.Type.Results)
			case *ast.GenDecl:
				for _, sp := range x.Specs {
					ts, ok := sp.(*ast.TypeSpec)
					if !ok || !ts.Name.IsExported() {
						continue
					}
					if st, ok := ts.Type.(*ast.StructType); ok {
						var exported ast.FieldList
						for _, fd := range st.Fields.List {
							for _, n := range fd.Names {
								if n.IsExported() {
									exported.List = append(exported.List, &ast.Field{Names: []*ast.Ident{n}, Type: fd.Type})
								}
							}
						}
						fields(ts.Name.Name+" field", &exported)
					}
				}
			}
		}
	}
}

func TestTimesAndDurationsAreTyped(t *testing.T) {
	isTime := regexp.MustCompile(`At$|^(now|deadline)$`)
	isDuration := regexp.MustCompile(`(?i)^(ttl|lease|wait|delay|interval|period|timeout|d)$`)
	isMs := regexp.MustCompile(`(Ms|MS|Millis|ms)$`)
	n := 0
	exportedNames(t, func(where, name, typ string, _ ast.Expr) {
		n++
		switch {
		case isMs.MatchString(name):
			t.Errorf("%s %s %s: milliseconds in the API", where, name, typ)
		case isTime.MatchString(name) && typ != "time.Time":
			t.Errorf("%s %s is %s, not time.Time", where, name, typ)
		case isDuration.MatchString(name) && typ != "time.Duration":
			t.Errorf("%s %s is %s, not time.Duration", where, name, typ)
		}
	})
	if n < 100 {
		t.Fatalf("only %d names seen: the parse missed the API", n)
	}
}

// The third row of ERRORS.md's argument table (an unknown option name)
// cannot happen in Go: no exported call takes a map or names as strings
// of options; options are struct fields and Option funcs.
func TestNoOptionsByName(t *testing.T) {
	exportedNames(t, func(where, name, typ string, expr ast.Expr) {
		if _, isMap := expr.(*ast.MapType); isMap && strings.HasSuffix(where, "parameter") {
			t.Errorf("%s %s takes a map (%s): option names would be checked at run time", where, name, typ)
		}
	})
}
