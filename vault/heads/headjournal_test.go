package heads

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/testvault"
	"github.com/memvault/memvault/vault/vaulttest"
)

// addUnder adds a line at the end of a section of a head, as a person does.
func addUnder(t *testing.T, v *vault.Vault, head, section, line string) {
	t.Helper()
	p := v.Abs(vault.MustRel(head))
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	// An empty section is its heading alone.
	i := bytes.Index(data, []byte(section+"\n\n## "))
	if i < 0 {
		t.Fatalf("no empty section %q in %s", section, head)
	}
	at := i + len(section) + 1
	data = append(data[:at:at], append([]byte("\n"+line+"\n"), data[at:]...)...)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// clean fails unless each path is what HEAD holds.
func clean(t *testing.T, v *vault.Vault, paths ...string) {
	t.Helper()
	for _, p := range paths {
		if dirty, err := Uncommitted(v, vault.MustRel(p)); err != nil || dirty {
			t.Errorf("%s differs from HEAD (%v)", p, err)
		}
	}
}

// headWithKilledRender makes MEMORY.md with a person's committed edit, then
// a new row, then a refresh killed at step: the state a killed `memvault
// render` leaves. It returns the vault, reopened as the next process would,
// and MEMORY.md as it was before the killed refresh.
func headWithKilledRender(t *testing.T, step string) (*vault.Vault, string) {
	t.Helper()
	v := testvault.New(t)
	rememberIn(t, v, "decision", "", "s1", "use WAL")
	refresh(t, v, "s1")
	addUnder(t, v, vault.MemoryHead, "## Constraints", "- a constraint by hand")
	refresh(t, v, "s1")
	before := readHead(t, v, vault.MemoryHead)
	rememberIn(t, v, "decision", "", "s1", "use a queue")
	testvault.KillAt(t, v, step, func() { refresh(t, v, "s1") })
	if dirty, _ := Uncommitted(v, vault.MustRel(vault.MemoryHead)); !dirty {
		t.Fatal("the killed refresh left MEMORY.md as HEAD has it: nothing to test")
	}
	if v.ReadHeadJournal(vault.MemoryHead) == nil {
		t.Fatal("the killed refresh left no journal record")
	}
	next, err := vault.Open(v.Root)
	if err != nil {
		t.Fatal(err)
	}
	return next, before
}

// A refresh killed after writing MEMORY.md, before recording it: the next
// transaction puts the old bytes back, and the next refresh renders as if
// the killed one never ran: no head.edited for memvault's bytes, no
// conflict, the person's edit kept, everything committed.
func TestKilledRenderIsUndone(t *testing.T) {
	v, before := headWithKilledRender(t, "staged")
	rememberIn(t, v, "fact", "", "s2", "any transaction settles the journal")
	if got := readHead(t, v, vault.MemoryHead); got != before {
		t.Fatalf("MEMORY.md was not put back:\n%s", got)
	}
	if v.ReadHeadJournal(vault.MemoryHead) != nil {
		t.Fatal("the journal record is still there")
	}
	refresh(t, v, "s2")
	n := testvault.Kinds(t, v)
	if n[vault.KindHeadEdited] != 1 || n[vault.KindHeadConflict] != 0 {
		t.Fatalf("head.edited %d (want 1, the person's), head.conflict %d (want 0)", n[vault.KindHeadEdited], n[vault.KindHeadConflict])
	}
	s := readHead(t, v, vault.MemoryHead)
	if !strings.Contains(s, "use a queue") || !strings.Contains(s, "- a constraint by hand") {
		t.Fatalf("lost the render or the hand edit:\n%s", s)
	}
	clean(t, v, vault.MemoryHead, ".rendered/MEMORY.md")
	testvault.MustVerify(t, v)
}

// A refresh killed after recording the write, before its commit: the files
// are right and stay; transactions that are not refreshes leave them, and
// the next refresh commits them as memvault's, not as a person's edit.
func TestKilledRenderAfterSealIsCommitted(t *testing.T) {
	v, _ := headWithKilledRender(t, "sealed")
	after := readHead(t, v, vault.MemoryHead)
	rememberIn(t, v, "fact", "", "s2", "a transaction that is not a refresh")
	if got := readHead(t, v, vault.MemoryHead); got != after {
		t.Fatal("a recorded write was undone")
	}
	rep := refresh(t, v, "s2")
	if rep.Heads[0].HandEdits {
		t.Fatal("memvault's own write was reported as a hand edit")
	}
	n := testvault.Kinds(t, v)
	if n[vault.KindHeadEdited] != 1 || n[vault.KindHeadConflict] != 0 {
		t.Fatalf("head.edited %d (want 1, the person's), head.conflict %d (want 0)", n[vault.KindHeadEdited], n[vault.KindHeadConflict])
	}
	if got := readHead(t, v, vault.MemoryHead); !strings.Contains(got, "use a queue") || !strings.Contains(got, "- a constraint by hand") {
		t.Fatalf("MEMORY.md:\n%s", got)
	}
	clean(t, v, vault.MemoryHead, ".rendered/MEMORY.md")
	if v.ReadHeadJournal(vault.MemoryHead) != nil {
		t.Fatal("the journal record is still there")
	}
	testvault.MustVerify(t, v)
}

// A head torn by a kill inside its in-place rewrite is put back whole.
func TestTornHeadIsPutBack(t *testing.T) {
	v, before := headWithKilledRender(t, "staged")
	w := v.ReadHeadJournal(vault.MemoryHead)
	// The first bytes of the new text over the old: the state a kill
	// between two pages of the write leaves.
	k := 0
	for k < len(w.Before) && k < len(w.After) && w.Before[k] == w.After[k] {
		k++
	}
	k += (len(w.After) - k) / 2
	torn := append(append([]byte(nil), w.After[:k]...), w.Before[min(k, len(w.Before)):]...)
	if bytes.Equal(torn, w.Before) || bytes.Equal(torn, w.After) {
		t.Fatal("the torn state is one of the whole ones")
	}
	if err := os.WriteFile(v.Abs(vault.MustRel(vault.MemoryHead)), torn, 0o600); err != nil {
		t.Fatal(err)
	}
	rememberIn(t, v, "fact", "", "s2", "settle")
	if got := readHead(t, v, vault.MemoryHead); got != before {
		t.Fatalf("the torn head was not put back:\n%s", got)
	}
	refresh(t, v, "s2")
	if n := testvault.Kinds(t, v); n[vault.KindHeadEdited] != 1 || n[vault.KindHeadConflict] != 0 {
		t.Fatalf("head.edited %d, head.conflict %d", n[vault.KindHeadEdited], n[vault.KindHeadConflict])
	}
	clean(t, v, vault.MemoryHead, ".rendered/MEMORY.md")
}

// A person who edits the head a killed refresh left, before memvault runs
// again, keeps their edit; it is committed as theirs and merges without a
// conflict, since the .rendered/ copy the kill left is the base their file
// descends from.
func TestEditAfterAKilledRenderIsKept(t *testing.T) {
	v, _ := headWithKilledRender(t, "staged")
	addUnder(t, v, vault.MemoryHead, "## Blockers", "- a blocker by hand, after the kill")
	refresh(t, v, "s2")
	n := testvault.Kinds(t, v)
	if n[vault.KindHeadEdited] != 2 || n[vault.KindHeadConflict] != 0 {
		t.Fatalf("head.edited %d (want 2, both the person's), head.conflict %d (want 0)", n[vault.KindHeadEdited], n[vault.KindHeadConflict])
	}
	s := readHead(t, v, vault.MemoryHead)
	for _, want := range []string{"use a queue", "- a constraint by hand", "- a blocker by hand, after the kill"} {
		if !strings.Contains(s, want) {
			t.Errorf("MEMORY.md lacks %q:\n%s", want, s)
		}
	}
	clean(t, v, vault.MemoryHead, ".rendered/MEMORY.md")
}

func TestTornWrite(t *testing.T) {
	for _, c := range []struct {
		cur, before, after string
		want               bool
	}{
		{"NEW TEXT", "old", "NEW TEXT", true},
		{"NEWt", "oldt", "NEW TEXT", true},                   // three bytes of the new over the old
		{"NEW TE", "old", "NEW TEXT", true},                  // longer than the old, a prefix of the new
		{"NEW TEXT, old", "NEW TEXT, old", "NEW TEXT", true}, // written, not cut yet
		{"NE", "old text", "NEW TEXT", false},                // shorter than the old: not a state the write passes
		{"NEW xx", "old", "NEW TEXT", false},                 // someone else's bytes
		{"old", "old", "NEW TEXT", true},                     // nothing written yet
	} {
		if got := vault.TornWrite([]byte(c.cur), []byte(c.before), []byte(c.after)); got != c.want {
			t.Errorf("tornWrite(%q, %q, %q) = %v, want %v", c.cur, c.before, c.after, got, c.want)
		}
	}
}

// A killed refresh's record whose files someone committed since (here a
// person, with git) goes at the next refresh, which has nothing to commit:
// it does not keep that head on every refresh's list.
func TestSealedRecordGoesWhenHEADHasTheFiles(t *testing.T) {
	if !vaulttest.HasGit() {
		t.Skip("the files are committed with the git CLI")
	}
	v, _ := headWithKilledRender(t, "sealed")
	g := vaulttest.Git{Dir: v.Root, Env: vaulttest.Sandbox(t.TempDir())}
	g.Run(t, "add", "-A", "--", "MEMORY.md", ".rendered", "ledger")
	g.Run(t, "commit", "-q", "-m", "a person commits what the kill left")
	refresh(t, v, "s2")
	if v.ReadHeadJournal(vault.MemoryHead) != nil {
		t.Fatal("the journal record is still there")
	}
	if n := testvault.Kinds(t, v); n[vault.KindHeadEdited] != 1 || n[vault.KindHeadConflict] != 0 {
		t.Fatalf("head.edited %d (want 1, the person's), head.conflict %d", n[vault.KindHeadEdited], n[vault.KindHeadConflict])
	}
	clean(t, v, vault.MemoryHead, ".rendered/MEMORY.md")
}

// A head left empty (by an editor that truncated it and has not written
// yet, or by hand) is left as it is: merged, it would read as a person
// deleting every section, and written over, the editor's bytes could go
// nowhere. Deleted, it is rendered again.
func TestEmptyHeadIsLeftAlone(t *testing.T) {
	v := testvault.New(t)
	rememberIn(t, v, "decision", "", "s1", "use WAL")
	refresh(t, v, "s1")
	p := v.Abs(vault.MustRel(vault.MemoryHead))
	if err := os.WriteFile(p, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	rememberIn(t, v, "decision", "", "s1", "use a queue")
	rep := refresh(t, v, "s1")
	if got := status(rep, vault.MemoryHead); got != "empty" {
		t.Fatalf("status %q, want empty", got)
	}
	if s := readHead(t, v, vault.MemoryHead); s != "" {
		t.Fatalf("MEMORY.md was written:\n%s", s)
	}
	if n := testvault.Kinds(t, v); n[vault.KindHeadEdited] != 0 || n[vault.KindHeadConflict] != 0 {
		t.Fatalf("head.edited %d, head.conflict %d", n[vault.KindHeadEdited], n[vault.KindHeadConflict])
	}
	os.Remove(p)
	rep = refresh(t, v, "s1")
	if got := status(rep, vault.MemoryHead); got != "recreated" {
		t.Fatalf("status %q, want recreated", got)
	}
	if s := readHead(t, v, vault.MemoryHead); !strings.Contains(s, "use a queue") {
		t.Fatalf("MEMORY.md:\n%s", s)
	}
	clean(t, v, vault.MemoryHead)
}
