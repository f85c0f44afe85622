package vault

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memvault/memvault/vault/fileio"
	"github.com/memvault/memvault/vault/vaulttest"
)

// outsideDir makes a folder beside the vault with one file in it, and
// returns the folder and a check that the file is still there, unchanged,
// and alone.
func outsideDir(t *testing.T, v *Vault) (string, func()) {
	t.Helper()
	dir := filepath.Join(filepath.Dir(v.Root), "outside")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "keep"), []byte("outside\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir, func() {
		t.Helper()
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) != 1 || entries[0].Name() != "keep" {
			var names []string
			for _, e := range entries {
				names = append(names, e.Name())
			}
			t.Errorf("the outside folder now holds %v", names)
		}
		if data, err := os.ReadFile(filepath.Join(dir, "keep")); err != nil || string(data) != "outside\n" {
			t.Errorf("the outside file: %q, %v", data, err)
		}
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(link), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// TestVerifyNamesEveryLink: a link on disk only, one committed in HEAD, and
// one in a folder git ignores each fail verification, named with where
// they are; the ledger is still checked where it can be read.
func TestVerifyNamesEveryLink(t *testing.T) {
	if !vaulttest.HasGit() {
		t.Skip("the link is committed with git")
	}
	v := newVault(t)
	remember(t, v, "a fact")
	out, untouched := outsideDir(t, v)
	symlink(t, out, filepath.Join(v.Root, "threads", "project"))
	symlink(t, filepath.Join(out, "keep"), filepath.Join(v.Root, ".state", "cache.bin"))
	symlink(t, "ledger", filepath.Join(v.Root, "inside"))
	g := vaulttest.Git{Dir: v.Root, Env: vaulttest.Sandbox(t.TempDir())}
	g.Run(t, "add", "threads/project")
	g.Run(t, "commit", "-q", "--no-verify", "-m", "a link")

	rep, err := v.Verify()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		".state/cache.bin": "; on disk",
		"inside":           "; on disk",
		"threads/project":  "; on disk and in HEAD (mode 120000)",
	}
	if rep.OK || len(rep.Problems) != len(want) {
		t.Fatalf("verify: ok=%v problems %v, want the %d links", rep.OK, rep.Problems, len(want))
	}
	for _, p := range rep.Problems {
		if !p.IsLink() || !strings.HasSuffix(p.Msg, want[p.File]) {
			t.Errorf("problem %s, want %s%s", p, p.File, want[p.File])
		}
	}
	if rep.Events != 1 {
		t.Errorf("verify checked %d events, want the ledger's 1", rep.Events)
	}
	untouched()
}

// TestSearchIndexNeverThroughALink: an .index folder that is a link to an
// outside folder is neither emptied nor filled by a rebuild (the index's
// library empties the folder it creates an index in), and recall still
// answers from the files.
func TestSearchIndexNeverThroughALink(t *testing.T) {
	v := newVault(t)
	remember(t, v, "the osprey migration")
	out, untouched := outsideDir(t, v)
	if err := os.RemoveAll(filepath.Join(v.Root, IndexDir)); err != nil {
		t.Fatal(err)
	}
	symlink(t, out, filepath.Join(v.Root, IndexDir))
	if _, err := v.Reindex(nil); !fileio.IsLink(err) {
		t.Fatalf("reindex through a linked .index: %v", err)
	}
	res, err := v.Recall(RecallOptions{Query: "osprey"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Hits) == 0 {
		t.Error("recall found nothing without its index")
	}
	untouched()

	// A link inside the index's folder is refused too.
	if err := os.Remove(filepath.Join(v.Root, IndexDir)); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Reindex(nil); err != nil {
		t.Fatal(err)
	}
	part := v.partDir(indexParts[0])
	symlink(t, filepath.Join(out, "keep"), filepath.Join(part, "planted"))
	if err := v.checkNoLinksBelow(part); !fileio.IsLink(err) {
		t.Fatalf("a link inside an index part: %v", err)
	}
	if _, err := v.Reindex(nil); !fileio.IsLink(err) {
		t.Fatalf("reindex over a link inside a part: %v", err)
	}
	untouched()
}
