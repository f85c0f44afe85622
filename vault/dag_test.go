package vault

import (
	"bytes"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/memvault/memvault/vault/vaulttest"
)

// sideLines seals events as another clone would have written them, chained
// from prev, and returns their lines.
func sideLines(t *testing.T, v *Vault, prev string, texts ...string) ([]byte, string) {
	t.Helper()
	var buf bytes.Buffer
	for _, text := range texts {
		ev := &Event{ID: NewID("e_", time.Now()), TS: FormatTS(time.Now()), Agent: v.Config.Agent, Kind: "fact", Text: text}
		line, err := ev.Seal(prev)
		if err != nil {
			t.Fatal(err)
		}
		buf.Write(line)
		prev = ev.Hash
	}
	return buf.Bytes(), prev
}

func lastSegment(t *testing.T, v *Vault) string {
	t.Helper()
	segs, _, err := ListSegments(v.Root)
	if err != nil || len(segs) == 0 {
		t.Fatalf("segments: %v %v", segs, err)
	}
	return v.Abs(segs[len(segs)-1].Rel())
}

// Two clones' lines of history side by side in one segment, each event
// after its prev, verify; the next write joins the two tips with a
// ledger.merged event that names both, and the ledger has one tip again.
func TestMergedHistoryVerifiesAndIsJoined(t *testing.T) {
	v := newVault(t)
	base := remember(t, v, "base")
	remember(t, v, "from A 1")
	a2 := remember(t, v, "from A 2")
	b, bTip := sideLines(t, v, base.Hash, "from B 1", "from B 2")
	p := lastSegment(t, v)
	data, _ := os.ReadFile(p)
	if err := os.WriteFile(p, append(data, b...), 0o600); err != nil {
		t.Fatal(err)
	}
	mergeAsIs(t, v, p)

	rep := mustVerify(t, v)
	want := []string{a2.Hash, bTip}
	if !slices.Equal(rep.Tips, want) {
		t.Fatalf("open tips %v, want %v", rep.Tips, want)
	}
	after := remember(t, v, "after the merge")
	rep = mustVerify(t, v)
	if len(rep.Tips) != 0 || rep.Tip != after.Hash {
		t.Fatalf("after a write: tips %v, tip %s", rep.Tips, rep.Tip)
	}
	st, _ := v.LoadState()
	if n := len(st.Rows); n != 7 { // five facts, the join, the write
		t.Fatalf("rows after the merge: %d", n)
	}
	lines, _, _ := readSegment(v.Root, mustSegment(t, p))
	join := lines[len(lines)-2].Event
	if join.Kind != KindJoin || after.Prev != join.Hash {
		t.Fatalf("the write did not chain from a join: %+v", join)
	}
	sorted := slices.Sorted(slices.Values(want))
	if tips, _ := JoinTips(join); !slices.Equal(tips, sorted) || join.Prev != sorted[0] {
		t.Fatalf("join names %v, prev %s", tips, join.Prev)
	}
	// The join is made from the tips alone: the same tips, in any order,
	// give the same line.
	j1, _ := v.joinEvent([]string{a2.Hash, bTip})
	j2, _ := v.joinEvent([]string{bTip, a2.Hash})
	l1, _ := j1.Seal(j1.Prev)
	l2, _ := j2.Seal(j2.Prev)
	if !bytes.Equal(l1, l2) || !bytes.Contains(data2(t, p), l1) {
		t.Fatalf("join lines differ:\n%s%s", l1, l2)
	}
}

