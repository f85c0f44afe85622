package fileio

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/memvault/memvault/vault/fault"
)

// linkWorld is a root with a folder and a file, an outside folder with a
// secret file, and links of every kind below the root:
//
//	root/real/f.md              a regular file
//	root/file -> outside/secret a link to an outside file
//	root/dir -> outside         a link to an outside folder
//	root/real/deep -> outside   a link in a folder below the root
//	root/dangling -> outside/new a link to a file that does not exist
//	root/inside -> real         a link that stays inside the root
//	root/infile -> real/f.md    a link to a file inside the root
type linkWorld struct {
	root, outside string
	before        map[string]string // the outside folder's files
}

func newLinkWorld(t *testing.T) *linkWorld {
	t.Helper()
	base := t.TempDir()
	w := &linkWorld{root: filepath.Join(base, "root"), outside: filepath.Join(base, "outside")}
	for _, d := range []string{filepath.Join(w.root, "real"), w.outside} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p, s string) {
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(w.root, "real", "f.md"), "inside\n")
	write(filepath.Join(w.outside, "secret"), "outside secret\n")
	for link, target := range map[string]string{
		"file":      filepath.Join(w.outside, "secret"),
		"dir":       w.outside,
		"real/deep": w.outside,
		"dangling":  filepath.Join(w.outside, "new"),
		"inside":    "real",
		"infile":    "real/f.md",
	} {
		if err := os.Symlink(target, filepath.Join(w.root, filepath.FromSlash(link))); err != nil {
			t.Fatal(err)
		}
	}
	w.before = w.snapshot(t)
	return w
}

