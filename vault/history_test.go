package vault

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The ledger's committed history only grows (committed.go, holdHistory):
// each test forges it as an attacker with a shell would, with real git and
// `git commit --no-verify`, and expects verify and the next write to name
// the forgery, and `git revert` to make the vault sound again.

func gitIn(t *testing.T, v *Vault, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", v.Root, "-c", "user.name=p", "-c", "user.email=p@x"}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// mergeAsIs commits the file at path as a merge: its tree is the work tree
// with the file staged, its second parent a commit of that same tree, as a
// clone whose ledger holds the file's other lines would have made it.
func mergeAsIs(t *testing.T, v *Vault, path string) {
	t.Helper()
	rel, _ := filepath.Rel(v.Root, path)
	gitIn(t, v, "add", "--", rel)
	tree := gitIn(t, v, "write-tree")
	side := gitIn(t, v, "commit-tree", tree, "-p", "HEAD", "-m", "the other clone")
	merge := gitIn(t, v, "commit-tree", tree, "-p", "HEAD", "-p", side, "-m", "merge")
	gitIn(t, v, "update-ref", "HEAD", merge)
}

// forge rewrites the last segment with edit, and commits it with
// --no-verify (the vault's pre-commit hook would refuse it).
func forge(t *testing.T, v *Vault, edit func([]byte) []byte) string {
	t.Helper()
	p := lastSegment(t, v)
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, edit(data), 0o600); err != nil {
		t.Fatal(err)
	}
	rel, _ := filepath.Rel(v.Root, p)
	gitIn(t, v, "add", "--", rel)
	gitIn(t, v, "commit", "--no-verify", "-q", "-m", "forged")
	return gitIn(t, v, "rev-parse", "HEAD")
}

// resealed is a segment with the event that says old changed to say new,
// and it and every event after it sealed again, so the chain is sound.
func resealed(t *testing.T, data []byte, old, new string) []byte {
	t.Helper()
	var out bytes.Buffer
	prev := ""
	changed := false
	for _, raw := range bytes.SplitAfter(data, []byte("\n")) {
		if len(raw) == 0 {
			continue
		}
		ev, _, err := ParseLine(bytes.TrimSuffix(raw, []byte("\n")))
		if err != nil {
			t.Fatal(err)
		}
		if ev.Text == old {
			ev.Text, changed = new, true
		}
		if !changed {
			out.Write(raw)
			prev = ev.Hash
			continue
		}
		line, err := ev.Seal(prev)
		if err != nil {
			t.Fatal(err)
		}
		out.Write(line)
		prev = ev.Hash
	}
	return out.Bytes()
}

// expectCaught checks that verify and the next write both name the
// forgery with want, and that a git revert of the forged commit makes the
// vault verify and write again.
func expectCaught(t *testing.T, v *Vault, forged, want string) {
	t.Helper()
	rep, err := v.Verify()
	if err != nil {
		t.Fatal(err)
	}
	if rep.OK || !strings.Contains(rep.Problems[0].String(), want) || !strings.Contains(rep.Problems[0].String(), forged[:12]) {
		t.Fatalf("verify: ok=%v problems %v, want one naming commit %s and %q", rep.OK, rep.Problems, forged[:12], want)
	}
	if _, err := v.Update(TxOptions{}, func(tx *Tx) error { _, err := queueRow(tx, "fact", "on top"); return err }); err == nil ||
		!strings.Contains(err.Error(), "git revert "+forged[:12]) {
		t.Fatalf("a write on the forged history: %v", err)
	}
	gitIn(t, v, "revert", "--no-edit", forged)
	mustVerify(t, v)
	remember(t, v, "after the revert")
	mustVerify(t, v)
}

// Item 8 of issue 33: a committed event changed, every hash after it
// recomputed, committed with --no-verify.
func TestHistoryRewriteIsCaught(t *testing.T) {
	v := newVault(t)
	remember(t, v, "the deploy key rotates monthly")
	remember(t, v, "second")
	forged := forge(t, v, func(b []byte) []byte {
		return resealed(t, b, "the deploy key rotates monthly", "the deploy key never rotates")
	})
	expectCaught(t, v, forged, "rewrote committed history")
}

