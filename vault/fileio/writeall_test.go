package fileio

import (
	"os"
	"path/filepath"
	"testing"
)

// WriteAtomicAll writes every file whole, in folders it creates, with the
// files' mode; below a root, a path through a symbolic link is refused
// before any file is written, so a batch is not left half done by a path
// the guard would refuse.
func TestWriteAtomicAll(t *testing.T) {
	dir := t.TempDir()
	r := At(dir)
	files := []File{{filepath.Join(dir, "q", "1-a.json"), []byte("one")},
		{filepath.Join(dir, "q", "2-b.json"), []byte("two")}, {filepath.Join(dir, "r", "3-c.json"), []byte("three")}}
	if err := r.WriteAtomicAll(files); err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		got, err := os.ReadFile(f.Path)
		if err != nil || string(got) != string(f.Data) {
			t.Errorf("%s: %q, %v; want %q", f.Path, got, err, f.Data)
		}
		if info, err := os.Stat(f.Path); err != nil || info.Mode().Perm() != FilePerm {
			t.Errorf("%s: mode %v, %v", f.Path, info.Mode(), err)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "q", ".*")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	bad := []File{{filepath.Join(dir, "q", "4-d.json"), []byte("four")}, {filepath.Join(dir, "link", "5-e.json"), []byte("five")}}
	if err := r.WriteAtomicAll(bad); err == nil {
		t.Fatal("a path through a symbolic link was written")
	}
	if _, err := os.Stat(bad[0].Path); !os.IsNotExist(err) {
		t.Errorf("the batch was half written before its refused path: %v", err)
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Errorf("written outside the root: %v", entries)
	}
}
