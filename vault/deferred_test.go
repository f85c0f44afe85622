package vault

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/memvault/memvault/vault/vaulttest"
	"github.com/memvault/memvault/vault/waiting"
)

// gitLog is the subjects of the vault's commits, newest first, by real git.
func gitLog(t *testing.T, v *Vault, format string) []string {
	t.Helper()
	out := vaulttest.Git{Dir: v.Root}.Run(t, "log", "--format="+format)
	return strings.Split(strings.TrimSpace(out), "\n")
}

// deferred records a bookkeeping event and writes a file (as a session
// summary's node does) without a commit.
func deferred(t *testing.T, v *Vault, text, file string) {
	t.Helper()
	_, err := v.Update(TxOptions{Defer: true, Session: "s1"}, func(tx *Tx) error {
		tx.Append(&Event{Kind: KindSessionStarted, Text: text})
		if file != "" {
			tx.WriteFile(MustRel("nodes", file), []byte(text+"\n"))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A deferred transaction makes no commit; the next transaction that
// commits carries what it wrote, under its own subject, and says what it
// carried: one commit, git fsck and memvault verify clean, the working
// tree clean.
func TestDeferredRidesInTheNextCommit(t *testing.T) {
	v := newVault(t)
	before := len(gitLog(t, v, "%H"))
	deferred(t, v, "claude-code session (startup)", "n1.md")
	if n := len(gitLog(t, v, "%H")); n != before {
		t.Fatalf("a deferred transaction made %d commits", n-before)
	}
	if _, err := os.Stat(filepath.Join(v.Root, filepath.FromSlash(waiting.File))); err != nil {
		t.Fatalf("no record of what waits: %v", err)
	}
	mustVerify(t, v) // the ledger may grow past HEAD
	remember(t, v, "retry webhooks 5 times")
	if n := len(gitLog(t, v, "%H")); n != before+1 {
		t.Fatalf("%d commits after the committing transaction, want 1", n-before)
	}
	if got := gitLog(t, v, "%s")[0]; got != "fact: retry webhooks 5 times" {
		t.Fatalf("subject %q: the commit's own memory must name it", got)
	}
	body := gitLog(t, v, "%B")
	msg := strings.Join(body, "\n")
	if !strings.Contains(msg, "Carried (written earlier without a commit):") || !strings.Contains(msg, "session.started: claude-code session (startup)") ||
		!strings.Contains(msg, "Memvault-Carried: ") {
		t.Fatalf("the message does not name what it carried:\n%s", msg)
	}
	git := vaulttest.Git{Dir: v.Root}
	if st := git.Run(t, "status", "--porcelain"); strings.TrimSpace(st) != "" {
		t.Fatalf("left uncommitted:\n%s", st)
	}
	if show := git.Run(t, "show", "--stat", "--format=", "HEAD"); !strings.Contains(show, "nodes/n1.md") || !strings.Contains(show, "ledger/") {
		t.Fatalf("the commit does not hold the deferred writes:\n%s", show)
	}
	if _, err := os.Stat(filepath.Join(v.Root, filepath.FromSlash(waiting.File))); !os.IsNotExist(err) {
		t.Fatalf("the record outlived the commit that carried it: %v", err)
	}
	vaulttest.Fsck(t, v.Root)
	mustVerify(t, v)
}

// A kill between a deferred write and the next commit loses nothing: the
// record written before the stage names the file, and the ledger's lines
// go with the next commit to their segment; with the record lost too,
// Flush finds the lines by holding each segment against HEAD.
func TestKilledDeferredIsCarried(t *testing.T) {
	for _, lose := range []bool{false, true} {
		name := "record kept"
		if lose {
			name = "record lost"
		}
		t.Run(name, func(t *testing.T) {
			v := newVault(t)
			before := len(gitLog(t, v, "%H"))
			killAt(t, v, "sealed", func() { deferred(t, v, "killed after its seal", "n2.md") })
			if lose {
				os.Remove(filepath.Join(v.Root, filepath.FromSlash(waiting.File)))
			}
			v2, err := Open(v.Root)
			if err != nil {
				t.Fatal(err)
			}
			if lose {
				res, err := v2.Flush(TxOptions{})
				if err != nil || res.Commit == "" {
					t.Fatalf("flush: %v %+v", err, res)
				}
				if s := gitLog(t, v2, "%s")[0]; !strings.HasPrefix(s, "bookkeeping: ") {
					t.Fatalf("a flush of bookkeeping alone is named %q", s)
				}
			} else {
				remember(t, v2, "after the kill")
			}
			if n := len(gitLog(t, v2, "%H")); n != before+1 {
				t.Fatalf("%d commits, want 1", n-before)
			}
			show := vaulttest.Git{Dir: v.Root}.Run(t, "show", "HEAD:"+strings.TrimSpace(segPath(t, v2)))
			if !strings.Contains(show, "killed after its seal") {
				t.Fatalf("the sealed event is not committed:\n%s", show)
			}
			if !lose {
				vaulttest.Git{Dir: v.Root}.Run(t, "cat-file", "-e", "HEAD:nodes/n2.md")
			}
			vaulttest.Fsck(t, v.Root)
			mustVerify(t, v2)
		})
	}
}

// Flush commits what waits on its own, named by the memory it carries;
// with nothing waiting it commits nothing.
func TestFlushNamesTheMemoryItCarries(t *testing.T) {
	v := newVault(t)
	if res, err := v.Flush(TxOptions{}); err != nil || res.Commit != "" {
		t.Fatalf("a flush with nothing waiting: %v %+v", err, res)
	}
	_, err := v.Update(TxOptions{Defer: true, Session: "s1"}, func(tx *Tx) error {
		tx.Append(&Event{Kind: KindDecisionRecorded, Text: "use Postgres"})
		tx.Append(&Event{Kind: KindDecisionRecorded, Text: "keep the queue"})
		tx.Append(&Event{Kind: KindContinuityNext, Text: "write the migration"})
		tx.Subject("session-summary: how should we store jobs?")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	deferred(t, v, "claude-code session (startup)", "")
	if _, err := v.Flush(TxOptions{}); err != nil {
		t.Fatal(err)
	}
	if got, want := gitLog(t, v, "%s")[0], "session: how should we store jobs? (2 decisions, 1 next)"; got != want {
		t.Fatalf("flush subject %q, want %q", got, want)
	}
	mustVerify(t, v)
}

func segPath(t *testing.T, v *Vault) string {
	segs, _, err := ListSegments(v.Root)
	if err != nil || len(segs) == 0 {
		t.Fatal(err)
	}
	return segs[len(segs)-1].String()
}

// killAt stops v's transaction at step the way a kill does (no rollback).
func killAt(t *testing.T, v *Vault, step string, fn func()) {
	t.Helper()
	type killed struct{}
	v.StopAt = func(s string) {
		if s == step {
			v.StopAt = nil
			panic(killed{})
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

// A record edited to name what is not the vault's to commit (git's
// config, the lock folder, a path out of the vault) commits none of it:
// the commit holds the memory, and git's own files stay git's.
func TestWaitingRecordCannotNameGitsFiles(t *testing.T) {
	v := newVault(t)
	if err := os.WriteFile(filepath.Join(v.Root, "..", "outside.md"), []byte("outside\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := &waiting.Record{Paths: []string{".git/config", ".locks/vault.lock", "../outside.md", "ledger/../.git/HEAD", "/etc/passwd"}}
	if err := waiting.Save(v.Files(), v.Root, r); err != nil {
		t.Fatal(err)
	}
	remember(t, v, "after a hostile record")
	show := vaulttest.Git{Dir: v.Root}.Run(t, "show", "--stat", "--format=", "HEAD")
	for _, bad := range []string{".git", ".locks", "outside", "passwd"} {
		if strings.Contains(show, bad) {
			t.Fatalf("the commit holds %s:\n%s", bad, show)
		}
	}
	vaulttest.Fsck(t, v.Root)
	mustVerify(t, v)
}

// A person's git commit that lands while a deferred transaction runs (the
// torture's hand edit committed with git, which takes no vault lock): the
// writers' check must not take the lines on disk for what that commit
// holds, or the commit that carries them later looks like a branch of the
// ledger no merge brought.
func TestPersonsCommitWhileBookkeepingWaits(t *testing.T) {
	v := newVault(t)
	remember(t, v, "before")
	git := vaulttest.Git{Dir: v.Root}
	if err := os.WriteFile(filepath.Join(v.Root, "notes.md"), []byte("mine\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	v.StopAt = func(step string) {
		if step == "sealed" {
			v.StopAt = nil
			git.Run(t, "add", "notes.md")
			git.Run(t, "commit", "-q", "-m", "a note of mine", "--", "notes.md")
		}
	}
	res, err := v.Update(TxOptions{Defer: true, Session: "s1"}, func(tx *Tx) error {
		tx.Append(&Event{Kind: KindSessionStarted, Text: "claude-code session (startup)"})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// What the writers' check trusts: a commit and the ledger's open tips
	// there. The person's commit does not hold the deferred event.
	if c := v.loadStamps(); slices.Contains(c.tips, res.Events[0].Hash) {
		h, _ := v.Repo.Head()
		t.Fatalf("the check trusts commit %s (HEAD %s) to end on the deferred event, which no commit holds", c.commit, h)
	}
	for i, text := range []string{"after one", "after two"} {
		if i == 1 { // HEAD moves again: the next writer holds the history since the commit it trusts
			if err := os.WriteFile(filepath.Join(v.Root, "notes.md"), []byte("mine, again\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			git.Run(t, "commit", "-q", "-m", "a note of mine", "--", "notes.md")
		}
		v2, err := Open(v.Root) // another process, as the hooks and commands are
		if err != nil {
			t.Fatal(err)
		}
		if _, err := v2.Update(TxOptions{}, func(tx *Tx) error { _, err := queueRow(tx, "fact", text); return err }); err != nil {
			t.Fatalf("write %d after the person's commit: %v", i+1, err)
		}
	}
	mustVerify(t, v)
	vaulttest.Fsck(t, v.Root)
}
