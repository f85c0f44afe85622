package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestCIFuzzesEveryTarget holds .ci/run's fuzz list to the fuzz targets of
// the module: each target is fuzzed in the package that declares it, so a
// target that moves to another package, or a new one, cannot drop out of CI
// unnoticed (go test -fuzz passes when nothing matches).
func TestCIFuzzesEveryTarget(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	ci, err := os.ReadFile(filepath.Join(root, ".ci", "run"))
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{} // "pkg FuzzName"
	loop := regexp.MustCompile(`(?m)^for t in ([\w ]+); do fuzz ([\w/]+) \$t; done$`)
	for _, m := range loop.FindAllStringSubmatch(string(ci), -1) {
		for _, name := range strings.Fields(m[1]) {
			listed[m[2]+" "+name] = true
		}
	}
	one := regexp.MustCompile(`(?m)^fuzz ([\w/]+) (Fuzz\w+)$`)
	for _, m := range one.FindAllStringSubmatch(string(ci), -1) {
		listed[m[1]+" "+m[2]] = true
	}
	if len(listed) == 0 {
		t.Fatal(".ci/run fuzzes nothing this test can read")
	}
	declared := map[string]bool{}
	fuzzFunc := regexp.MustCompile(`(?m)^func (Fuzz\w+)\(`)
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(d.Name(), "_test.go") {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		pkg, _ := filepath.Rel(root, filepath.Dir(p))
		for _, m := range fuzzFunc.FindAllStringSubmatch(string(data), -1) {
			declared[filepath.ToSlash(pkg)+" "+m[1]] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for k := range declared {
		if !listed[k] {
			t.Errorf("%s: a fuzz target .ci/run does not fuzz (add `fuzz %s` to it)", k, k)
		}
	}
	for k := range listed {
		if !declared[k] {
			t.Errorf(".ci/run fuzzes %s, which that package does not declare", k)
		}
	}
}
