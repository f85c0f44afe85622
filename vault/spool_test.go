package vault

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/memvault/memvault/vault/transcript"
	"github.com/memvault/memvault/vault/vaulttest"
)

func userMsg(text string) transcript.Message {
	return transcript.Message{Role: transcript.RoleUser, Speaker: "user", Text: text, Source: transcript.Source{Format: transcript.HookFormat}}
}

func mustSpool(t *testing.T, v *Vault, ref transcript.Ref, msgs ...transcript.Message) {
	t.Helper()
	if err := v.Spool(ref, msgs); err != nil {
		t.Fatalf("spool: %v", err)
	}
}

// texts returns the texts of ref's stored messages, in order, and fails
// unless their numbers run 1, 2, 3…
func texts(t *testing.T, v *Vault, ref transcript.Ref) []string {
	t.Helper()
	var out []string
	err := transcript.Read(v.Files(), ref, 1, 0, func(m transcript.Stored) error {
		if m.N != len(out)+1 {
			t.Errorf("%s: message %q numbered %d, want %d", ref.Path(), m.Text, m.N, len(out)+1)
		}
		out = append(out, m.Text)
		return nil
	})
	if err != nil && !errors.Is(err, ErrNotFound) {
		t.Fatal(err)
	}
	return out
}

// spoolFiles lists what the spool holds but its .gitignore, relative to it.
func spoolFiles(t *testing.T, v *Vault) []string {
	t.Helper()
	var out []string
	top := filepath.Join(v.Root, SpoolDir)
	filepath.WalkDir(top, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() != ".gitignore" {
			rel, _ := filepath.Rel(top, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	return out
}

func wantTexts(t *testing.T, v *Vault, ref transcript.Ref, want ...string) {
	t.Helper()
	if got := texts(t, v, ref); !slices.Equal(got, want) {
		t.Fatalf("%s holds %q, want %q", ref.Path(), got, want)
	}
}

// A spooled message is stored redacted in a private, ignored file, and the
// next transaction of any kind folds every session's spool into its
// transcript, in the order the messages came, once.
func TestSpoolFoldsOnceInOrder(t *testing.T) {
	v := newVault(t)
	a := transcript.Ref{Agent: "default", Session: "s/1 with spaces"}
	b := transcript.Ref{Agent: "other", Session: "s2"}
	secret := "AKIAIOSFODNN7EXAMPLE"
	mustSpool(t, v, a, userMsg("first prompt, key "+secret))
	mustSpool(t, v, b, userMsg("b's prompt"))
	mustSpool(t, v, a, transcript.Message{Role: transcript.RoleAssistant, Speaker: "opencode", Text: "first reply"})

	live := v.spoolPath(a.Agent, transcript.SessionFileName(a.Session), 0)
	raw, err := os.ReadFile(live)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), secret) || !strings.Contains(string(raw), "[REDACTED:aws-access-key]") {
		t.Fatalf("the spool holds the secret, or no redaction marker:\n%s", raw)
	}
	for _, p := range []string{live, filepath.Join(v.Root, SpoolDir, ".gitignore")} {
		if info, err := os.Stat(p); err != nil || info.Mode().Perm() != 0o600 {
			t.Fatalf("%s: %v, mode %v; want 0600", p, err, info.Mode().Perm())
		}
	}
	for _, d := range []string{SpoolDir, SpoolDir + "/default", SpoolDir + "/other"} {
		if info, err := os.Stat(filepath.Join(v.Root, d)); err != nil || info.Mode().Perm() != 0o700 {
			t.Fatalf("%s: %v; want a 0700 folder", d, err)
		}
	}
	if vaulttest.HasGit() {
		if st := (vaulttest.Git{Dir: v.Root}).Run(t, "status", "--porcelain", "--ignored=no"); st != "" {
			t.Fatalf("git sees the spool:\n%s", st)
		}
	}
	if got := texts(t, v, a); len(got) != 0 {
		t.Fatalf("stored before a transaction ran: %q", got)
	}

	remember(t, v, "a fact, in a transaction that folds the spool")
	wantTexts(t, v, a, "first prompt, key [REDACTED:aws-access-key]", "first reply")
	wantTexts(t, v, b, "b's prompt")
	if left := spoolFiles(t, v); len(left) != 0 {
		t.Fatalf("the spool still holds %v", left)
	}
	remember(t, v, "another fact")
	wantTexts(t, v, a, "first prompt, key [REDACTED:aws-access-key]", "first reply")
	mustVerify(t, v)
	vaulttest.Fsck(t, v.Root)
	if vaulttest.HasGit() {
		if st := (vaulttest.Git{Dir: v.Root}).Run(t, "status", "--porcelain"); st != "" {
			t.Fatalf("git status after the fold:\n%s", st)
		}
	}
}

// A spooled prompt goes before the message of the transaction that folds
// it: the next prompt of the same session, stored the normal way.
func TestSpoolGoesBeforeTheFoldingTransaction(t *testing.T) {
	v := newVault(t)
	ref := transcript.Ref{Agent: "default", Session: "s1"}
	mustSpool(t, v, ref, userMsg("prompt 1, spooled"))
	storePrompt(t, v, ref, "prompt 2, stored")
	wantTexts(t, v, ref, "prompt 1, spooled", "prompt 2, stored")
}

func storePrompt(t *testing.T, v *Vault, ref transcript.Ref, text string) {
	t.Helper()
	_, err := v.Update(TxOptions{NoCommit: true, Session: ref.Session, Agent: ref.Agent}, func(tx *Tx) error {
		_, _, err := tx.AppendText(ref, []transcript.Message{userMsg(text)})
		return err
	})
	if err != nil {
		t.Fatalf("store %q: %v", text, err)
	}
}

// A record torn by a kill mid-write spoils only itself: it is skipped and
// reported (the transaction's warnings, the vault's Warn, which the front
// ends point at the hook log, its bytes under .logs/), and the records
// after it, on the next line or appended later, are folded.
func TestSpoolTornRecord(t *testing.T) {
	v := newVault(t)
	var warned []string
	v.Warn = func(line string) { warned = append(warned, line) }
	ref := transcript.Ref{Agent: "default", Session: "s1"}
	live := v.spoolPath(ref.Agent, transcript.SessionFileName(ref.Session), 0)
	torn := func(text string) []byte {
		line, _ := json.Marshal(spoolRecord{Spool: spoolVersion, Agent: ref.Agent, Session: ref.Session,
			Message: transcript.Message{ID: "m_torn", Role: transcript.RoleUser, Text: text}})
		return append([]byte("\n"), line[:len(line)/2]...) // what a cut write leaves: no end, no newline
	}
	mustSpool(t, v, ref, userMsg("before the torn one"))
	appendRaw(t, live, torn("torn in the middle"))
	mustSpool(t, v, ref, userMsg("after the torn one"))
	appendRaw(t, live, torn("torn at the end"))

	res, err := v.Update(TxOptions{}, func(tx *Tx) error { _, err := queueRow(tx, "fact", "fold"); return err })
	if err != nil {
		t.Fatalf("a torn spool record failed the transaction: %v", err)
	}
	wantTexts(t, v, ref, "before the torn one", "after the torn one")
	var reported int
	for _, w := range res.Warnings {
		if strings.Contains(w, "torn record") {
			reported++
		}
	}
	if reported != 2 {
		t.Fatalf("warnings %q: want the 2 torn records reported", res.Warnings)
	}
	if log := strings.Join(warned, "\n"); len(warned) != 2 || strings.Count(log, "torn record") != 2 {
		t.Fatalf("Warn was not told of the torn records, once each:\n%s", log)
	}
	kept, _ := filepath.Glob(filepath.Join(v.Root, ".logs", "spool-torn-*.txt"))
	var all string
	for _, k := range kept {
		data, _ := os.ReadFile(k)
		all += string(data)
	}
	if len(kept) != 2 || strings.Count(all, `"id":"m_torn"`) != 2 || !strings.Contains(all, ".spool/default/s1.1.fold\n") {
		t.Fatalf("the torn bytes are not kept: %v\n%s", kept, all)
	}
	if left := spoolFiles(t, v); len(left) != 0 {
		t.Fatalf("the spool still holds %v", left)
	}
}

func appendRaw(t *testing.T, path string, data []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
}

var errKilled = errors.New("killed")

// killedAfterFold runs fn, a transaction that folds the spool, and stops it
// the way a kill would between its success and the removal of its claims:
// what it wrote stays, the claims stay, the lock is released.
func killedAfterFold(t *testing.T, v *Vault, fn func()) {
	t.Helper()
	v.StopAt = func(step string) {
		if step == "folded" {
			panic(errKilled)
		}
	}
	defer func() {
		v.StopAt = nil
		if p := recover(); p != errKilled {
			t.Fatalf("the transaction was not stopped after its fold (recovered %v)", p)
		}
	}()
	fn()
}

// A writer killed after its fold was written (or committed) and before it
// removed the claims leaves records that are in the transcript and in the
// spool: the next transaction skips them by id. One that failed before
// writing leaves them in the spool only: the next transaction folds them.
// Either way each message is stored exactly once, in order.
func TestSpoolFoldIsIdempotent(t *testing.T) {
	ref := transcript.Ref{Agent: "default", Session: "s1"}
	t.Run("killed after a prompt's write", func(t *testing.T) {
		v := newVault(t)
		mustSpool(t, v, ref, userMsg("p1"), userMsg("p2"))
		killedAfterFold(t, v, func() { storePrompt(t, v, ref, "p3") })
		if left := spoolFiles(t, v); len(left) != 1 || !strings.HasSuffix(left[0], ".1.fold") {
			t.Fatalf("the kill left %v in the spool, want the claim", left)
		}
		wantTexts(t, v, ref, "p1", "p2", "p3")
		mustSpool(t, v, ref, userMsg("p4")) // a live file beside the old claim
		remember(t, v, "the next write")
		wantTexts(t, v, ref, "p1", "p2", "p3", "p4")
		if left := spoolFiles(t, v); len(left) != 0 {
			t.Fatalf("the spool still holds %v", left)
		}
		// The lines are committed with the session's next commit, once.
		if _, err := v.Update(TxOptions{Session: ref.Session}, func(tx *Tx) error { return tx.CommitTranscript(ref) }); err != nil {
			t.Fatal(err)
		}
		wantTexts(t, v, ref, "p1", "p2", "p3", "p4")
		mustVerify(t, v)
		vaulttest.Fsck(t, v.Root)
	})
	t.Run("killed after a commit", func(t *testing.T) {
		v := newVault(t)
		mustSpool(t, v, ref, userMsg("p1"))
		killedAfterFold(t, v, func() { remember(t, v, "a fact whose commit carries the fold") })
		if h, _ := v.Head(); h == "" {
			t.Fatal("no commit")
		}
		storePrompt(t, v, ref, "p2")
		wantTexts(t, v, ref, "p1", "p2")
		if left := spoolFiles(t, v); len(left) != 0 {
			t.Fatalf("the spool still holds %v", left)
		}
		mustVerify(t, v)
	})
	t.Run("failed before writing", func(t *testing.T) {
		v := newVault(t)
		mustSpool(t, v, ref, userMsg("p1"))
		_, err := v.Update(TxOptions{}, func(tx *Tx) error { return errKilled })
		if !errors.Is(err, errKilled) {
			t.Fatal(err)
		}
		if got := texts(t, v, ref); len(got) != 0 {
			t.Fatalf("a failed transaction stored %q", got)
		}
		mustSpool(t, v, ref, userMsg("p2"))
		storePrompt(t, v, ref, "p3")
		wantTexts(t, v, ref, "p1", "p2", "p3")
		if left := spoolFiles(t, v); len(left) != 0 {
			t.Fatalf("the spool still holds %v", left)
		}
	})
}

// Appenders and folds race: sessions spool while transactions fold, and
// every message lands once, in its session's order. This is the race of
// an appender that opened the live file just as a fold claimed it. The
// appenders go on until the folder has run a good number of folds.
func TestSpoolAppendersRaceTheFold(t *testing.T) {
	t.Parallel()
	v := newVault(t)
	const sessions, minEach, minFolds = 4, 40, 40
	var folds atomic.Int64
	var wg sync.WaitGroup
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		folder := transcript.Ref{Agent: "default", Session: "folder"}
		for {
			select {
			case <-done:
				return
			default:
			}
			_, err := v.Update(TxOptions{NoCommit: true, Session: folder.Session}, func(tx *Tx) error {
				_, _, err := tx.AppendText(folder, []transcript.Message{userMsg(fmt.Sprintf("fold %d", folds.Load()))})
				return err
			})
			if err != nil {
				t.Errorf("fold %d: %v", folds.Load(), err)
				return
			}
			folds.Add(1)
		}
	}()
	// nextFold waits for the folder's next transaction, so that a few
	// records go in between folds and appends and claims interleave.
	nextFold := func() {
		for f := folds.Load(); folds.Load() == f && f < minFolds; {
			select {
			case <-stopped:
				return
			default:
				runtime.Gosched()
			}
		}
	}
	sent := make([][]string, sessions)
	for s := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ref := transcript.Ref{Agent: "default", Session: fmt.Sprintf("s%d", s)}
			for i := 0; i < minEach || folds.Load() < minFolds; i++ {
				text := fmt.Sprintf("s%d m%d", s, i)
				if err := v.Spool(ref, []transcript.Message{userMsg(text)}); err != nil {
					t.Errorf("spool: %v", err)
					return
				}
				sent[s] = append(sent[s], text)
				if i%5 == 4 {
					nextFold()
				}
			}
		}()
	}
	wg.Wait()
	close(done)
	<-stopped
	remember(t, v, "the last fold")
	n := 0
	for s := range sessions {
		wantTexts(t, v, transcript.Ref{Agent: "default", Session: fmt.Sprintf("s%d", s)}, sent[s]...)
		n += len(sent[s])
	}
	if left := spoolFiles(t, v); len(left) != 0 {
		t.Fatalf("the spool still holds %v", left)
	}
	t.Logf("%d messages spooled while %d folding transactions ran", n, folds.Load())
}