// Item 8 too: a committed event deleted, the chain after it re-sealed.
func TestHistoryDeletionIsCaught(t *testing.T) {
	v := newVault(t)
	first := remember(t, v, "first")
	second := remember(t, v, "drop me")
	third := remember(t, v, "third")
	forged := forge(t, v, func(b []byte) []byte {
		var out bytes.Buffer
		for _, raw := range bytes.SplitAfter(b, []byte("\n")) {
			if len(raw) > 0 && !bytes.Contains(raw, []byte(second.ID)) && !bytes.Contains(raw, []byte(third.ID)) {
				out.Write(raw)
			}
		}
		ev := *third
		line, err := ev.Seal(first.Hash)
		if err != nil {
			t.Fatal(err)
		}
		out.Write(line)
		return out.Bytes()
	})
	expectCaught(t, v, forged, "committed event is missing")
}

// Item 10: a forged event as a new branch of the DAG (a valid hash, prev
// naming a real event that already has a successor), committed with
// --no-verify, would become current after the next write's join.
func TestForgedBranchIsCaught(t *testing.T) {
	v := newVault(t)
	base := remember(t, v, "base")
	remember(t, v, "after base")
	forged := forge(t, v, func(b []byte) []byte {
		side, _ := sideLines(t, v, base.Hash, "the admin password is public")
		return append(b, side...)
	})
	expectCaught(t, v, forged, "new branch of the ledger")
}

// Item 9: events appended by hand that the policy refuses: a constraint
// from control, a violation no policy check wrote. Uncommitted, the next
// write refuses to build on them; committed with --no-verify, verify names
// the commit.
func TestForbiddenEventsAppendedByHandAreCaught(t *testing.T) {
	for _, tc := range []struct{ name, kind, source, data string }{
		{"constraint from control", "constraint", SourceControl, ""},
		{"forged violation", KindViolation, SourcePolicy, `{"kind":"fact","source":"cli"}`},
		{"violation from cli", KindViolation, SourceCLI, `{"kind":"constraint","source":"mcp"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := newVault(t)
			if _, err := v.Update(TxOptions{}, func(tx *Tx) error { _, err := tx.SetPolicy(DefaultRules()); return err }); err != nil {
				t.Fatal(err)
			}
			tip := remember(t, v, "base")
			ev := &Event{ID: NewID("e_", time.Now()), TS: FormatTS(time.Now()), Agent: v.Config.Agent,
				Kind: tc.kind, Source: tc.source, Text: "never deploy on fridays"}
			if tc.data != "" {
				ev.Data = []byte(tc.data)
			}
			line, err := ev.Seal(tip.Hash)
			if err != nil {
				t.Fatal(err)
			}
			p := lastSegment(t, v)
			data, _ := os.ReadFile(p)
			if err := os.WriteFile(p, append(data, line...), 0o600); err != nil {
				t.Fatal(err)
			}
			rep, err := v.Verify()
			if err != nil || rep.OK {
				t.Fatalf("verify of a hand-appended %s: %v %+v", tc.name, err, rep)
			}
			_, err = v.Update(TxOptions{}, func(tx *Tx) error { _, err := queueRow(tx, "fact", "on top"); return err })
			if err == nil || !strings.Contains(err.Error(), ev.ID) && !strings.Contains(err.Error(), "work tree") {
				t.Fatalf("a write on a hand-appended %s: %v", tc.name, err)
			}
			rel, _ := filepath.Rel(v.Root, p)
			gitIn(t, v, "add", "--", rel)
			gitIn(t, v, "commit", "--no-verify", "-q", "-m", "forged")
			expectCaught(t, v, gitIn(t, v, "rev-parse", "HEAD"), "policy")
		})
	}
}

// A real merge of two clones' lines, a write that joins them, and a pull
// that fast-forwards onto a clone that merged this one: none is a forgery.
func TestMergedHistoryIsNotAForgery(t *testing.T) {
	v := newVault(t)
	base := remember(t, v, "base")
	remember(t, v, "from A")
	b, _ := sideLines(t, v, base.Hash, "from B 1", "from B 2")
	p := lastSegment(t, v)
	data, _ := os.ReadFile(p)
	if err := os.WriteFile(p, append(data, b...), 0o600); err != nil {
		t.Fatal(err)
	}
	mergeAsIs(t, v, p)
	remember(t, v, "after the merge")
	mustVerify(t, v)
}