// snapshot reads every file in the outside folder.
func (w *linkWorld) snapshot(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(w.outside, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(w.outside, p)
		if d.IsDir() {
			out[rel+"/"] = ""
			return nil
		}
		data, err := os.ReadFile(p)
		out[rel] = string(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// untouched fails when anything in the outside folder appeared, changed
// or went, or when a link below the root is gone.
func (w *linkWorld) untouched(t *testing.T) {
	t.Helper()
	now := w.snapshot(t)
	if len(now) != len(w.before) {
		t.Errorf("outside folder now holds %v, held %v", keys(now), keys(w.before))
	}
	for k, v := range w.before {
		if now[k] != v {
			t.Errorf("outside %s: %q, was %q", k, now[k], v)
		}
	}
	for _, link := range []string{"file", "dir", "real/deep", "dangling", "inside", "infile"} {
		if info, err := os.Lstat(filepath.Join(w.root, filepath.FromSlash(link))); err != nil || info.Mode()&fs.ModeSymlink == 0 {
			t.Errorf("the link %s is gone (%v)", link, err)
		}
	}
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// refused fails unless err refuses the link named link: ErrLink, classed
// corrupt, and the message naming the path relative to the root.
func refused(t *testing.T, what string, err error, link string) {
	t.Helper()
	switch {
	case err == nil:
		t.Errorf("%s: went through the link %s", what, link)
	case !IsLink(err) || !errors.Is(err, fault.ErrCorrupt):
		t.Errorf("%s: %v, want the refusal of the link %s", what, err, link)
	case !strings.HasPrefix(err.Error(), link+": is a symbolic link"):
		t.Errorf("%s: %q does not name %s first", what, err, link)
	}
}

// roots returns the Root of dir with openat2 (where the kernel has it)
// and with the Lstat walk, so that both are held to the same cases.
func roots(dir string) map[string]Root {
	walk := At(dir)
	walk.walk = true
	return map[string]Root{"openat2": At(dir), "walk": walk}
}

// TestRootRefusesLinks tries every operation of a Root against a link at
// the last component, in a folder above it, dangling, and pointing inside
// the root: each is refused naming the link, nothing outside is read or
// written, and the links stay.
func TestRootRefusesLinks(t *testing.T) {
	for name := range roots(".") {
		t.Run(name, func(t *testing.T) {
			w := newLinkWorld(t)
			r := roots(w.root)[name]
			abs := func(p string) string { return filepath.Join(w.root, filepath.FromSlash(p)) }
			for _, tc := range []struct {
				path, link string
			}{
				{"file", "file"},
				{"dir/secret", "dir"},
				{"dir/new", "dir"},
				{"real/deep/secret", "real/deep"},
				{"real/deep/sub/new", "real/deep"},
				{"dangling", "dangling"},
				{"inside/f.md", "inside"},
				{"infile", "infile"},
			} {
				for _, p := range []string{tc.path, abs(tc.path)} {
					if data, err := r.ReadFile(p); err == nil || data != nil {
						t.Errorf("ReadFile %s: read %q through the link", p, data)
					} else {
						refused(t, "ReadFile "+p, err, tc.link)
					}
				}
				f, err := r.Open(tc.path)
				if err == nil {
					f.Close()
				}
				refused(t, "Open "+tc.path, err, tc.link)
				_, err = r.Stat(tc.path)
				refused(t, "Stat "+tc.path, err, tc.link)
				refused(t, "Check "+tc.path, r.Check(tc.path), tc.link)
				refused(t, "WriteAtomic "+tc.path, r.WriteAtomic(tc.path, []byte("pwned\n")), tc.link)
				refused(t, "WriteCache "+tc.path, r.WriteCache(tc.path, []byte("pwned\n")), tc.link)
				refused(t, "Overwrite "+tc.path, r.Overwrite(tc.path, []byte("pwned\n")), tc.link)
				refused(t, "Append "+tc.path, r.Append(tc.path, []byte("pwned\n")), tc.link)
				refused(t, "Truncate "+tc.path, r.Truncate(tc.path, 0), tc.link)
				refused(t, "Remove "+tc.path, r.Remove(tc.path), tc.link)
				refused(t, "RemoveAll "+tc.path, r.RemoveAll(tc.path), tc.link)
				refused(t, "MkdirAll "+tc.path, r.MkdirAll(tc.path), tc.link)
				f, err = r.OpenFile(tc.path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, FilePerm)
				if err == nil {
					f.Close()
				}
				refused(t, "OpenFile create "+tc.path, err, tc.link)
			}
			for _, dir := range []string{"dir", "inside", "real/deep"} {
				_, err := r.ReadDir(dir)
				refused(t, "ReadDir "+dir, err, dir)
			}
			w.untouched(t)
		})
	}
}

// TestRootWorksWithoutLinks holds the Root to what os does where there is
// no link: missing files are fs.ErrNotExist, writes land, folders are made,
// the listing is sorted, and the root itself may be reached through a link.
func TestRootWorksWithoutLinks(t *testing.T) {
	for name := range roots(".") {
		t.Run(name, func(t *testing.T) {
			base := t.TempDir()
			real := filepath.Join(base, "vault")
			if err := os.Mkdir(real, 0o700); err != nil {
				t.Fatal(err)
			}
			viaLink := filepath.Join(base, "link-to-vault")
			if err := os.Symlink(real, viaLink); err != nil {
				t.Fatal(err)
			}
			r := roots(viaLink)[name]
			if _, err := r.ReadFile("a/b.md"); !errors.Is(err, fs.ErrNotExist) || IsLink(err) {
				t.Fatalf("missing file: %v", err)
			}
			if _, err := r.Stat("a/b.md"); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("stat of a missing file: %v", err)
			}
			if err := r.Check("a/b/c.md"); err != nil {
				t.Fatalf("check of a missing file: %v", err)
			}
			if err := r.WriteAtomic("a/b.md", []byte("one\n")); err != nil {
				t.Fatal(err)
			}
			if err := r.Append(filepath.Join(viaLink, "a", "log.jsonl"), []byte("x\n")); err != nil {
				t.Fatal(err)
			}
			if err := r.Append("a/log.jsonl", []byte("y\n")); err != nil {
				t.Fatal(err)
			}
			if err := r.WriteCache("c/d/e.bin", []byte("cache")); err != nil {
				t.Fatal(err)
			}
			if err := r.MkdirAll("x/y/z"); err != nil {
				t.Fatal(err)
			}
			if got := content(t, filepath.Join(real, "a", "log.jsonl")); got != "x\ny\n" {
				t.Fatalf("appended %q", got)
			}
			if data, err := r.ReadFile("a/b.md"); err != nil || string(data) != "one\n" {
				t.Fatalf("read %q, %v", data, err)
			}
			entries, err := r.ReadDir("")
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, e := range entries {
				names = append(names, e.Name())
			}
			if strings.Join(names, " ") != "a c x" {
				t.Fatalf("root lists %v", names)
			}
			if info, err := r.Stat("x/y/z"); err != nil || !info.IsDir() || info.Mode().Perm() != DirPerm {
				t.Fatalf("made folder: %v, %v", info, err)
			}
			if err := r.Truncate("a/log.jsonl", 2); err != nil || content(t, filepath.Join(real, "a", "log.jsonl")) != "x\n" {
				t.Fatalf("truncate: %v", err)
			}
			if err := r.Remove("a/b.md"); err != nil {
				t.Fatal(err)
			}
			if err := r.RemoveAll("c"); err != nil {
				t.Fatal(err)
			}
			if err := r.RemoveAll("c"); err != nil {
				t.Fatalf("removing what is gone: %v", err)
			}
			for _, p := range []string{"../escape", filepath.Join(base, "elsewhere")} {
				if _, err := r.ReadFile(p); !errors.Is(err, fault.ErrInvalid) {
					t.Errorf("%s outside the root: %v", p, err)
				}
			}
		})
	}
}

// TestRootMkdirAllStopsAtALinkItMeets: a folder replaced by a link after
// the first check is still met by the walk that creates what is missing.
func TestRootMkdirAllStopsAtALinkItMeets(t *testing.T) {
	w := newLinkWorld(t)
	r := At(w.root)
	refused(t, "MkdirAll below a dangling link", r.MkdirAll("dangling/sub"), "dangling")
	refused(t, "WriteAtomic below a dangling link", r.WriteAtomic("dangling/sub/f", []byte("x")), "dangling")
	if _, err := os.Stat(filepath.Join(w.outside, "new")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the dangling link's target was created: %v", err)
	}
	w.untouched(t)
}

// BenchmarkReadFile compares a read through a Root (openat2, and the Lstat
// walk) with os.ReadFile, for a file three folders below the root, as a
// transcript part is.
func BenchmarkReadFile(b *testing.B) {
	dir := b.TempDir()
	p := filepath.Join(dir, "transcripts", "agent", "s.jsonl")
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(strings.Repeat("x", 4096)), 0o600); err != nil {
		b.Fatal(err)
	}
	b.Run("os", func(b *testing.B) {
		for b.Loop() {
			if _, err := os.ReadFile(p); err != nil {
				b.Fatal(err)
			}
		}
	})
	for name, r := range roots(dir) {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				if _, err := r.ReadFile(p); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestRootWalk: a walk lists parents before children with absolute paths,
// shows a link without descending into it, leaves out a folder fn skips,
// and finds nothing in a folder that does not exist.
func TestRootWalk(t *testing.T) {
	dir := t.TempDir()
	outside := t.TempDir()
	for _, d := range []string{"a/b", "skip/deep"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"a/b/f.txt", "skip/deep/g.txt", filepath.Join(outside, "secret")} {
		if !filepath.IsAbs(f) {
			f = filepath.Join(dir, f)
		}
		if err := os.WriteFile(f, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(outside, filepath.Join(dir, "a", "link")); err != nil {
		t.Fatal(err)
	}
	var got []string
	err := At(dir).Walk("", func(p string, d fs.DirEntry) error {
		rel, _ := filepath.Rel(dir, p)
		if d.Type()&fs.ModeSymlink != 0 {
			rel += "@"
		}
		got = append(got, filepath.ToSlash(rel))
		if d.Name() == "skip" {
			return fs.SkipDir
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := "a a/b a/b/f.txt a/link@ skip"; strings.Join(got, " ") != want {
		t.Errorf("walk: %q, want %q", got, want)
	}
	if err := At(dir).Walk("none/here", func(string, fs.DirEntry) error { return errors.New("called") }); err != nil {
		t.Errorf("a folder that does not exist: %v", err)
	}
}

// Overwrite keeps the file it writes (the same inode: no file is created
// for a write), leaves no old tail behind a shorter content, makes a
// missing file and its folder, and refuses a named pipe at once instead of
// waiting for a reader.
func TestRootOverwrite(t *testing.T) {
	for name := range roots(".") {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			r := roots(dir)[name]
			p := filepath.Join(dir, "locks", "list")
			if err := r.Overwrite(p, []byte("a long first content\n")); err != nil {
				t.Fatal(err)
			}
			before, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			if err := r.Overwrite(p, []byte("short\n")); err != nil {
				t.Fatal(err)
			}
			after, _ := os.Stat(p)
			if !os.SameFile(before, after) {
				t.Error("Overwrite replaced the file instead of writing it")
			}
			if got, _ := os.ReadFile(p); string(got) != "short\n" {
				t.Errorf("after a shorter write: %q", got)
			}
			if after.Mode().Perm() != FilePerm {
				t.Errorf("mode %v, want %v", after.Mode().Perm(), FilePerm)
			}
			fifo := filepath.Join(dir, "pipe")
			if err := syscall.Mkfifo(fifo, 0o600); err != nil {
				t.Skip(err)
			}
			done := make(chan error, 1)
			go func() { done <- r.Overwrite(fifo, []byte("x\n")) }()
			select {
			case err := <-done:
				if err == nil {
					t.Error("Overwrite wrote into a named pipe")
				}
			case <-time.After(5 * time.Second):
				t.Fatal("Overwrite hangs on a named pipe")
			}
		})
	}
}
