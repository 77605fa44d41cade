package node

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

const modulePath = "github.com/shoal-db/shoal"

// projectImports parses every non-test Go file of the module (the parent of
// this package's directory) and returns, per package path, the module
// packages it imports directly.
func projectImports(t *testing.T) map[string]map[string]bool {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	graph := map[string]map[string]bool{}
	fset := token.NewFileSet()
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		pkg := modulePath
		if rel != "." {
			pkg += "/" + filepath.ToSlash(rel)
		}
		if graph[pkg] == nil {
			graph[pkg] = map[string]bool{}
		}
		for _, imp := range f.Imports {
			p := strings.Trim(imp.Path.Value, `"`)
			if strings.HasPrefix(p, modulePath+"/") {
				graph[pkg][p] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return graph
}

// reaches reports whether from imports to, directly or not.
func reaches(graph map[string]map[string]bool, from, to string) bool {
	seen := map[string]bool{}
	stack := []string{from}
	for len(stack) > 0 {
		p := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for q := range graph[p] {
			if q == to {
				return true
			}
			if !seen[q] {
				seen[q] = true
				stack = append(stack, q)
			}
		}
	}
	return false
}

// The package import rules of docs/ARCHITECTURE.md ("Handlers and their
// context"): handlers never reach the server, the cluster or replication;
// the lower layers never reach node.
func TestImportRules(t *testing.T) {
	graph := projectImports(t)
	require := func(ok bool, format string, args ...any) {
		t.Helper()
		if !ok {
			t.Errorf(format, args...)
		}
	}
	forbiddenForHandlers := []string{"node", "replication", "gossip", "migrate", "failover"}
	notNode := []string{"store", "slots", "failover", "gossip", "replication", "migrate", "command", "resp", "config", "glob", "strconvx", "geohash", "hll", "listpack"}
	handlerPkgs := 0
	for pkg := range graph {
		rel := strings.TrimPrefix(pkg, modulePath+"/")
		if strings.HasPrefix(rel, "commands/") {
			handlerPkgs++
			for _, f := range forbiddenForHandlers {
				require(!reaches(graph, pkg, modulePath+"/"+f), "%s imports %s (handlers must not)", rel, f)
			}
		}
	}
	require(handlerPkgs > 0, "no package under commands/ found")
	for _, p := range notNode {
		pkg := modulePath + "/" + p
		if graph[pkg] == nil {
			t.Errorf("package %s not found", p)
			continue
		}
		require(!reaches(graph, pkg, modulePath+"/node"), "%s imports node", p)
	}
}
