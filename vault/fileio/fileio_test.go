package fileio

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/memvault/memvault/vault/fault"
)

func mode(t *testing.T, path string) fs.FileMode {
	t.Helper()
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return info.Mode().Perm()
}

func content(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// noTemps fails when a temporary file was left in dir.
func noTemps(t *testing.T, dir string, want int) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != want {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Fatalf("%s holds %v, want %d files", dir, names, want)
	}
}

func TestWriteAtomic(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "b")
	p := filepath.Join(dir, "f.md")
	for _, text := range []string{"one\n", "two\n"} {
		if err := WriteAtomic(p, []byte(text)); err != nil {
			t.Fatal(err)
		}
		if got := content(t, p); got != text {
			t.Fatalf("got %q, want %q", got, text)
		}
	}
	if m := mode(t, p); m != FilePerm {
		t.Errorf("file mode %o, want %o", m, FilePerm)
	}
	if m := mode(t, dir); m&^DirPerm != 0 {
		t.Errorf("folder mode %o is wider than %o", m, DirPerm)
	}
	noTemps(t, dir, 1)
}

func TestWriteAtomicIfRefused(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f.md")
	if err := WriteAtomic(p, []byte("person's text\n")); err != nil {
		t.Fatal(err)
	}
	changed := errors.New("changed underfoot")
	err := WriteAtomicIf(p, []byte("ours\n"), func() error { return changed })
	if err != changed {
		t.Fatalf("the check's error came back as %v", err)
	}
	if got := content(t, p); got != "person's text\n" {
		t.Fatalf("a refused write replaced the file: %q", got)
	}
	noTemps(t, dir, 1)
}

func TestWriteCache(t *testing.T) {
	dir := filepath.Join(t.TempDir(), ".state")
	p := filepath.Join(dir, "cache.bin")
	for _, text := range []string{"v1", "v2"} {
		if err := WriteCache(p, []byte(text)); err != nil {
			t.Fatal(err)
		}
		if got := content(t, p); got != text {
			t.Fatalf("got %q, want %q", got, text)
		}
	}
	if m := mode(t, p); m != FilePerm {
		t.Errorf("file mode %o, want %o", m, FilePerm)
	}
	noTemps(t, dir, 1)
}

func TestWriteKeepMode(t *testing.T) {
	dir := t.TempDir()
	for _, m := range []fs.FileMode{0o600, 0o644, 0o640} {
		p := filepath.Join(dir, "settings.json")
		if err := os.WriteFile(p, []byte("{}\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, m); err != nil {
			t.Fatal(err)
		}
		if err := WriteKeepMode(p, []byte("{\"a\": 1}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if got := mode(t, p); got != m {
			t.Errorf("mode %o became %o", m, got)
		}
		if got := content(t, p); got != "{\"a\": 1}\n" {
			t.Errorf("content %q", got)
		}
	}
	noTemps(t, dir, 1)

	// A new file gets the stated mode, narrowed by the umask.
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	p := filepath.Join(dir, "new.json")
	if err := WriteKeepMode(p, []byte("{}\n"), 0o666); err != nil {
		t.Fatal(err)
	}
	if got := mode(t, p); got != 0o644 {
		t.Errorf("new file mode %o, want 644", got)
	}
	if err := WriteKeepMode(filepath.Join(dir, "missing", "x.json"), nil, 0o644); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a write into a missing folder gave %v", err)
	}
}

func TestAppend(t *testing.T) {
	root := At(t.TempDir())
	p := filepath.Join(root.Dir(), "ledger", "d.jsonl")
	for _, line := range []string{"{\"a\":1}\n", "{\"b\":2}\n"} {
		if err := root.Append(p, []byte(line)); err != nil {
			t.Fatal(err)
		}
	}
	if got := content(t, p); got != "{\"a\":1}\n{\"b\":2}\n" {
		t.Fatalf("got %q", got)
	}
	if m := mode(t, p); m&^FilePerm != 0 {
		t.Errorf("file mode %o is wider than %o", m, FilePerm)
	}
}

func TestErrorsAreClassified(t *testing.T) {
	// A file where a folder should be: every vault writer fails with
	// ErrIO, and nothing is written.
	root := t.TempDir()
	block := filepath.Join(root, "block")
	if err := os.WriteFile(block, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(block, "f")
	for name, err := range map[string]error{
		"WriteAtomic": WriteAtomic(p, []byte("x")),
		"WriteCache":  WriteCache(p, []byte("x")),
		"Append":      At(root).Append(p, []byte("x\n")),
		"SyncDir":     SyncDir(filepath.Join(root, "missing")),
	} {
		if !errors.Is(err, fault.ErrIO) {
			t.Errorf("%s: %v is not classified as i/o", name, err)
		}
	}
}
