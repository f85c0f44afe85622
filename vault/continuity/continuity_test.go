package continuity

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/memvault/memvault/vault"
)

func TestLadderTTL(t *testing.T) {
	for _, c := range []struct{ base, n, want int }{
		{30, 0, 30}, {30, 1, 30}, {30, 2, 60}, {30, 3, 90}, {30, 4, 90}, {30, 5, 180}, {30, 9, 180},
		{120, 2, 120}, // a longer ttl given at recording is never shortened
	} {
		if got := ladderTTL(c.base, c.n); got != c.want {
			t.Errorf("ladderTTL(%d, %d) = %d, want %d", c.base, c.n, got, c.want)
		}
	}
}

func TestNormalizeText(t *testing.T) {
	for _, c := range [][2]string{
		{"Build FAILED: missing go.sum!", "build failed missing go sum"},
		{"  build failed -- missing   go sum ", "build failed missing go sum"},
		{"Ünïcode Straße", "ünïcode straße"},
	} {
		if got := NormalizeText(c[0]); got != c[1] {
			t.Errorf("normalizeText(%q) = %q, want %q", c[0], got, c[1])
		}
	}
}

func TestContradicts(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{"always run go mod tidy before commit", "never run go mod tidy before a commit", true},
		{"never use sleep in tests", "always use sleep in tests to wait for the server", true},
		{"don't deploy on fridays", "deploy on fridays", true},
		{"use WAL", "use the rollback journal", false},
		{"never use sleep in tests", "never use sleep in tests", false}, // same polarity
		{"don't do x", "do not do x", false},                            // both negated
		{"never push on red", "always write release notes", false},      // unrelated
	} {
		if got := Contradicts(c.a, c.b); got != c.want {
			t.Errorf("Contradicts(%q, %q) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}

func TestParseScope(t *testing.T) {
	good := map[string]string{"": "global", "global": "global", "module:auth": "module:auth",
		"file:src/a/../b.go": "file:src/b.go", "file:./x.go": "file:x.go"}
	for in, want := range good {
		s, err := ParseScope(in)
		if err != nil || s.String() != want {
			t.Errorf("ParseScope(%q) = %v, %v; want %s", in, s, err, want)
		}
	}
	for _, in := range []string{"module", "pkg:x", "module:", "file:/etc/passwd", "file:../x", "module:a b", "file:a\x00b"} {
		if _, err := ParseScope(in); err == nil {
			t.Errorf("ParseScope(%q): no error", in)
		}
	}
}

func TestScopeFilter(t *testing.T) {
	mod, _ := ParseScope("module:auth")
	file, _ := ParseScope("file:src/auth/login.go")
	for _, c := range []struct {
		f     ScopeFilter
		scope string
		want  bool
	}{
		{FilterFor(mod), "global", true},
		{FilterFor(mod), "module:auth", true},
		{FilterFor(mod), "module:billing", false},
		{FilterFor(mod), "file:src/auth/login.go", true},
		{FilterFor(mod), "file:src/billing/x.go", false},
		{FilterFor(file), "module:auth", true},
		{FilterFor(file), "file:src/auth/login.go", true},
		{FilterFor(file), "file:src/auth/other.go", false},
		{FilterForDir("src/auth"), "module:auth", true},
		{FilterForDir("src/auth"), "file:src/auth/login.go", true},
		{FilterForDir("src/auth"), "module:billing", false},
		{FilterForDir(""), "module:billing", true},
	} {
		if got := c.f.Match(c.scope); got != c.want {
			t.Errorf("%+v.Match(%q) = %v, want %v", c.f, c.scope, got, c.want)
		}
	}
}

// ev builds a protocol event for the fold.
func ev(kind, id, text string, d contData, links ...string) *vault.Event {
	raw, _ := json.Marshal(d)
	return &vault.Event{ID: id, TS: d.Date + "T00:00:00.000Z", Kind: kind, Text: text, Data: raw, Links: links}
}

func TestAuditDecayAndConflict(t *testing.T) {
	evs := []*vault.Event{
		ev(vault.KindLearningRecorded, "e1", "", contData{ID: "L1", Date: "2026-01-01", Error: "a", Prevention: "always run tidy before commit", Scope: "global", TTL: 30}),
		ev(vault.KindLearningRecorded, "e2", "", contData{ID: "L2", Date: "2026-01-20", Error: "b", Prevention: "never run tidy before commit", Scope: "global", TTL: 30}),
		ev(vault.KindLearningRecorded, "e3", "", contData{ID: "L3", Date: "2026-01-01", Error: "c", Prevention: "p", Scope: "module:x", TTL: 90}),
		ev(vault.KindLearningRecorded, "e4", "", contData{ID: "L4", Date: "2026-01-01", Error: "d", Prevention: "q", Scope: "module:x", TTL: 30}),
	}
	for i, day := range []string{"2026-01-05", "2026-01-10", "2026-01-15"} {
		evs = append(evs, ev(vault.KindLearningReinforce, fmt.Sprint("r", i), "", contData{ID: "L4", Date: day}, "e4"))
	}
	c := foldContinuity(nil, evs)
	if l := c.Learning("L4"); l.ReinforceCount != 3 || l.TTL != 90 || l.LastRelevant != "2026-01-15" {
		t.Fatalf("L4 after 3 reinforcements: %+v", l)
	}
	// On 2026-01-25 nothing has decayed; L1 and L2 conflict and L2 wins.
	rep := audit(c, "2026-01-25")
	got := actions(rep)
	if got != "invalidate L1 by L2" {
		t.Errorf("audit 01-25 actions = %q", got)
	}
	// Deterministic: the same state and day give the same report.
	if a, b := fmt.Sprint(audit(c, "2026-03-10")), fmt.Sprint(audit(c, "2026-03-10")); a != b {
		t.Errorf("audit not deterministic:\n%s\n%s", a, b)
	}
	// On 2026-03-10: L1 (day 68) and L2 (day 49) are past ttl 30; L3 (ttl
	// 90, never reinforced, 68 days) is LOW_CONFIDENCE; L4 (ttl 90, last
	// relevant 54 days ago) holds.
	rep = audit(c, "2026-03-10")
	if got := actions(rep); got != "archive L1; archive L2" {
		t.Errorf("audit 03-10 actions = %q", got)
	}
	if len(rep.Flags) != 1 || rep.Flags[0].ID != "L3" || rep.Flags[0].Flag != FlagLowConfidence {
		t.Errorf("audit 03-10 flags = %+v", rep.Flags)
	}
}

func actions(rep *AuditReport) string {
	var out []string
	for _, a := range rep.Actions {
		s := a.Action + " " + a.ID
		if a.By != "" {
			s += " by " + a.By
		}
		out = append(out, s)
	}
	return strings.Join(out, "; ")
}

func TestRenderWithinCap(t *testing.T) {
	var evs []*vault.Event
	for i := 0; i < 40; i++ {
		evs = append(evs, ev(vault.KindContinuityNext, fmt.Sprint("n", i), fmt.Sprintf("step %d with several words of text", i), contData{Date: "2026-01-01"}))
		evs = append(evs, ev(vault.KindLearningRecorded, fmt.Sprint("l", i), "", contData{ID: fmt.Sprint("L", i+1), Date: "2026-01-01",
			Error: "error number " + fmt.Sprint(i), Prevention: "do the thing properly", Scope: "global", TTL: 30}))
	}
	c := foldContinuity(nil, evs)
	for _, capWords := range []int{120, 200, 500} {
		doc := renderContinuity(c, capWords)
		if doc.Words > capWords {
			t.Errorf("cap %d: %d words", capWords, doc.Words)
		}
		if doc.Omitted[SecLearnings] == 0 || doc.Omitted[SecNext] == 0 {
			t.Errorf("cap %d: omitted = %v", capWords, doc.Omitted)
		}
		p := parseContinuity(doc.Bytes)
		if len(p.Warnings) != 0 {
			t.Errorf("cap %d: the render does not parse cleanly: %v", capWords, p.Warnings)
		}
		// The same state renders the same bytes.
		if string(renderContinuity(c, capWords).Bytes) != string(doc.Bytes) {
			t.Errorf("cap %d: render not deterministic", capWords)
		}
	}
}

func TestParseContinuityKeepsUnknown(t *testing.T) {
	p := parseContinuity([]byte("# CONTINUITY\nstray text\n\n## Active Goal\n\ngoal\n\n## Blockers\n\n- b\n\n## Mine\n\n- x\n"))
	if p.Sections[SecGoal][0] != "goal" || p.Sections[SecBlockers][0] != "- b" {
		t.Errorf("sections = %v", p.Sections)
	}
	if p.Unknown["Mine"][0] != "- x" || p.Unknown["(before the first section)"][0] != "stray text" {
		t.Errorf("unknown = %v", p.Unknown)
	}
	if len(p.Warnings) == 0 {
		t.Errorf("no warnings")
	}
}

func TestRotateHandLines(t *testing.T) {
	rendered := "# T\n\n## A\n\n- r1\n"
	doc := "# T\n\n## A\n\n- r1\n- hand one two three\n\n## B <!-- memvault:keep -->\n\n- pinned words here\n"
	out, moved := rotateHandLines([]byte(doc), []byte(rendered), 12)
	if len(moved) != 1 || moved[0]["text"] != "- hand one two three" || strings.Contains(string(out), "hand one") {
		t.Errorf("moved %v, out %q", moved, out)
	}
	if !strings.Contains(string(out), "pinned words here") {
		t.Errorf("a pinned line was rotated: %q", out)
	}
}

// A learning's line says only what the learning holds: no empty "Why:" or
// "Prevention:" label before its ttl.
func TestLearningLineLeavesOutEmptyParts(t *testing.T) {
	l := &Learning{ID: "L1", Scope: "global", Error: "the deploy failed", TTL: 30, LastRelevant: "2026-11-24"}
	// A plain learning (LEARNED: text) is a thing learned: no "What failed".
	if got, want := l.Line(), "L1 [global] the deploy failed (ttl 30, last 2026-11-24)"; got != want {
		t.Errorf("Line() = %q, want %q", got, want)
	}
	l.Cause, l.Prevention = "a stale key", "rotate first"
	if got, want := l.Line(), "L1 [global] What failed: the deploy failed Why: a stale key Prevention: rotate first (ttl 30, last 2026-11-24)"; got != want {
		t.Errorf("Line() = %q, want %q", got, want)
	}
}

// The bracket says what it means: the thread of a thread's row, "global"
// only for a row of no thread, the scope after the thread when it is not
// global.
func TestRowLabels(t *testing.T) {
	l := &Learning{ID: "L2", Scope: "global", Thread: "project:alpha", Error: "the API paginates with cursors", TTL: 30, LastRelevant: "2026-11-24"}
	if got, want := l.Line(), "L2 [project:alpha] the API paginates with cursors (ttl 30, last 2026-11-24)"; got != want {
		t.Errorf("Line() = %q, want %q", got, want)
	}
	l.Scope = "module:api"
	if got := l.Line(); !strings.HasPrefix(got, "L2 [project:alpha module:api] ") {
		t.Errorf("Line() = %q", got)
	}
	d := &Decision{ID: "D1", Scope: "global", Thread: "project:alpha", Decision: "use cursors", Date: "2026-11-24"}
	if got, want := d.Line(), "D1 [project:alpha] use cursors (2026-11-24)"; got != want {
		t.Errorf("Line() = %q, want %q", got, want)
	}
	d.Thread = ""
	if got, want := d.Line(), "D1 [global] use cursors (2026-11-24)"; got != want {
		t.Errorf("Line() = %q, want %q", got, want)
	}
}