// A spool folder that is a symlink (a clone can carry one) is neither
// written through nor read.
func TestSpoolRefusesSymlinks(t *testing.T) {
	v := newVault(t)
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(v.Root, SpoolDir)); err != nil {
		t.Fatal(err)
	}
	ref := transcript.Ref{Agent: "default", Session: "s1"}
	if err := v.Spool(ref, []transcript.Message{userMsg("p1")}); err == nil {
		t.Fatal("spooled through a symlink")
	}
	if err := os.MkdirAll(filepath.Join(outside, "default"), 0o700); err != nil {
		t.Fatal(err)
	}
	line, _ := json.Marshal(spoolRecord{Spool: spoolVersion, Agent: "default", Session: "s1",
		Message: transcript.Message{ID: "m_1", Role: transcript.RoleUser, Text: "planted"}})
	if err := os.WriteFile(filepath.Join(outside, "default", "s1.jsonl"), append(line, '\n'), 0o600); err != nil {
		t.Fatal(err)
	}
	remember(t, v, "a write")
	if got := texts(t, v, ref); len(got) != 0 {
		t.Fatalf("folded %q from outside the vault", got)
	}

	// A spool file that is a symlink inside a real folder: not written
	// through, not folded.
	if err := os.Remove(filepath.Join(v.Root, SpoolDir)); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(v.Root, SpoolDir, "default"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "default", "s1.jsonl"), v.spoolPath("default", "s1", 0)); err != nil {
		t.Fatal(err)
	}
	if err := v.Spool(ref, []transcript.Message{userMsg("p2")}); err == nil {
		t.Fatal("spooled through a symlinked spool file")
	}
	remember(t, v, "another write")
	if got := texts(t, v, ref); len(got) != 0 {
		t.Fatalf("folded %q through a symlink", got)
	}
	if data, _ := os.ReadFile(filepath.Join(outside, "default", "s1.jsonl")); string(data) != string(line)+"\n" {
		t.Fatalf("the file outside changed:\n%s", data)
	}
	entries, _ := os.ReadDir(filepath.Join(outside, "default"))
	if len(entries) != 1 || entries[0].Name() != "s1.jsonl" {
		t.Fatalf("the fold changed the folder outside: %v", entries)
	}
}
