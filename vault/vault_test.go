package vault

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memvault/memvault/vault/gitrepo"
	"github.com/memvault/memvault/vault/vaulttest"
)

func newVault(t *testing.T) *Vault {
	t.Helper()
	v, created, err := Init(filepath.Join(t.TempDir(), DirName))
	if err != nil || !created {
		t.Fatalf("init: created=%v err=%v", created, err)
	}
	return v
}

func remember(t *testing.T, v *Vault, text string) *Event {
	t.Helper()
	var ev *Event
	_, err := v.Update(TxOptions{}, func(tx *Tx) error {
		var err error
		ev, err = queueRow(tx, "fact", text)
		return err
	})
	if err != nil {
		t.Fatalf("remember %q: %v", text, err)
	}
	return ev
}

// queueRow queues a row of kind the way vault/memory's verbs do once they
// have checked their input: the engine's own tests cannot import a package
// built on the engine, and they write only valid text.
func queueRow(tx *Tx, kind, text string) (*Event, error) {
	return tx.Append(&Event{Kind: kind, Text: text, Source: tx.Source()}), nil
}

// queueCorrection queues a correction of kind (retract, supersede,
// commitment.close) of the row id, with the thread, link and data
// vault/memory's verbs give it.
func queueCorrection(tx *Tx, kind, id, text string) (*Event, error) {
	st, err := tx.State()
	if err != nil {
		return nil, err
	}
	r := st.Get(id)
	if r == nil {
		return nil, fmt.Errorf("%s %s: no such event", kind, id)
	}
	ev := &Event{Kind: kind, Thread: r.Thread, Text: text, Links: []string{id}, Source: tx.Source()}
	if kind == "supersede" {
		ev.Data, _ = json.Marshal(map[string]string{"replaces_kind": r.EffectiveKind()})
	}
	return tx.Append(ev), nil
}

