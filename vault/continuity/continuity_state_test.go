package continuity

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/memvault/memvault/vault/codec"
	"github.com/memvault/memvault/vault/heads"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/memory"
	"github.com/memvault/memvault/vault/testvault"
	"github.com/memvault/memvault/vault/vaulttest"
)

// contFingerprint is everything the fold holds, unexported fields included
// (but not the token counts kept with each learning, which a fresh fold
// computes only when asked).
func contFingerprint(t *testing.T, c *Continuity) string {
	t.Helper()
	pub, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.Write(pub)
	fmt.Fprintf(&b, "\nseq=%d audit=%q head=%+v", c.seq, c.auditKey, bookJSON(c.head))
	for _, l := range c.Learnings {
		fmt.Fprintf(&b, "\n%s seq=%d rank=%d", l.ID, l.seq, l.rank)
	}
	for _, d := range c.Decisions {
		fmt.Fprintf(&b, "\n%s seq=%d rank=%d", d.ID, d.seq, d.rank)
	}
	keys := func(m any) []string {
		var out []string
		for _, k := range reflect.ValueOf(m).MapKeys() {
			out = append(out, k.String())
		}
		return out
	}
	fmt.Fprintf(&b, "\nmaps %d %d", len(keys(c.learnings)), len(keys(c.decisions)))
	for id, l := range c.learnings {
		if c.learnings[l.ID] != l && c.learnings[l.Event] != l {
			t.Fatalf("map entry %s points at a learning under neither of its ids", id)
		}
	}
	return b.String()
}

