package fileio

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// replaceMethods are ReplaceIfSame's ways, each on its own, so that every
// one is tested whatever the system would pick.
func replaceMethods() map[string]func(path string, data, was []byte) error {
	return map[string]func(path string, data, was []byte) error{
		"lease": replaceLeased, "exchange": replaceExchanged, "rename": replaceRenamed,
	}
}

// TestReplaceIfSame: each way replaces a file that holds what was read,
// refuses (ErrChanged, nothing written, nothing left behind) one that does
// not or that is gone, and keeps the file private.
func TestReplaceIfSame(t *testing.T) {
	for name, replace := range replaceMethods() {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "MEMORY.md")
			if err := os.WriteFile(p, []byte("old\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			err := replace(p, []byte("new\n"), []byte("old\n"))
			if errors.Is(err, errUnsupported) {
				t.Skipf("%s is not available on this file system", name)
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := content(t, p); got != "new\n" {
				t.Fatalf("got %q", got)
			}
			if m := mode(t, p); m != FilePerm {
				t.Errorf("mode %o, want %o", m, FilePerm)
			}
			// A save since the read: nothing replaced.
			if err := os.WriteFile(p, []byte("saved by a person\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := replace(p, []byte("render\n"), []byte("new\n")); !errors.Is(err, ErrChanged) {
				t.Fatalf("a file saved since the read: got %v, want ErrChanged", err)
			}
			if got := content(t, p); got != "saved by a person\n" {
				t.Fatalf("the save was replaced: %q", got)
			}
			// A file that is gone is not brought back.
			os.Remove(p)
			if err := replace(p, []byte("render\n"), []byte("saved by a person\n")); !errors.Is(err, ErrChanged) {
				t.Fatalf("a removed file: got %v, want ErrChanged", err)
			}
			if _, err := os.Lstat(p); err == nil {
				t.Fatal("a removed file was written again")
			}
			noTemps(t, dir, 0)
		})
	}
}

// TestReplaceIfSameCreates: a file that did not exist is created, but
// never over one that appeared meanwhile.
func TestReplaceIfSameCreates(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "sub", "MEMORY.md")
	if err := ReplaceIfSame(p, []byte("render\n"), nil, false); err != nil {
		t.Fatal(err)
	}
	if got := content(t, p); got != "render\n" {
		t.Fatalf("got %q", got)
	}
	if err := ReplaceIfSame(p, []byte("again\n"), nil, false); !errors.Is(err, ErrChanged) {
		t.Fatalf("creating over a file that exists: got %v, want ErrChanged", err)
	}
	if got := content(t, p); got != "render\n" {
		t.Fatalf("the file was replaced: %q", got)
	}
	noTemps(t, filepath.Dir(p), 1)
}

// TestReplaceIfSameLeavesALinkAlone: a symbolic link at the path is never
// written through; like every other writer, the replace puts a file in
// its place (the target keeps its bytes).
func TestReplaceIfSameLeavesALinkAlone(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "outside.txt")
	p := filepath.Join(dir, "MEMORY.md")
	if err := os.WriteFile(target, []byte("outside\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, p); err != nil {
		t.Fatal(err)
	}
	if err := ReplaceIfSame(p, []byte("render\n"), []byte("outside\n"), true); err != nil {
		t.Fatal(err)
	}
	if got := content(t, target); got != "outside\n" {
		t.Fatalf("written through the link: %q", got)
	}
	if info, err := os.Lstat(p); err != nil || !info.Mode().IsRegular() {
		t.Fatalf("the link is still there: %v %v", info, err)
	}
}
