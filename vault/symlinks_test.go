package vault

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memvault/memvault/vault/vaulttest"
)

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
	out, untouched := vaulttest.OutsideDir(t, v.Root)
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
