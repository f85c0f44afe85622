package repair

import (
	"bytes"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/memory"
	"github.com/memvault/memvault/vault/testvault"
	"github.com/memvault/memvault/vault/vaulttest"
)

func factIDs(t *testing.T, v *vault.Vault) []string {
	t.Helper()
	st, err := v.LoadState()
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range st.Rows {
		if r.Kind == "fact" {
			ids = append(ids, r.ID)
		}
	}
	return ids
}

// A work tree with a committed line cut, a line moved before the event it
// follows and a second copy of a line comes out as HEAD has it: every event
// once, each after its prev, verified, the old segment kept.
func TestRepairRestoresReordersAndDedupes(t *testing.T) {
	v := testvault.New(t)
	var want []string
	for _, text := range []string{"one", "two", "three", "four"} {
		want = append(want, testvault.Remember(t, v, text).ID)
	}
	p := lastSegment(t, v)
	ls := bytes.SplitAfter(readFile(t, p), []byte("\n"))
	broken := slices.Concat(ls[0], ls[0], ls[3], ls[2]) // two cut, four before three, one twice
	vaulttest.EditFile(t, p, broken)
	if rep, _ := v.Verify(); rep.OK {
		t.Fatal("the broken ledger verified")
	}
	rep, err := Run(v, false)
	if err != nil {
		t.Fatal(err)
	}
	// HEAD's lines come first, in HEAD's order: the cut line is back, and
	// the moved and doubled ones are where HEAD has them.
	if len(rep.Restored) != 1 || rep.Restored[0] != want[1] || rep.Commit == "" {
		t.Fatalf("report: %+v", rep)
	}
	testvault.MustVerify(t, v)
	if got := factIDs(t, v); !slices.Equal(got, want) {
		t.Fatalf("facts after repair %v, want %v", got, want)
	}
	if _, err := os.Stat(v.Root + "/" + rep.Kept + "/" + mustSegment(t, p).String()); err != nil {
		t.Fatalf("the old segment was not kept: %v", err)
	}
	testvault.Remember(t, v, "five")
	testvault.MustVerify(t, v)
}

// A line changed by hand and committed with --force fails its hash in HEAD
// too: repair re-seals it as it now reads and re-chains every event after
// it, ids unchanged, so links still hold.
func TestRepairRechainsAForcedDamage(t *testing.T) {
	v := testvault.New(t)
	first := testvault.Remember(t, v, "one")
	testvault.Remember(t, v, "two")
	tamperOne(t, v)
	if _, err := v.Update(vault.TxOptions{Force: true}, func(tx *vault.Tx) error {
		_, err := memory.Remember(tx, memory.Input{Text: "three", Links: []string{first.ID}})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	before := factIDs(t, v)
	rep, err := Run(v, false)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rep.Changed, []string{first.ID}) || rep.Rechained < 3 {
		t.Fatalf("report: %+v", rep)
	}
	testvault.MustVerify(t, v)
	if got := factIDs(t, v); !slices.Equal(got, before) {
		t.Fatalf("ids changed: %v, want %v", got, before)
	}
	st, _ := v.LoadState()
	if st.Rows[0].Text != "One" {
		t.Fatalf("the event's content changed: %q", st.Rows[0].Text)
	}
	if again, err := Run(v, false); err != nil || !again.Nothing {
		t.Fatalf("a second repair: %+v %v", again, err)
	}
}

// The same damage committed (git commit --no-verify): HEAD cannot help, so
// the second copy is dropped, the moved line goes after its prev, and the
// event whose prev was cut is re-chained after the event before it.
func TestRepairMovesDedupesAndRechainsCommittedDamage(t *testing.T) {
	v := testvault.New(t)
	var ids []string
	for _, text := range []string{"one", "two", "three", "four"} {
		ids = append(ids, testvault.Remember(t, v, text).ID)
	}
	p := lastSegment(t, v)
	ls := bytes.SplitAfter(readFile(t, p), []byte("\n"))
	vaulttest.EditFile(t, p, slices.Concat(ls[0], ls[0], ls[3], ls[2]))
	testvault.CommitAsIs(t, v, p)
	rep, err := Run(v, false)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Duplicates != 1 || rep.Moved == 0 || !slices.Equal(rep.Changed, []string{ids[2]}) {
		t.Fatalf("report: %+v", rep)
	}
	testvault.MustVerify(t, v)
	if got, want := factIDs(t, v), []string{ids[0], ids[2], ids[3]}; !slices.Equal(got, want) {
		t.Fatalf("facts %v, want %v", got, want)
	}
}

// lastSegment is the path on disk of the ledger's last segment.
func lastSegment(t *testing.T, v *vault.Vault) string {
	t.Helper()
	segs, _, err := vault.ListSegments(v.Root)
	if err != nil || len(segs) == 0 {
		t.Fatalf("segments: %v %v", segs, err)
	}
	return v.Abs(segs[len(segs)-1].Rel())
}

// mustSegment is the segment at path p, below a vault's root.
func mustSegment(t *testing.T, p string) vault.Segment {
	t.Helper()
	i := strings.Index(p, "ledger/")
	s, ok := vault.SegmentFromPath(p[i:])
	if !ok {
		t.Fatalf("not a segment: %s", p)
	}
	return s
}

func readFile(t *testing.T, p string) []byte {
	t.Helper()
	d, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// tamperOne changes, on disk only, the text of the memory "one" in the
// first segment, so that its line no longer hashes.
func tamperOne(t *testing.T, v *vault.Vault) {
	t.Helper()
	segs, _, err := vault.ListSegments(v.Root)
	if err != nil || len(segs) == 0 {
		t.Fatalf("segments: %v %v", segs, err)
	}
	p := v.Abs(segs[0].Rel())
	good := readFile(t, p)
	vaulttest.EditFile(t, p, bytes.Replace(good, []byte(`"text":"one"`), []byte(`"text":"One"`), 1))
}