func mustVerify(t *testing.T, v *Vault) *VerifyReport {
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

func TestSealedLineIsCanonicalAndVerifies(t *testing.T) {
	ev := &Event{ID: "e_x", TS: "2026-11-22T10:00:00.000Z", Agent: "a", Kind: "fact", Text: "x < y & z",
		Data: []byte(`{"b":2,"a":1}`)}
	line, err := ev.Seal("prevhash")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasSuffix(line, []byte("\n")) || bytes.Count(line, []byte("\n")) != 1 {
		t.Fatalf("a sealed event is one line: %q", line)
	}
	if !bytes.Contains(line, []byte(`"data":{"a":1,"b":2}`)) || !bytes.Contains(line, []byte("x < y & z")) {
		t.Fatalf("not canonical: %s", line)
	}
	got, ok, err := ParseLine(bytes.TrimSuffix(line, []byte("\n")))
	if err != nil || !ok || got.Prev != "prevhash" || got.Hash != ev.Hash {
		t.Fatalf("parse back: ok=%v err=%v ev=%+v", ok, err, got)
	}
	// Any change to the content breaks the hash, even one the JSON decoder
	// would consider equivalent in meaning, like a different number literal.
	for _, edit := range [][2]string{{`"x < y`, `"X < y`}, {`"a":1`, `"a":1.0`}, {`"prev":"prevhash"`, `"prev":"other"`}} {
		bad := bytes.Replace(line, []byte(edit[0]), []byte(edit[1]), 1)
		if _, ok, _ := ParseLine(bytes.TrimSuffix(bad, []byte("\n"))); ok {
			t.Errorf("edit %q → %q still verifies", edit[0], edit[1])
		}
	}
}

func TestIDs(t *testing.T) {
	now := time.Date(2026, 11, 22, 10, 0, 0, 123e6, time.UTC)
	seen := map[string]bool{}
	prev := ""
	for i := range 10000 {
		id := NewID("e_", now.Add(time.Duration(i)*time.Millisecond))
		if len(id) != 28 || !strings.HasPrefix(id, "e_") {
			t.Fatalf("bad id %q", id)
		}
		if seen[id] {
			t.Fatalf("duplicate id %q", id)
		}
		seen[id] = true
		if id <= prev {
			t.Fatalf("ids not time-sorted: %q after %q", id, prev)
		}
		prev = id
		if got, ok := idTime(id); !ok || !got.Equal(now.Add(time.Duration(i)*time.Millisecond)) {
			t.Fatalf("idTime(%q) = %v, %v", id, got, ok)
		}
	}
}

func TestParseThreadKeys(t *testing.T) {
	for _, bad := range []string{"shop", "Project:shop", "project:", ":shop", "project:../x", "project:a/b", "a:b:c", "project:.x"} {
		if _, err := ParseThread(bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("ParseThread(%q) = %v, want ErrInvalid", bad, err)
		}
	}
	th, err := ParseThread("person:alice.b")
	if err != nil || th.HeadPath().String() != "threads/person/alice.b.md" {
		t.Fatalf("ParseThread: %v %v", th, err)
	}
}

func TestSegmentOrderAndNames(t *testing.T) {
	names := []string{"22.jsonl", "22-1.jsonl", "22-2.jsonl", "22-10.jsonl", "23.jsonl"}
	var segs []Segment
	for _, n := range names {
		s, ok := ParseSegmentName(2026, 11, n)
		if !ok {
			t.Fatalf("parse %q", n)
		}
		if got := s.String(); got != "ledger/2026/11/"+n {
			t.Fatalf("round trip %q → %q", n, got)
		}
		segs = append(segs, s)
	}
	for i := 1; i < len(segs); i++ {
		if !segs[i-1].Less(segs[i]) {
			t.Fatalf("%v should sort before %v", segs[i-1], segs[i])
		}
	}
	for _, bad := range []string{"2.jsonl", "22-0.jsonl", "22-01.jsonl", "32.jsonl", "22.json", "22-x.jsonl"} {
		if _, ok := ParseSegmentName(2026, 11, bad); ok {
			t.Errorf("%q accepted as a segment", bad)
		}
	}
}

// Segments close by size and by day, and the chain runs across them.
func TestSegmentsRollBySizeAndDay(t *testing.T) {
	v := newVault(t)
	v.Config.Ledger.SegmentBytes = 2048
	day := time.Date(2026, 11, 22, 23, 30, 0, 0, time.UTC)
	v.Clock = func() time.Time { day = day.Add(2 * time.Minute); return day }
	for i := range 40 {
		remember(t, v, fmt.Sprintf("event number %d with some padding text to fill segments", i))
	}
	segs, strays, err := ListSegments(v.Root)
	if err != nil || len(strays) > 0 {
		t.Fatal(err, strays)
	}
	if len(segs) < 4 {
		t.Fatalf("want several segments, got %v", segs)
	}
	var days = map[int]bool{}
	for i, s := range segs {
		days[s.D] = true
		info, err := os.Stat(v.Abs(s.Rel()))
		if err != nil {
			t.Fatal(err)
		}
		// A segment is closed once it reaches the limit: only the last line
		// may cross it.
		if i < len(segs)-1 && info.Size() > v.Config.Ledger.SegmentBytes+512 {
			t.Errorf("%v is %d bytes", s, info.Size())
		}
	}
	if !days[22] || !days[23] {
		t.Fatalf("the day change should open a new segment: %v", segs)
	}
	rep := mustVerify(t, v)
	if rep.Events != 40 || rep.Segments != len(segs) {
		t.Fatalf("verify saw %d events in %d segments", rep.Events, rep.Segments)
	}
	st, err := v.LoadState()
	if err != nil || len(st.Rows) != 40 {
		t.Fatalf("state: %d rows, %v", len(st.Rows), err)
	}
}

// A clock that goes backwards must not put events into an earlier segment,
// where they would break the chain order.
func TestClockGoingBackwards(t *testing.T) {
	v := newVault(t)
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	v.Clock = func() time.Time { return now }
	remember(t, v, "today")
	now = now.AddDate(0, 0, -3)
	remember(t, v, "three days ago, says the clock")
	segs, _, _ := ListSegments(v.Root)
	if len(segs) != 1 {
		t.Fatalf("segments: %v", segs)
	}
	mustVerify(t, v)
}

// A crash after the event's bytes but before its newline leaves a sound
// event: the next writer completes the line instead of dropping it.
func TestTornLineWithWholeEventIsCompleted(t *testing.T) {
	v := newVault(t)
	remember(t, v, "one")
	segs, _, _ := ListSegments(v.Root)
	p := v.Abs(segs[0].Rel())
	before, _ := os.ReadFile(p)
	ev2 := remember(t, v, "two")
	after, _ := os.ReadFile(p)
	if err := os.WriteFile(p, after[:len(after)-1], 0o600); err != nil { // drop the final newline
		t.Fatal(err)
	}
	// Readers do not see the unterminated event.
	if st, _ := v.LoadState(); len(st.Rows) != 1 {
		t.Fatalf("readers saw %d rows", len(st.Rows))
	}
	remember(t, v, "three")
	st, _ := v.LoadState()
	if len(st.Rows) != 3 || st.Rows[1].ID != ev2.ID {
		t.Fatalf("the completed event was lost: %d rows", len(st.Rows))
	}
	mustVerify(t, v)
	if !bytes.HasPrefix(after, before) {
		t.Fatal("appends rewrote earlier bytes")
	}
}

// The write-time check catches a hand edit even when the file keeps its size.
func TestWritersRefuseTamperedLedger(t *testing.T) {
	v := newVault(t)
	remember(t, v, "one")
	remember(t, v, "two")
	segs, _, _ := ListSegments(v.Root)
	p := v.Abs(segs[0].Rel())
	data, _ := os.ReadFile(p)
	tampered := bytes.Replace(data, []byte(`"text":"one"`), []byte(`"text":"One"`), 1)
	vaulttest.EditFile(t, p, tampered) // the same size, a new mtime
	head, _ := v.Head()
	_, err := v.Update(TxOptions{}, func(tx *Tx) error { _, err := queueRow(tx, "fact", "three"); return err })
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), ":1: hash mismatch") {
		t.Fatalf("want a corrupt-ledger refusal naming line 1, got %v", err)
	}
	if h, _ := v.Head(); h != head {
		t.Fatal("a refused write moved HEAD")
	}
	if now, _ := os.ReadFile(p); !bytes.Equal(now, tampered) {
		t.Fatal("a refused write changed the ledger")
	}
	_, err = v.Update(TxOptions{Force: true}, func(tx *Tx) error { _, err := queueRow(tx, "fact", "forced"); return err })
	if err != nil {
		t.Fatalf("--force: %v", err)
	}
	rep, _ := v.Verify()
	if rep.OK || len(rep.Problems) != 1 || rep.Problems[0].Line != 1 {
		t.Fatalf("verify after force: %+v", rep.Problems)
	}
}

