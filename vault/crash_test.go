package vault

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memvault/memvault/vault/transcript"
	"github.com/memvault/memvault/vault/vaulttest"
)

// A memvault process killed while it held git's ref lock or index lock left
// the lock file behind, and every later write failed ("main.lock exists:
// another git command is running"). The torture test found it; this is the
// state such a kill leaves, built by hand.
func TestStaleGitLockOfKilledWriter(t *testing.T) {
	for _, target := range []string{"refs/heads/main", "index"} {
		t.Run(filepath.Base(target), func(t *testing.T) {
			v := newVault(t)
			remember(t, v, "before the kill")
			lock := filepath.Join(v.Root, ".git", filepath.FromSlash(target)+".lock")
			// gitrepo's marker of a lock file it holds: .locks/git-<lock>.<random>.
			mark := filepath.Join(v.Root, ".locks", "git-"+filepath.Base(lock)+".12345")
			if err := os.WriteFile(mark, []byte("0000000000000000000000000000000000000000\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Link(mark, lock); err != nil {
				t.Skipf("no hard links here: %v", err)
			}
			res, err := v.Update(TxOptions{}, func(tx *Tx) error { _, err := queueRow(tx, "fact", "after the kill"); return err })
			if err != nil {
				t.Fatalf("the next write after a killed writer: %v", err)
			}
			if len(res.Warnings) > 0 {
				t.Fatalf("warnings: %v", res.Warnings)
			}
			for _, p := range []string{lock, mark} {
				if _, err := os.Lstat(p); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("%s is still there", p)
				}
			}
			if rep := mustVerify(t, v); rep.Events != 2 {
				t.Fatalf("%d events", rep.Events)
			}
			vaulttest.Fsck(t, v.Root)
		})
	}
}

// A lock file that is not memvault's (a git command is running) is waited
// for and never broken.
func TestGitLockOfAGitCommandIsRespected(t *testing.T) {
	v := newVault(t)
	remember(t, v, "first")
	lock := filepath.Join(v.Root, ".git", "refs", "heads", "main.lock")
	if err := os.WriteFile(lock, []byte("git holds this\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A marker of a killed memvault that does not own this lock changes
	// nothing either.
	if err := os.WriteFile(filepath.Join(v.Root, ".locks", "git-main.lock.999"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	head, _ := v.Head()
	_, err := v.Update(TxOptions{}, func(tx *Tx) error { _, err := queueRow(tx, "fact", "second"); return err })
	if !IsBusy(err) || !strings.Contains(err.Error(), "main.lock exists") {
		t.Fatalf("want a busy error naming main.lock, got %v", err)
	}
	if data, _ := os.ReadFile(lock); string(data) != "git holds this\n" {
		t.Fatal("git's lock file was touched")
	}
	if h, _ := v.Head(); h != head {
		t.Fatal("HEAD moved")
	}
	os.Remove(lock)
	remember(t, v, "third")
	mustVerify(t, v)
	vaulttest.Fsck(t, v.Root)
}

// A prompt with a secret, stored by the prompt hook in a transaction
// without a commit, was refused whole ("a transaction without a commit may
// only append to transcripts") because redaction appended an event: the
// prompt was lost. It is stored, redacted.
func TestPromptWithSecretWithoutCommit(t *testing.T) {
	v := newVault(t)
	ref := transcript.Ref{Agent: "default", Session: "s1"}
	secret := "AKIAIOSFODNN7EXAMPLE"
	_, err := v.Update(TxOptions{NoCommit: true, Session: "s1"}, func(tx *Tx) error {
		_, _, err := tx.AppendText(ref, []transcript.Message{{Role: transcript.RoleUser, Text: "my key is " + secret}})
		return err
	})
	if err != nil {
		t.Fatalf("store the prompt: %v", err)
	}
	var got []string
	if err := transcript.Read(v.Files(), ref, 1, 0, func(m transcript.Stored) error { got = append(got, m.Text); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || strings.Contains(got[0], secret) || !strings.Contains(got[0], "[REDACTED:aws-access-key]") {
		t.Fatalf("stored %q", got)
	}
}

// Everything memvault creates in a vault, git's files included, is private
// to its owner: folders 0700, files 0600 (git objects 0400).
func TestVaultFilesArePrivate(t *testing.T) {
	v := newVault(t)
	remember(t, v, "a private memory")
	if err := filepath.WalkDir(v.Root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if perm := info.Mode().Perm(); perm&0o077 != 0 {
			t.Errorf("%s is %o: readable by others", p, perm)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// A guarded write does not replace a file a person saved after it was read:
// the transaction fails, nothing is written, and the save stands.
func TestGuardedWriteKeepsANewerSave(t *testing.T) {
	v := newVault(t)
	rel := MustRel("MEMORY.md")
	read, _ := os.ReadFile(v.Abs(rel))
	_, err := v.Update(TxOptions{}, func(tx *Tx) error {
		tx.WriteFileIfUnchanged(rel, []byte("# merged by memvault\n"), read, true)
		tx.Append(&Event{Kind: "fact", Text: "written with the merge"})
		// The person saves between the merge and the write.
		return os.WriteFile(v.Abs(rel), []byte("# saved by a person\n"), 0o600)
	})
	if !errors.Is(err, ErrChangedUnderfoot) {
		t.Fatalf("err = %v, want errChangedUnderfoot", err)
	}
	if got, _ := os.ReadFile(v.Abs(rel)); string(got) != "# saved by a person\n" {
		t.Fatalf("MEMORY.md = %q: the person's save was overwritten", got)
	}
	st, err := v.LoadState()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range st.Rows {
		if r.Text == "written with the merge" {
			t.Fatal("the failed transaction's event reached the ledger")
		}
	}
	// Unchanged, the same write goes through.
	read, _ = os.ReadFile(v.Abs(rel))
	if _, err := v.Update(TxOptions{}, func(tx *Tx) error {
		tx.WriteFileIfUnchanged(rel, []byte("# merged again\n"), read, true)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}
