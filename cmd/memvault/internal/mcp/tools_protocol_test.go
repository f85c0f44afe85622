package mcp

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/memvault/memvault/render"
	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/continuity"
	"github.com/memvault/memvault/vault/heads"
	"github.com/memvault/memvault/vault/testvault"
	"github.com/memvault/memvault/vault/vaulttest"
)

// learnOn records a learning as of day (YYYY-MM-DD) through the library
// the learn command calls, by agent.
func learnOn(t *testing.T, v *vault.Vault, agent, day, errText, prevention string) {
	t.Helper()
	now, err := continuity.ParseDate(day)
	if err != nil {
		t.Fatal(err)
	}
	_, err = continuity.UpdateContinuity(v, continuity.ContinuityOptions{Now: now, Trigger: "test",
		TxOptions: vault.TxOptions{Agent: agent}}, func(ct *continuity.ContinuityTx) error {
		_, err := ct.Learn(continuity.LearnInput{Error: errText, Prevention: prevention, TTL: 7})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// sameJSON fails unless got and want encode to the same JSON.
func sameJSON(t *testing.T, what string, got, want any) {
	t.Helper()
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(want)
	var a, b any
	json.Unmarshal(g, &a)
	json.Unmarshal(w, &b)
	if !reflect.DeepEqual(a, b) {
		t.Errorf("%s: the tool says\n%s\nthe command's library call says\n%s", what, g, w)
	}
}

// TestProtocolToolsAreTheCommands: budget, continuity_status,
// continuity_index, audit and the learnings and decisions resources give
// what the commands' library calls give (no drift), and audit with
// dry_run writes nothing while audit without it writes what the dry run
// said.
func TestProtocolToolsAreTheCommands(t *testing.T) {
	t.Parallel()
	f := setup(t, Options{}, "")
	// Enough rows that MEMORY.md's budget leaves some out.
	for i := range 30 {
		f.ok("remember", map[string]any{"kind": "decision", "global": true,
			"text": "decision number " + strings.Repeat("x", i%5) + " about the storage layer, the index, the cache, " +
				"the retries and the timeouts of every request the shop makes to the payment provider " + string(rune('a'+i%26))}, nil)
	}
	f.ok("decide", map[string]any{"decision": "use WAL for the index", "rationale": "readers never block"}, nil)
	f.ok("learn", map[string]any{"error": "tests hit the real HOME", "prevention": "set HOME in every test"}, nil)
	// A learning recorded long ago, never reinforced: past its ttl today.
	old := time.Now().UTC().AddDate(0, 0, -60).Format("2006-01-02")
	learnOn(t, f.v, f.v.Config.Agent, old, "the cache went stale", "flush the cache after a deploy")

	var b budgetOut
	f.ok("budget", map[string]any{}, &b)
	want, err := continuity.ContinuityBudget(f.v)
	if err != nil {
		t.Fatal(err)
	}
	sameJSON(t, "budget", b.Budget, want)
	docs, err := heads.RenderHeads(f.v, heads.RenderOptions{Memory: true, Explain: true})
	if err != nil {
		t.Fatal(err)
	}
	sameJSON(t, "budget heads", b.Heads, []render.Report{docs[0].Report})
	dropped := 0
	for _, s := range b.Heads[0].Sections {
		dropped += len(s.Dropped)
	}
	if dropped == 0 {
		t.Errorf("MEMORY.md's budget left nothing out of 30 long decisions: %+v", b.Heads[0])
	}

	var st continuity.ContinuityStatus
	f.ok("continuity_status", map[string]any{}, &st)
	wantSt, err := continuity.LoadContinuityStatus(f.v)
	if err != nil {
		t.Fatal(err)
	}
	sameJSON(t, "continuity_status", st, wantSt)

	// The dry run says what the audit would do, and why, and writes nothing.
	before := vaulttest.Files(t, f.v.Root)
	var dry continuity.AuditReport
	f.ok("audit", map[string]any{"dry_run": true}, &dry)
	f.unchanged(before)
	if !dry.DryRun || dry.Commit != "" || len(dry.Actions) != 1 || dry.Actions[0].Action != "archive" ||
		!strings.Contains(dry.Actions[0].Reason, "ttl expired") {
		t.Fatalf("dry run: %+v", dry)
	}
	var done continuity.AuditReport
	f.ok("audit", map[string]any{}, &done)
	if done.DryRun || done.Commit == "" || !done.Written || !reflect.DeepEqual(done.Actions, dry.Actions) {
		t.Fatalf("audit: %+v, the dry run said %+v", done, dry)
	}
	if n := len(f.state().Select(vault.Filter{Kind: vault.KindLearningArchived})); n != 1 {
		t.Errorf("the audit recorded %d archives, want 1", n)
	}
	f.ok("audit", map[string]any{"dry_run": true}, &dry)
	if len(dry.Actions) != 0 {
		t.Errorf("a second dry run still finds actions: %+v", dry.Actions)
	}

	// continuity_index writes the file and returns it.
	if err := os.Remove(filepath.Join(f.v.Root, continuity.LearningsIndexFile)); err != nil {
		t.Fatal(err)
	}
	var ix continuityIndexOut
	f.ok("continuity_index", map[string]any{}, &ix)
	file, err := f.v.ReadFile(continuity.LearningsIndexFile)
	if err != nil {
		t.Fatalf("continuity_index wrote no file: %v", err)
	}
	if ix.Text != string(file) || !strings.Contains(ix.Text, "set HOME in every test") ||
		strings.Contains(ix.Text, "flush the cache") {
		t.Errorf("continuity_index: %+v\nfile:\n%s", ix, file)
	}

	// The resources list what the commands list, in their order.
	learnings, err := f.read(learningsURI)
	if err != nil {
		t.Fatal(err)
	}
	c, err := continuity.LoadContinuity(f.v)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range c.ActiveLearnings(continuity.FilterForDir(""), false) {
		lines = append(lines, "- "+l.Status+" "+l.Line())
	}
	if got := strings.TrimSpace(strings.SplitN(learnings, "\n\n", 2)[1]); got != strings.Join(lines, "\n") || len(lines) != 1 {
		t.Errorf("memvault://learnings:\n%s\nwant the lines\n%s", learnings, strings.Join(lines, "\n"))
	}
	decisions, err := f.read(decisionsURI)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(decisions, "use WAL for the index") || !strings.Contains(decisions, "readers never block") {
		t.Errorf("memvault://decisions:\n%s", decisions)
	}
	testvault.MustVerify(t, f.v)
}

// TestProtocolToolsAreScopedToTheAgent: bob is shown none of alice's
// learnings or decisions by the protocol's tools and resources, not even
// the audit's action on her expired learning, which the vault's own agent
// is shown; his own rows he sees.
func TestProtocolToolsAreScopedToTheAgent(t *testing.T) {
	t.Parallel()
	owner := setup(t, Options{}, "")
	v := owner.v
	old := time.Now().UTC().AddDate(0, 0, -60).Format("2006-01-02")
	learnOn(t, v, "alice", old, secret+" went stale", "flush the "+secret)
	learnOn(t, v, "bob", old, "bob's cache went stale", "flush bob's cache")
	// Enough of alice's rows that MEMORY.md's budget leaves some of them
	// out: the budget's report of what was left out is bob's heads', not
	// the vault's.
	alice := connect(t, v, Options{Vault: v.Root, Dir: t.TempDir(), Agent: "alice", Session: "alice-s1"}, "", nil)
	for i := range 30 {
		alice.ok("remember", map[string]any{"kind": "decision", "global": true,
			"text": "the " + secret + " decision " + string(rune('a'+i%26)) + " about the storage layer, the index, the cache, " +
				"the retries and the timeouts of every request the shop makes to the payment provider"}, nil)
	}
	alice.ok("decide", map[string]any{"decision": "use " + secret, "rationale": "it is " + secret}, nil)
	bob := connect(t, v, Options{Vault: v.Root, Dir: t.TempDir(), Agent: "bob", Session: "bob-s1"}, "", nil)
	var ob budgetOut
	owner.ok("budget", map[string]any{}, &ob)
	if !strings.Contains(resultText(t, owner.call("budget", map[string]any{})), secret) {
		t.Fatalf("the owner's budget names none of alice's rows left out: the test shows nothing: %+v", ob)
	}

	var all, mine continuity.AuditReport
	owner.ok("audit", map[string]any{"dry_run": true}, &all)
	bob.ok("audit", map[string]any{"dry_run": true}, &mine)
	if len(all.Actions) != 2 || len(mine.Actions) != 1 || mine.Hidden != 1 {
		t.Fatalf("owner's dry run %+v; bob's %+v", all, mine)
	}
	for _, call := range []struct {
		tool string
		args map[string]any
	}{{"audit", map[string]any{"dry_run": true}}, {"budget", map[string]any{}}, {"continuity_status", map[string]any{}},
		{"continuity_index", map[string]any{}}, {"audit", map[string]any{}}} {
		got := resultText(t, bob.call(call.tool, call.args))
		if strings.Contains(got, secret) {
			t.Errorf("bob is shown alice's rows through %s: %.400s", call.tool, got)
		}
	}
	for _, uri := range []string{learningsURI, decisionsURI} {
		text, err := bob.read(uri)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(text, secret) {
			t.Errorf("bob is shown alice's rows through %s:\n%s", uri, text)
		}
	}
	var ix continuityIndexOut
	bob.ok("continuity_index", map[string]any{}, &ix)
	file, _ := v.ReadFile(continuity.LearningsIndexFile)
	if !strings.Contains(string(file), "0 active") || !strings.Contains(ix.Text, "0 active") {
		t.Errorf("after the audit archived both, the index still counts an active one:\n%s\n%s", file, ix.Text)
	}
}
