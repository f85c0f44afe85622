package clones

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/heads"
	"github.com/memvault/memvault/vault/testvault"
	"github.com/memvault/memvault/vault/vaulttest"
)

// A push rejected because the remote moved after the fetch (another clone
// synced in between) is fetched, merged and pushed again; nothing of
// either clone is lost, and both verify.
func TestSyncRetriesWhenTheRemoteMoved(t *testing.T) {
	a, b := twoClones(t)
	testvault.Remember(t, a, "from a")
	testvault.Remember(t, b, "from b")
	opts := SyncOptions{Engine: SyncEngineGoGit}

	moved := false
	moving := opts
	moving.beforePush = func() {
		if moved {
			return
		}
		moved = true
		if _, err := Sync(b, opts); err != nil {
			t.Errorf("b's sync in between: %v", err)
		}
	}
	rep, err := Sync(a, moving)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Rounds != 2 || rep.Pushed == 0 {
		t.Fatalf("a's sync: %d rounds, pushed %d; want a second round that pushed", rep.Rounds, rep.Pushed)
	}
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

// twoClones are two clones of one vault through a bare hub, each opened.
func twoClones(t *testing.T) (a, b *vault.Vault) {
	t.Helper()
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
	return open("a"), open("b")
}

// A sync whose merge brings another clone's memvault.toml runs on it
// from then on: the heads it renders, and what the process does after
// it, read the merged settings, not those the vault was opened with.
func TestSyncReadsTheMergedConfig(t *testing.T) {
	a, b := twoClones(t)
	rel := vault.MustRel(vault.ConfigFile)
	data, err := os.ReadFile(b.Abs(rel))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Update(vault.TxOptions{}, func(tx *vault.Tx) error {
		tx.WriteFile(rel, append(data, "\n[threads.\"project:shop\"]\naliases = [\"storefront\"]\n"...))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	testvault.Remember(t, a, "from a")
	opts := SyncOptions{Engine: SyncEngineGoGit}
	for _, v := range []*vault.Vault{b, a} {
		if _, err := Sync(v, opts); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := heads.LoadHeadsConfig(a)
	if err != nil {
		t.Fatal(err)
	}
	if th, err := cfg.ResolveThread("storefront"); err != nil || th.String() != "project:shop" {
		t.Fatalf("after the sync, storefront is %v (%v); threads %+v", th, err, cfg.Threads)
	}
}

// Bookkeeping a deferred transaction left waiting (vault.TxOptions.Defer)
// is committed by the sync before it merges and pushes: the other clone
// receives it, and neither clone is left with lines HEAD does not hold.
func TestSyncCarriesWhatWaits(t *testing.T) {
	a, b := twoClones(t)
	if _, err := a.Update(vault.TxOptions{Defer: true, Session: "s1"}, func(tx *vault.Tx) error {
		tx.Append(&vault.Event{Kind: vault.KindSessionStarted, Text: "claude-code session (startup)"})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	testvault.Remember(t, b, "from b")
	opts := SyncOptions{Engine: SyncEngineGoGit}
	for _, v := range []*vault.Vault{a, b} {
		if _, err := Sync(v, opts); err != nil {
			t.Fatal(err)
		}
	}
	for _, v := range []*vault.Vault{a, b} {
		testvault.MustVerify(t, v)
		if n := testvault.Kinds(t, v)[vault.KindSessionStarted]; n != 1 {
			t.Errorf("%s holds %d session.started events, want the one a left waiting", v.Root, n)
		}
		if st := (vaulttest.Git{Dir: v.Root}).Run(t, "status", "--porcelain"); strings.TrimSpace(st) != "" {
			t.Errorf("%s left uncommitted:\n%s", v.Root, st)
		}
		vaulttest.Fsck(t, v.Root)
	}
}
