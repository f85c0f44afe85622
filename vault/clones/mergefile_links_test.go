package clones

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/fileio"
	"github.com/memvault/memvault/vault/vaulttest"
)

// TestMergeDriverRefusesLinks: git's three copies are read without
// following a link, and a file whose folder in the work tree is a link is
// not merged.
func TestMergeDriverRefusesLinks(t *testing.T) {
	dir := t.TempDir()
	out := t.TempDir()
	for name, text := range map[string]string{"b": "base\n", "o": "ours\n", "t": "theirs\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(out, "secret"), []byte("secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := ReadMergeVersions(dir, "MEMORY.md", [3]string{"b", filepath.Join(dir, "o"), "t"})
	if err != nil || string(got[0]) != "base\n" || string(got[1]) != "ours\n" || string(got[2]) != "theirs\n" {
		t.Fatalf("read %q, %v", got, err)
	}
	vaulttest.Symlink(t, filepath.Join(out, "secret"), filepath.Join(dir, "l"))
	vaulttest.Symlink(t, out, filepath.Join(dir, "threads", "project"))
	for _, tc := range []struct {
		path  string
		files [3]string
	}{
		{"MEMORY.md", [3]string{"l", "o", "t"}},
		{"MEMORY.md", [3]string{"b", "o", filepath.Join(dir, "l")}},
		{"threads/project/x.md", [3]string{"b", "o", "t"}},
		{"l", [3]string{"b", "o", "t"}},
	} {
		got, err := ReadMergeVersions(dir, tc.path, tc.files)
		if !fileio.IsLink(err) || !errors.Is(err, vault.ErrCorrupt) {
			t.Errorf("%s %v: %v", tc.path, tc.files, err)
		}
		for _, data := range got {
			if strings.Contains(string(data), "secret") {
				t.Errorf("%s %v: read the outside file", tc.path, tc.files)
			}
		}
	}
}