func TestUpdateRollsBackWhenFnFails(t *testing.T) {
	v := newVault(t)
	remember(t, v, "one")
	head, _ := v.Head()
	boom := errors.New("boom")
	_, err := v.Update(TxOptions{}, func(tx *Tx) error {
		tx.Append(&Event{Kind: "fact", Text: "half"})
		tx.WriteFile(MustRel("threads", "x.md"), []byte("x"))
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatal(err)
	}
	if h, _ := v.Head(); h != head {
		t.Fatal("HEAD moved")
	}
	if _, err := os.Stat(filepath.Join(v.Root, "threads", "x.md")); err == nil {
		t.Fatal("file of a failed transaction was written")
	}
	if st, _ := v.LoadState(); len(st.Rows) != 1 {
		t.Fatal("event of a failed transaction was written")
	}
}

// The commit builds on a commit a person made with git after memvault read
// the branch: the person's commit stays in history.
func TestCommitRebuildsOnAMovedBranch(t *testing.T) {
	if !vaulttest.HasGit() {
		t.Skip("needs git")
	}
	v := newVault(t)
	remember(t, v, "one")
	git := func(args ...string) {
		t.Helper()
		vaulttest.Git{Dir: v.Root}.Run(t, args...)
	}
	_, err := v.Update(TxOptions{}, func(tx *Tx) error {
		// A person commits while memvault is inside its transaction.
		os.WriteFile(filepath.Join(v.Root, "hand.md"), []byte("by hand\n"), 0o600)
		git("add", "hand.md")
		git("commit", "-q", "-m", "person: hand")
		_, err := queueRow(tx, "fact", "two")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	var subjects []string
	v.Log(func(c gitrepo.CommitInfo) bool { subjects = append(subjects, c.Subject); return true })
	want := []string{"fact: two", "person: hand", "fact: one", "init: memvault vault"}
	if strings.Join(subjects, "|") != strings.Join(want, "|") {
		t.Fatalf("history %q, want %q", subjects, want)
	}
	git("fsck", "--strict")
}

// verify reports events that name what is not there or not yet there, and
// ids used twice, each at its own line, in every segment.
func TestVerifyReportsBadLinks(t *testing.T) {
	v := newVault(t)
	v.Config.Ledger.SegmentBytes = 600
	a := remember(t, v, "a fact in the first segment, padded so the next ones roll over")
	for i := range 4 {
		remember(t, v, fmt.Sprintf("filler %d, padded to fill a segment or two quickly", i))
	}
	_, err := v.Update(TxOptions{}, func(tx *Tx) error {
		tx.Append(&Event{Kind: "fact", Text: "links nowhere", Links: []string{"e_nothere"}})
		tx.Append(&Event{Kind: "fact", Text: "a second event with the first one's id", ID: a.ID})
		tx.Append(&Event{Kind: "retract", Text: "corrects what comes later", Links: []string{"e_later"}})
		tx.Append(&Event{Kind: "fact", Text: "the later one", ID: "e_later"})
		tx.Append(&Event{Kind: "fact", Text: "links to a missing node", Links: []string{"n_nothere"}})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := v.Verify()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range rep.Problems {
		got = append(got, p.Msg)
	}
	want := []string{
		"links to e_nothere, which is not in the ledger",
		"duplicate id, first at ledger/",
		"corrects e_later, which comes after it",
		"links to node n_nothere, which does not exist",
	}
	if len(got) != len(want) {
		t.Fatalf("problems: %q", got)
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("problem %d: %q, want %q…", i, got[i], want[i])
		}
	}
	if segs, _, _ := ListSegments(v.Root); rep.Problems[1].File == segs[0].String() {
		t.Fatalf("the duplicate should be in a later segment than the first: %+v", rep.Problems[1])
	}
	if !strings.Contains(got[1], segmentsFirst(t, v)+":1") {
		t.Errorf("the duplicate should point at the first line of the first segment: %q", got[1])
	}
}

func segmentsFirst(t *testing.T, v *Vault) string {
	segs, _, err := ListSegments(v.Root)
	if err != nil || len(segs) == 0 {
		t.Fatal(segs, err)
	}
	return segs[0].String()
}

// A transaction killed after its commit moved the branch but before git's
// index followed leaves the index behind HEAD: git status would show the
// commit's files staged back to their old versions. The next transaction
// brings those entries up to the commit.
func TestIndexCatchesUpAfterAKill(t *testing.T) {
	if !vaulttest.HasGit() {
		t.Skip("needs git")
	}
	v := newVault(t)
	git := func(args ...string) string {
		t.Helper()
		return vaulttest.Git{Dir: v.Root}.Run(t, args...)
	}
	remember(t, v, "before the kill")
	// What the killed transaction did: its files, the record of its paths,
	// the commit; not the index.
	var changes []*gitrepo.Change
	for _, f := range []struct{ path, text string }{{"threads/topic/killed.md", "written by the killed writer\n"}, {"threads/topic/edited.md", "committed\n"}} {
		p := filepath.Join(v.Root, filepath.FromSlash(f.path))
		os.MkdirAll(filepath.Dir(p), 0o700)
		if err := os.WriteFile(p, []byte(f.text), 0o600); err != nil {
			t.Fatal(err)
		}
		info, _ := os.Stat(p)
		changes = append(changes, &gitrepo.Change{Path: f.path, Content: []byte(f.text), Stat: info})
	}
	// Commit alone is a kill before the index update: it records the
	// paths, writes the commit and moves the branch.
	if _, err := v.Repo.Commit(changes, "memvault: killed\n", gitrepo.Signature{Name: "m", Email: "m@x"}, time.Now()); err != nil {
		t.Fatal(err)
	}
	if st := git("status", "--porcelain"); !strings.Contains(st, "D  threads/topic/killed.md") {
		t.Fatalf("the simulated kill should leave the index behind:\n%s", st)
	}
	// A person edits one of those files before the next write.
	os.WriteFile(filepath.Join(v.Root, "threads", "topic", "edited.md"), []byte("edited by hand, not committed\n"), 0o600)

	remember(t, v, "after the kill")
	if st := git("status", "--porcelain"); st != " M threads/topic/edited.md\n" {
		t.Fatalf("after the next write, git status:\n%s\nwant only the person's unstaged edit", st)
	}
	if data, err := os.ReadFile(filepath.Join(v.Root, ".locks", "index-pending")); err == nil && len(data) > 0 {
		t.Fatalf("the record of pending paths should be empty once the index caught up: %q", data)
	}
	git("fsck", "--strict")
}

// commitAsIs commits the file at path as it is on disk, bypassing every
// check, as `git commit --no-verify` would.
func commitAsIs(t *testing.T, v *Vault, path string) {
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