func data2(t *testing.T, p string) []byte {
	d, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func mustSegment(t *testing.T, p string) Segment {
	t.Helper()
	i := strings.Index(p, "ledger/")
	s, ok := SegmentFromPath(p[i:])
	if !ok {
		t.Fatalf("not a segment: %s", p)
	}
	return s
}

// Verify still catches what a linear chain caught: an event moved before
// the event it follows, and a line whose hash does not match.
func TestDAGVerifyCatchesMovedAndChangedLines(t *testing.T) {
	v := newVault(t)
	remember(t, v, "one")
	remember(t, v, "two")
	remember(t, v, "three")
	p := lastSegment(t, v)
	data := data2(t, p)
	ls := bytes.SplitAfter(data, []byte("\n"))
	moved := slices.Concat(ls[0], ls[2], ls[1])
	if err := os.WriteFile(p, moved, 0o600); err != nil {
		t.Fatal(err)
	}
	rep, _ := v.Verify()
	if rep.OK || !strings.Contains(problemsText(rep), ":2: prev ") {
		t.Fatalf("a moved line verified: %s", problemsText(rep))
	}
}

func problemsText(rep *VerifyReport) string {
	var b strings.Builder
	for _, p := range rep.Problems {
		b.WriteString(p.String() + "\n")
	}
	return b.String()
}

// Committed history is authoritative: a segment whose last lines were cut,
// or whose last line was replaced by a forged one with a recomputed hash,
// verifies as a chain but not against HEAD, and writers refuse it, naming
// the events.
func TestCommittedHistoryIsAuthoritative(t *testing.T) {
	for _, tc := range []struct {
		name, want string
		tamper     func(t *testing.T, v *Vault, data []byte, last *Event) []byte
	}{
		{"truncated tail", "a committed event is missing", func(t *testing.T, v *Vault, data []byte, last *Event) []byte {
			return data[:bytes.LastIndexByte(data[:len(data)-1], '\n')+1]
		}},
		{"forged last line", "differs from the committed one", func(t *testing.T, v *Vault, data []byte, last *Event) []byte {
			cut := data[:bytes.LastIndexByte(data[:len(data)-1], '\n')+1]
			forged := *last
			forged.Text = "a forged fact"
			line, err := forged.Seal(last.Prev)
			if err != nil {
				t.Fatal(err)
			}
			return append(cut, line...)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := newVault(t)
			remember(t, v, "one")
			last := remember(t, v, "two")
			p := lastSegment(t, v)
			vaulttest.EditFile(t, p, tc.tamper(t, v, data2(t, p), last))
			rep, err := v.Verify()
			if err != nil || rep.OK || !strings.Contains(problemsText(rep), tc.want) || !strings.Contains(problemsText(rep), last.ID) {
				t.Fatalf("verify: %v\n%s", err, problemsText(rep))
			}
			head, _ := v.Head()
			_, err = v.Update(TxOptions{}, func(tx *Tx) error { _, err := queueRow(tx, "fact", "three"); return err })
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), last.ID) {
				t.Fatalf("a writer accepted the %s: %v", tc.name, err)
			}
			if h, _ := v.Head(); h != head {
				t.Fatal("HEAD moved")
			}
		})
	}
}

// A git merge in progress refuses structured writes until it is
// concluded; it is asked afresh every time, never saved with a failed
// check, and a merge whose commit is made (git's post-merge hook runs
// before git removes MERGE_HEAD) is over.
func TestMergeInProgressRefusesUntilConcluded(t *testing.T) {
	v := newVault(t)
	remember(t, v, "one")
	parent, _ := v.Head()
	remember(t, v, "two")
	other, _ := v.Head()
	remember(t, v, "three")
	mergeHead := v.Root + "/.git/MERGE_HEAD"
	write := func(text string) error {
		_, err := v.Update(TxOptions{}, func(tx *Tx) error { _, err := queueRow(tx, "fact", text); return err })
		return err
	}
	if err := os.WriteFile(mergeHead, []byte(parent+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := write("during a merge"); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "git merge is in progress") {
		t.Fatalf("a write during a merge: %v", err)
	}
	if err := captureOne(v, "a prompt during the merge"); err != nil {
		t.Fatalf("capture during a merge: %v", err)
	}
	// The merge commit is made: HEAD's parent is MERGE_HEAD.
	if err := os.WriteFile(mergeHead, []byte(other+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	remember(t, v, "in the post-merge hook")
	os.Remove(mergeHead)
	remember(t, v, "after the merge")
	mustVerify(t, v)
}
