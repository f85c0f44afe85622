package vault

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memvault/memvault/vault/transcript"
	"github.com/memvault/memvault/vault/vaulttest"
)

// captureOne appends one prompt to a session's transcript without a commit,
// as the prompt hook does.
func captureOne(v *Vault, text string) error {
	_, err := v.Update(TxOptions{Session: "s1", NoCommit: true}, func(tx *Tx) error {
		_, _, err := tx.AppendMessages(transcript.Ref{Agent: v.Config.Agent, Session: "s1"},
			[]transcript.Message{{Role: "user", Text: text}})
		return err
	})
	return err
}

// tamperOne changes the text of the event "one" in the first segment by
// hand, keeping the file's size (a later mtime), and returns the segment's
// path and the bytes it held.
func tamperOne(t *testing.T, v *Vault) (string, []byte) {
	t.Helper()
	segs, _, _ := ListSegments(v.Root)
	p := v.Abs(segs[0].Rel())
	good, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	vaulttest.EditFile(t, p, bytes.Replace(good, []byte(`"text":"one"`), []byte(`"text":"One"`), 1))
	return p, good
}

// A ledger that fails the writers' check refuses events but still takes
// transcript lines: capture never stops, and Health says why.
func TestCaptureSurvivesBrokenLedger(t *testing.T) {
	v := newVault(t)
	remember(t, v, "one")
	remember(t, v, "two")
	tamperOne(t, v)
	if h, err := v.Health(); err != nil || h.OK() || h.Summary() == "" {
		t.Fatalf("health of a tampered ledger: %+v %v", h, err)
	}
	if err := captureOne(v, "still heard"); err != nil {
		t.Fatalf("a prompt was refused on a broken ledger: %v", err)
	}
	_, err := v.Update(TxOptions{}, func(tx *Tx) error { _, err := queueRow(tx, "fact", "three"); return err })
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("an event was accepted on a broken ledger: %v", err)
	}
	var got []string
	if err := transcript.Read(v.Files(), transcript.Ref{Agent: v.Config.Agent, Session: "s1"}, 1, 0, func(m transcript.Stored) error {
		got = append(got, m.Text)
		return nil
	}); err != nil || len(got) != 1 || got[0] != "still heard" {
		t.Fatalf("transcript after capture: %q %v", got, err)
	}
}

// A memvault.toml that does not parse stops Open, but not a vault opened
// for capture: it appends transcript lines and refuses everything else
// with the configuration's error.
func TestCaptureSurvivesBrokenConfig(t *testing.T) {
	v := newVault(t)
	remember(t, v, "one")
	if err := os.WriteFile(filepath.Join(v.Root, ConfigFile), []byte("agent = \"x\n[broken"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(v.Root); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Open of a broken config: %v", err)
	}
	cv, err := OpenForCapture(v.Root)
	if err != nil {
		t.Fatal(err)
	}
	if h, _ := cv.Health(); h.OK() || h.Config == nil {
		t.Fatalf("health: %+v", h)
	}
	if err := captureOne(cv, "heard anyway"); err != nil {
		t.Fatalf("capture with a broken config: %v", err)
	}
	head, _ := cv.Head()
	_, err = cv.Update(TxOptions{}, func(tx *Tx) error { _, err := queueRow(tx, "fact", "two"); return err })
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("a structured write with a broken config: %v", err)
	}
	if h, _ := cv.Head(); h != head {
		t.Fatal("a refused write moved HEAD")
	}
}

// A failed check is saved like a clean one: while the segments and HEAD's
// ledger stay as they were, a vault in need of repair answers each
// transaction from the saved check (one stat per segment), and any change
// to a segment checks again, even one that puts the mtime back.
func TestFailedCheckIsSaved(t *testing.T) {
	v := newVault(t)
	remember(t, v, "one")
	remember(t, v, "two")
	p, good := tamperOne(t, v)
	info, _ := os.Stat(p)
	if err := captureOne(v, "a prompt"); err != nil {
		t.Fatal(err)
	}
	if c := v.loadStamps(); len(c.problems) == 0 || c.tree == "" {
		t.Fatalf("the failed check was not saved: %+v", c)
	}
	if h, err := v.Health(); err != nil || h.OK() || h.Chain[0] != v.loadStamps().problems[0] {
		t.Fatalf("health from the saved failure: %+v %v", h, err)
	}
	// The good bytes back, under the bad file's mtime: the ctime moved
	// (nothing sets it back), so the next writer reads the file again and
	// finds it good.
	if err := os.WriteFile(p, good, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, info.ModTime(), info.ModTime()); err != nil {
		t.Fatal(err)
	}
	_, err := v.Update(TxOptions{}, func(tx *Tx) error { _, err := queueRow(tx, "fact", "three"); return err })
	if err != nil {
		t.Fatalf("the repaired segment was not read again: %v", err)
	}
	mustVerify(t, v)
}

// A merge in progress is not a ledger to repair: Health says how to
// conclude it.
func TestHealthOfAMergeInProgress(t *testing.T) {
	v := newVault(t)
	remember(t, v, "one")
	parent, _ := v.Head()
	remember(t, v, "two")
	remember(t, v, "three")
	if err := os.WriteFile(filepath.Join(v.Root, ".git", "MERGE_HEAD"), []byte(parent+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	h, err := v.Health()
	if err != nil || h.OK() || !strings.Contains(h.Summary(), "git merge is in progress") || strings.Contains(h.Summary(), "needs repair") {
		t.Fatalf("health: %q %v", h.Summary(), err)
	}
}