// checkContCache asserts that the state read through the cache equals a
// fresh fold of the whole ledger, summary included, and returns it.
func checkContCache(t *testing.T, v *vault.Vault, when string) *contState {
	t.Helper()
	st, err := continuityState(v)
	if err != nil {
		t.Fatalf("%s: %v", when, err)
	}
	cfg, err := loadContinuityConfig(v)
	if err != nil {
		t.Fatal(err)
	}
	full, err := v.LoadState()
	if err != nil {
		t.Fatal(err)
	}
	fresh := foldContinuity(full.Rows, nil)
	want := summarize(fresh, cfg, today(v))
	sum, err := st.summary(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(sum, want) {
		t.Fatalf("%s: cached summary differs from a fresh fold:\n got %+v\nwant %+v", when, sum, want)
	}
	if st.lastAudit != fresh.LastAudit || !reflect.DeepEqual(bookJSON(st.head), bookJSON(fresh.head)) {
		t.Fatalf("%s: cached audit or head state differs: %q %+v, want %q %+v", when, st.lastAudit, bookJSON(st.head), fresh.LastAudit, bookJSON(fresh.head))
	}
	c, err := st.full()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := contFingerprint(t, c), contFingerprint(t, fresh); got != want {
		t.Fatalf("%s: cached fold differs from a fresh fold:\n got %s\nwant %s", when, got, want)
	}
	st.saveIfDirty(cfg)
	return st
}

func contUpdate(t *testing.T, v *vault.Vault, day string, fn func(ct *ContinuityTx) error) *ContinuityResult {
	t.Helper()
	now, err := ParseDate(day)
	if err != nil {
		t.Fatal(err)
	}
	res, err := UpdateContinuity(v, ContinuityOptions{Now: now}, fn)
	if err != nil {
		t.Fatalf("update on %s: %v", day, err)
	}
	return res
}

// The derived state of the protocol is a pure cache: after every kind of
// write, a retract, a supersede of a blocker, rows the protocol ignores, a
// deleted, corrupt, truncated or stale file, and a segment replaced or
// rewritten by hand, what the commands read equals a fresh fold of the
// ledger.
func TestContinuityCacheMatchesFold(t *testing.T) {
	v := testvault.New(t)
	checkContCache(t, v, "empty")
	var learnEv, decEv string
	contUpdate(t, v, "2026-03-01", func(ct *ContinuityTx) error {
		if err := ct.Goal("ship the cache", "executing"); err != nil {
			return err
		}
		for i := 0; i < 12; i++ {
			l, err := ct.Learn(LearnInput{Error: fmt.Sprintf("step %d failed", i), Cause: "stale cache",
				Prevention: fmt.Sprintf("clear the cache before step %d", i), Scope: fmt.Sprintf("module:m%d", i%3)})
			if err != nil {
				return err
			}
			if i == 4 {
				learnEv = l.Event
			}
		}
		if err := ct.Next("write the docs", false); err != nil {
			return err
		}
		return ct.Next("run the bench", true)
	})
	checkContCache(t, v, "after the first learnings")
	contUpdate(t, v, "2026-03-02", func(ct *ContinuityTx) error {
		if _, err := ct.Learn(LearnInput{Error: "STEP 3 failed!", Prevention: "clear it twice", Scope: "module:m0"}); err != nil {
			return err
		}
		d, err := ct.Decide(DecideInput{Decision: "always run go mod tidy before commit", Rationale: "clean diffs", Scope: "global"})
		if err != nil {
			return err
		}
		decEv = d.Event
		if _, err := ct.Decide(DecideInput{Decision: "never run go mod tidy before a commit", Rationale: "slow", Scope: "global"}); err != nil {
			return err
		}
		return ct.Done("1")
	})
	checkContCache(t, v, "after a reinforcement, decisions and a done")
	// Rows the protocol reads that are not its own, and rows it ignores.
	var blocker string
	_, err := v.Update(vault.TxOptions{}, func(tx *vault.Tx) error {
		ev, err := memory.Remember(tx, memory.Input{Kind: "blocker", Text: "waiting for review"})
		if err != nil {
			return err
		}
		blocker = ev.ID
		_, err = memory.Remember(tx, memory.Input{Kind: "fact", Text: "the sky is blue"})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	checkContCache(t, v, "after a blocker and a fact")
	contUpdate(t, v, "2026-03-03", func(ct *ContinuityTx) error {
		if _, err := ct.Invalidate("L2", "it broke the build"); err != nil {
			return err
		}
		if _, err := ct.Correct("L3", "", "clear only the build cache", "too broad"); err != nil {
			return err
		}
		if err := ct.Next("profile it", false); err != nil {
			return err
		}
		if _, err := ct.Decide(DecideInput{Decision: "keep the cache", Rationale: "speed"}); err != nil {
			return err
		}
		if _, err := ct.Learn(LearnInput{Scope: "global", Error: "tests flaked", Prevention: "pin the seed"}); err != nil {
			return err
		}
		return ct.SessionEnd(SessionEndInput{Context: []string{"bench at 10k"}, Files: []string{"vault/continuity/continuity_state.go"}})
	})
	checkContCache(t, v, "after invalidate, correct and a session end")
	contUpdate(t, v, "2026-05-20", func(ct *ContinuityTx) error {
		ct.Audit(false)
		return nil
	})
	checkContCache(t, v, "after an audit")

	// Corrections withdraw earlier events: the cache must not keep them.
	_, err = v.Update(vault.TxOptions{}, func(tx *vault.Tx) error {
		if _, err := memory.Retract(tx, learnEv, "recorded by mistake"); err != nil {
			return err
		}
		if _, err := memory.Retract(tx, decEv, "never decided"); err != nil {
			return err
		}
		_, err := memory.Supersede(tx, blocker, "waiting for the second review")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	st := checkContCache(t, v, "after retracts and a supersede")
	c, _ := st.full()
	if l := c.Learning("L5"); l != nil {
		t.Fatalf("a retracted learning is still read: %+v", l)
	}
	if len(c.Blockers) != 1 || c.Blockers[0].Text != "waiting for the second review" {
		t.Fatalf("blockers after a supersede: %+v", c.Blockers)
	}

	// The writer saved what it committed: the next reader reads it whole.
	contUpdate(t, v, "2026-05-21", func(ct *ContinuityTx) error { return ct.Next("one more", false) })
	if st, err := continuityState(v); err != nil || st.dirty || st.c != nil {
		t.Fatalf("after a protocol write the cache was not up to date: dirty=%v decoded=%v err=%v", st.dirty, st.c != nil, err)
	}

	// Deleted, corrupt, truncated.
	path := contView.Path(v.Root)
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(path)
	checkContCache(t, v, "after deleting the cache")
	for name, bad := range map[string][]byte{
		"garbage":       []byte("garbage"),
		"truncated":     good[:len(good)-7],
		"a flipped bit": append(append([]byte(nil), good[:len(good)-40]...), append([]byte{good[len(good)-40] ^ 1}, good[len(good)-39:]...)...),
		"no header":     []byte(codec.Magic),
	} {
		if err := os.WriteFile(path, bad, 0o600); err != nil {
			t.Fatal(err)
		}
		checkContCache(t, v, "after "+name+" in the cache")
		if now, _ := os.ReadFile(path); bytes.Equal(now, bad) {
			t.Fatalf("after %s: the cache was not rewritten", name)
		}
	}

	// Stale: an old cache and the ledger moved on without it.
	os.WriteFile(path, good, 0o600)
	contUpdate(t, v, "2026-05-22", func(ct *ContinuityTx) error {
		_, err := ct.Learn(LearnInput{Error: "late error", Prevention: "be early"})
		return err
	})
	os.WriteFile(path, good, 0o600)
	checkContCache(t, v, "with a stale cache")

	// A segment replaced by a copy of itself (a new inode), and a ledger
	// rewritten by hand: both are read again from the ledger.
	segs, _, err := vault.ListSegments(v.Root)
	if err != nil || len(segs) == 0 {
		t.Fatal(segs, err)
	}
	seg := filepath.Join(v.Root, filepath.FromSlash(segs[0].String()))
	data, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(seg)
	os.WriteFile(seg, data, 0o600)
	checkContCache(t, v, "after a segment was replaced")
	edited := bytes.Replace(data, []byte("ship the cache"), []byte("ship the cache by hand, later"), 1)
	if bytes.Equal(edited, data) {
		t.Fatal("the goal is not in the first segment")
	}
	vaulttest.EditFile(t, seg, edited)
	st = checkContCache(t, v, "after a hand edit of the ledger")
	if c, _ := st.full(); c.Goal != "ship the cache by hand, later" {
		t.Fatalf("goal after a hand edit of the ledger: %q", c.Goal)
	}
}

// A new learning, many rows the protocol ignores, then a status: only the
// relevant rows are folded and the cache is written again.
func TestContinuityCacheFoldsOnlyNewRows(t *testing.T) {
	v := testvault.New(t)
	testvault.Remember(t, v, "a first row, so that the ledger has a segment to key the state by")
	contUpdate(t, v, "2026-03-01", func(ct *ContinuityTx) error {
		_, err := ct.Learn(LearnInput{Error: "e", Prevention: "p"})
		return err
	})
	for i := 0; i < 3; i++ {
		testvault.Remember(t, v, fmt.Sprintf("fact %d", i))
	}
	if st, err := continuityState(v); err != nil || st.c != nil || st.sum == nil {
		t.Fatalf("rows the protocol ignores decoded the whole state (%v)", err)
	}
	checkContCache(t, v, "after facts")
	_, err := v.Update(vault.TxOptions{}, func(tx *vault.Tx) error {
		_, err := memory.Remember(tx, memory.Input{Kind: "blocker", Text: "blocked"})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	checkContCache(t, v, "after a blocker")
	s, err := LoadContinuityStatus(v)
	if err != nil {
		t.Fatal(err)
	}
	if s.Learnings != 1 || s.Source != "file" {
		t.Fatalf("status: %+v", s)
	}
}

// The selection the render and the index use gives the first k of a full
// sort, for any k.
func TestSmallestIsSortPrefix(t *testing.T) {
	var ls []*Learning
	for i := 0; i < 300; i++ {
		ls = append(ls, &Learning{ID: fmt.Sprint("L", i), seq: i, rank: (i * 7) % 3, ReinforceCount: (i * 13) % 5,
			LastRelevant: fmt.Sprintf("2026-01-%02d", 1+(i*11)%28)})
	}
	for _, less := range []func(a, b *Learning) bool{readFirst, stronger} {
		all := append([]*Learning(nil), ls...)
		sortBy(all, less)
		for _, k := range []int{0, 1, 5, 8, 20, 74, 75, 101, 300, 400} {
			got := smallest(ls, k, less)
			if want := all[:min(k, len(all))]; !reflect.DeepEqual(got, want) && !(len(got) == 0 && len(want) == 0) {
				t.Fatalf("k=%d: selection differs from the sort", k)
			}
		}
	}
}

func sortBy(ls []*Learning, less func(a, b *Learning) bool) {
	for i := 1; i < len(ls); i++ {
		for j := i; j > 0 && less(ls[j], ls[j-1]); j-- {
			ls[j], ls[j-1] = ls[j-1], ls[j]
		}
	}
}

// A refresh of CONTINUITY.md deferred by a held lease is retried by the
// next hook event of any session (RunDeferred), like any head's.
func TestContinuityDeferredRefreshIsRetried(t *testing.T) {
	v := testvault.New(t)
	contUpdate(t, v, "2026-03-01", func(ct *ContinuityTx) error { return ct.Goal("first goal", "") })
	cfg, _ := loadContinuityConfig(v)
	lease, holder, _, err := heads.AcquireHeadLease(v, vault.MustRel(vault.ContinuityHead), heads.LeaseOwner{Agent: "editor", Session: "s-edit", Command: "edit"}, cfg.Lease)
	if err != nil || holder != nil {
		t.Fatal(holder, err)
	}
	res := contUpdate(t, v, "2026-03-02", func(ct *ContinuityTx) error { return ct.Goal("second goal", "") })
	if res.Head != "deferred" {
		t.Fatalf("head status with the lease held: %q", res.Head)
	}
	if strings.Contains(testvault.ReadHead(t, v, vault.ContinuityHead), "second goal") {
		t.Fatal("CONTINUITY.md was written under someone else's lease")
	}
	if s, _ := LoadContinuityStatus(v); s.Deferred != 1 {
		t.Fatalf("deferred refreshes pending: %d, want 1", s.Deferred)
	}
	// Still held: the retry defers again, without a second event.
	rep, err := heads.RunDeferred(v, vault.TxOptions{Command: "hook"}, RefreshHead)
	if err != nil {
		t.Fatal(err)
	}
	if headStatus(rep, vault.ContinuityHead) != "deferred" {
		t.Fatalf("retry under a held lease: %+v", rep.Heads)
	}
	if s, _ := LoadContinuityStatus(v); s.Deferred != 1 {
		t.Fatalf("deferred refreshes pending after a refused retry: %d, want 1", s.Deferred)
	}
	if err := heads.ReleaseHeadLease(v, lease); err != nil {
		t.Fatal(err)
	}
	rep, err = heads.RunDeferred(v, vault.TxOptions{Command: "hook"}, RefreshHead)
	if err != nil {
		t.Fatal(err)
	}
	if got := headStatus(rep, vault.ContinuityHead); got != "rendered" && got != "merged" {
		t.Fatalf("retry after release: %+v", rep.Heads)
	}
	if !strings.Contains(testvault.ReadHead(t, v, vault.ContinuityHead), "second goal") {
		t.Fatalf("the retry did not render CONTINUITY.md:\n%s", testvault.ReadHead(t, v, vault.ContinuityHead))
	}
	if strings.Contains(testvault.ReadHead(t, v, vault.ContinuityHead), "# MEMORY") {
		t.Fatal("CONTINUITY.md was rendered as another head")
	}
	checkContCache(t, v, "after the retry")
	if s, _ := LoadContinuityStatus(v); s.Deferred != 0 {
		t.Fatalf("deferred refreshes pending after the retry: %d", s.Deferred)
	}
	// Nothing pending: the next hook event does nothing.
	rep, err = heads.RunDeferred(v, vault.TxOptions{Command: "hook"}, RefreshHead)
	if err != nil || len(rep.Heads) != 0 || rep.Commit != "" {
		t.Fatalf("retry with nothing pending: %+v %v", rep, err)
	}
	testvault.MustVerify(t, v)
}

// `memvault edit CONTINUITY.md` starts from a template with the protocol's
// sections; the next update merges into it without a conflict and keeps
// what the person wrote, under the section they wrote it in.
func TestContinuityTemplateMatchesProtocol(t *testing.T) {
	p := parseContinuity(Template())
	if len(p.Warnings) != 0 || len(p.Unknown) != 0 {
		t.Fatalf("the template does not parse as the protocol: %v %v", p.Warnings, p.Unknown)
	}
	var titles []string
	for _, l := range strings.Split(string(Template()), "\n") {
		if t, ok := strings.CutPrefix(l, "## "); ok {
			titles = append(titles, t)
		}
	}
	if !reflect.DeepEqual(titles, ContinuitySections) {
		t.Fatalf("template sections %q, want %q", titles, ContinuitySections)
	}

	for _, tc := range []struct{ name, template, heading string }{
		{"current", string(Template()), "## " + SecBlockers + "\n"},
		// made from the template of the versions that wrote "- none"
		{"none", noneContinuityTemplate, "## " + SecBlockers + "\n\n- none\n"},
		{"legacy", legacyContinuityTemplate, "## Blockers\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := testvault.New(t)
			mine := strings.Replace(tc.template, tc.heading, strings.SplitN(tc.heading, "\n", 2)[0]+"\n\n- the CI runner is down\n", 1)
			if mine == tc.template {
				t.Fatal("no blockers section in the template")
			}
			if err := os.WriteFile(v.Abs(vault.MustRel(vault.ContinuityHead)), []byte(mine), 0o600); err != nil {
				t.Fatal(err)
			}
			res := contUpdate(t, v, "2026-03-01", func(ct *ContinuityTx) error { return ct.Goal("ship it", "") })
			got := testvault.ReadHead(t, v, vault.ContinuityHead)
			if !strings.Contains(got, "- the CI runner is down") || !strings.Contains(got, "ship it") {
				t.Fatalf("merge lost text (%s):\n%s", res.Head, got)
			}
			if tc.name != "legacy" {
				if strings.Contains(got, "- none") {
					t.Fatalf("a placeholder of the template stays:\n%s", got)
				}
				if res.Head != "merged" || len(res.Conflicts) != 0 {
					t.Fatalf("merge into the template: %s %v\n%s", res.Head, res.Conflicts, got)
				}
				p := parseContinuity([]byte(got))
				if len(p.Warnings) != 0 || !reflect.DeepEqual(items(p.Sections[SecBlockers]), []string{"the CI runner is down"}) {
					t.Fatalf("blockers after the merge: %v %v\n%s", p.Sections[SecBlockers], p.Warnings, got)
				}
			}
		})
	}
}

// headStatus is the status a refresh report gives head ("" when the
// refresh did not reach it).
func headStatus(rep *heads.RefreshReport, head string) string {
	for _, h := range rep.Heads {
		if h.Head == head {
			return h.Status
		}
	}
	return ""
}
