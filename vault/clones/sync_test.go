package clones

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/testvault"
	"github.com/memvault/memvault/vault/vaulttest"
)

// A push rejected because the remote moved after the fetch (another clone
// synced in between) is fetched, merged and pushed again; nothing of
// either clone is lost, and both verify.
func TestSyncRetriesWhenTheRemoteMoved(t *testing.T) {
	if !vaulttest.HasGit() {
		t.Skip("needs git to make the clones")
	}
	dir := t.TempDir()
	origin := testvault.New(t)
	testvault.Remember(t, origin, "base")
	hub := filepath.Join(dir, "hub.git")
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Env = vaulttest.Sandbox(dir)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("clone", "-q", "--bare", origin.Root, hub)
	open := func(name string) *vault.Vault {
		root := filepath.Join(dir, name, vault.DirName)
		git("clone", "-q", hub, root)
		v, err := vault.Open(root)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	a, b := open("a"), open("b")
	testvault.Remember(t, a, "from a")
	testvault.Remember(t, b, "from b")
	opts := SyncOptions{Engine: SyncEngineGoGit}

	moved := false
	testHookBeforePush = func() {
		if moved {
			return
		}
		moved = true
		if _, err := Sync(b, opts); err != nil {
			t.Errorf("b's sync in between: %v", err)
		}
	}
	defer func() { testHookBeforePush = nil }()
	rep, err := Sync(a, opts)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Rounds != 2 || rep.Pushed == 0 {
		t.Fatalf("a's sync: %d rounds, pushed %d; want a second round that pushed", rep.Rounds, rep.Pushed)
	}
	testHookBeforePush = nil
	if _, err := Sync(b, opts); err != nil {
		t.Fatal(err)
	}
	for _, v := range []*vault.Vault{a, b} {
		testvault.MustVerify(t, v)
		st, err := v.LoadState()
		if err != nil {
			t.Fatal(err)
		}
		var texts []string
		for _, r := range st.Rows {
			if r.Kind == "fact" {
				texts = append(texts, r.Text)
			}
		}
		if got := strings.Join(texts, ","); !strings.Contains(got, "from a") || !strings.Contains(got, "from b") {
			t.Errorf("%s holds %s", v.Root, got)
		}
	}
}
