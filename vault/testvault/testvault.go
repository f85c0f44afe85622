// Package testvault gives the tests of the packages above the engine a
// vault to work on: a new one in a temporary folder, a memory recorded in
// it, and its verification. The engine's own tests keep their helpers
// (package vault's tests cannot import a package that imports vault).
package testvault

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/gitrepo"
	"github.com/memvault/memvault/vault/memory"
	"github.com/memvault/memvault/vault/transcript"
)

// New makes a vault in a temporary folder that the test removes.
func New(t testing.TB) *vault.Vault {
	t.Helper()
	v, created, err := vault.Init(filepath.Join(t.TempDir(), vault.DirName))
	if err != nil || !created {
		t.Fatalf("init: created=%v err=%v", created, err)
	}
	return v
}

// Remember records text as a memory in a transaction of its own.
func Remember(t testing.TB, v *vault.Vault, text string) *vault.Event {
	t.Helper()
	var ev *vault.Event
	_, err := v.Update(vault.TxOptions{}, func(tx *vault.Tx) error {
		var err error
		ev, err = memory.Remember(tx, memory.Input{Text: text})
		return err
	})
	if err != nil {
		t.Fatalf("remember %q: %v", text, err)
	}
	return ev
}

// MustVerify verifies the vault's ledger and fails the test on any
// problem.
func MustVerify(t testing.TB, v *vault.Vault) *vault.VerifyReport {
	t.Helper()
	rep, err := v.Verify()
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK {
		t.Fatalf("verify failed: %v", rep.Problems)
	}
	return rep
}

// AppendMessage writes text as a user's message of session to the vault's
// transcripts, durably and without a commit, as a prompt hook does.
func AppendMessage(t testing.TB, v *vault.Vault, session, text string) {
	t.Helper()
	_, err := v.Update(vault.TxOptions{NoCommit: true}, func(tx *vault.Tx) error {
		_, _, err := tx.AppendText(transcript.Ref{Agent: v.Config.Agent, Session: session},
			[]transcript.Message{{Role: transcript.RoleUser, Text: text}})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// LastSubject is the subject of the vault's newest commit.
func LastSubject(t testing.TB, v *vault.Vault) string {
	t.Helper()
	var s string
	v.Log(func(c gitrepo.CommitInfo) bool { s = c.Subject; return false })
	return s
}

// CommitAsIs commits the file at path, below the vault's root, as it is on
// disk, the way a person's `git commit` would: no event, no check.
func CommitAsIs(t testing.TB, v *vault.Vault, path string) {
	t.Helper()
	rel, err := filepath.Rel(v.Root, path)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	c := &gitrepo.Change{Path: filepath.ToSlash(rel), Content: data, Stat: info}
	if _, err := v.Repo.Commit([]*gitrepo.Change{c}, "cut by hand", gitrepo.Signature{Name: "p", Email: "p@x"}, time.Now()); err != nil {
		t.Fatal(err)
	}
}

// ReadHead is the text of the head at rel (MEMORY.md, CONTINUITY.md, a
// thread head's path) as it is on disk.
func ReadHead(t testing.TB, v *vault.Vault, rel string) string {
	t.Helper()
	data, err := os.ReadFile(v.Abs(vault.MustRel(rel)))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// killed is what KillAt panics with.
type killed struct{ step string }

// KillAt runs fn and stops its transaction on v at step ("staged": the
// files written, no event yet; "sealed": the events appended, no commit)
// the way a SIGKILL does: no rollback runs. It fails the test if fn got
// past it.
func KillAt(t testing.TB, v *vault.Vault, step string, fn func()) {
	t.Helper()
	v.StopAt = func(s string) {
		if s == step {
			v.StopAt = nil
			panic(killed{step})
		}
	}
	defer func() {
		v.StopAt = nil
		if r := recover(); r == nil {
			t.Fatalf("the transaction got past %q", step)
		} else if _, ok := r.(killed); !ok {
			panic(r)
		}
	}()
	fn()
}

// Kinds counts the ledger's events of each kind.
func Kinds(t testing.TB, v *vault.Vault) map[string]int {
	t.Helper()
	st, err := v.LoadState()
	if err != nil {
		t.Fatal(err)
	}
	n := map[string]int{}
	for _, r := range st.Rows {
		n[r.Kind]++
	}
	return n
}
