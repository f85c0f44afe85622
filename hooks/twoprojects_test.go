package hooks

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/continuity"
	"github.com/memvault/memvault/vault/heads"
	"github.com/memvault/memvault/vault/memory"
	"github.com/memvault/memvault/vault/node"
)

// twoProjects is one vault (MEMVAULT_DIR style: a folder of its own,
// inside neither project) serving two projects, alpha and beta, each a
// git repository with its own origin remote, played through the real hook
// entry points: a Runner per event, Claude Code payloads, and Claude Code
// transcripts whose replies carry control lines and harness markup.
type twoProjects struct {
	t     *testing.T
	v     *vault.Vault
	root  string
	dirs  map[string]string // project name → its folder
	clock time.Time
	n     int // transcript lines written, for unique uuids
	// played are the sessions played, with the commits each made.
	played []playedSession
}

type playedSession struct {
	session        string
	turns, commits int
}

// newTwoProjects makes the vault and the two project folders.
func newTwoProjects(t *testing.T) *twoProjects {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not found")
	}
	root := t.TempDir()
	v, _, err := vault.Init(filepath.Join(root, "memvault-home", vault.DirName))
	if err != nil {
		t.Fatal(err)
	}
	w := &twoProjects{t: t, v: v, root: root, dirs: map[string]string{}, clock: time.Now().Add(-time.Hour)}
	for _, name := range []string{"alpha", "beta"} {
		// The folders are named otherwise than the remotes: the thread is
		// the remote's name (scope.ProjectThread).
		dir := filepath.Join(root, "src", name+"-checkout")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{{"init", "-q"}, {"remote", "add", "origin", "git@example.com:acme/" + name + ".git"}} {
			cmd := exec.Command("git", args...)
			cmd.Dir = dir
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("git %v: %v\n%s", args, err, out)
			}
		}
		w.dirs[name] = dir
	}
	return w
}

// runner is the runner of one hook event, as `memvault hook claude-code`
// makes it.
func (w *twoProjects) runner() *Runner {
	return &Runner{V: w.v, Harness: mustHarness(w.t, "claude-code"), Agent: "default", Start: time.Now()}
}

// hook runs one event of a Claude Code session in project's folder and
// returns what it injects.
func (w *twoProjects) hook(project, session string, ev Event, p Payload) string {
	w.t.Helper()
	p.SessionID, p.CWD = session, w.dirs[project]
	if p.TranscriptPath == "" {
		p.TranscriptPath = w.transcriptPath(session)
	}
	out, err := w.runner().Run(ev, p)
	if err != nil {
		w.t.Fatalf("%s %s %s: %v", project, session, ev, err)
	}
	return out
}

func (w *twoProjects) transcriptPath(session string) string {
	return filepath.Join(w.root, "claude", session+".jsonl")
}

// say appends one Claude Code transcript line of role ("user" or
// "assistant") to session's transcript file.
func (w *twoProjects) say(project, session, role, text string) {
	w.t.Helper()
	w.n++
	w.clock = w.clock.Add(time.Second)
	var content any = text
	if role == "assistant" {
		content = []map[string]string{{"type": "text", "text": text}}
	}
	line, _ := json.Marshal(map[string]any{
		"type": role, "uuid": fmt.Sprintf("u-%s-%d", session, w.n), "sessionId": session, "cwd": w.dirs[project],
		"timestamp": w.clock.UTC().Format(time.RFC3339Nano),
		"message":   map[string]any{"role": role, "content": content},
	})
	p := w.transcriptPath(session)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		w.t.Fatal(err)
	}
	f, err := os.OpenFile(p, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		w.t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(append(line, '\n')); err != nil {
		w.t.Fatal(err)
	}
}

// session plays a whole Claude Code session in project: start, then per
// turn the prompt (submitted, then in the transcript), the reply and the
// turn's stop, then the session's end. It returns what the start injected.
func (w *twoProjects) session(project, session string, turns ...[2]string) string {
	w.t.Helper()
	before := w.commits()
	defer func() { w.played = append(w.played, playedSession{session, len(turns), w.commits() - before}) }()
	start := w.hook(project, session, SessionStart, Payload{Source: "startup"})
	for _, turn := range turns {
		w.hook(project, session, PromptSubmit, Payload{Prompt: turn[0]})
		w.say(project, session, "user", turn[0])
		w.say(project, session, "assistant", turn[1])
		w.hook(project, session, Stop, Payload{LastAssistant: turn[1]})
	}
	w.hook(project, session, SessionEnd, Payload{})
	// What the detached worker does after a session end (the hooks of the
	// binary start it; a Runner without Worker leaves the queue to `jobs
	// run`): the summary a budget deferred, the refreshes behind it.
	runQueue(w.t, w.v)
	return start
}

// cont runs a person's CLI-level continuity command (decide, learn,
// next, done) in thread, through the library the CLI calls.
func (w *twoProjects) cont(thread string, fn func(ct *continuity.ContinuityTx) error) {
	w.t.Helper()
	opts := continuity.ContinuityOptions{TxOptions: vault.TxOptions{Command: "test", Source: "cli"}, Thread: thread}
	if _, err := continuity.UpdateContinuity(w.v, opts, fn); err != nil {
		w.t.Fatal(err)
	}
}

func (w *twoProjects) remember(in memory.Input) {
	w.t.Helper()
	if _, err := w.v.Update(vault.TxOptions{Command: "test", Source: "cli"}, func(tx *vault.Tx) error {
		_, err := memory.Remember(tx, in)
		return err
	}); err != nil {
		w.t.Fatal(err)
	}
}

// rowID is the id of the live row whose text starts with prefix.
func (w *twoProjects) rowID(prefix string) string {
	w.t.Helper()
	st, err := w.v.LoadState()
	if err != nil {
		w.t.Fatal(err)
	}
	for i := len(st.Rows) - 1; i >= 0; i-- {
		if strings.HasPrefix(st.Rows[i].Text, prefix) {
			return st.Rows[i].ID
		}
	}
	w.t.Fatalf("no row %q", prefix)
	return ""
}

// commits is the number of commits of the vault's repository.
func (w *twoProjects) commits() int {
	w.t.Helper()
	cmd := exec.Command("git", "rev-list", "--count", "HEAD")
	cmd.Dir = w.v.Root
	out, err := cmd.Output()
	if err != nil {
		w.t.Fatalf("git rev-list: %v", err)
	}
	var n int
	fmt.Sscan(string(out), &n)
	return n
}

// decisionID is the protocol id (D3) of the active decision whose text
// starts with prefix; learningID the same for a learning.
func (w *twoProjects) decisionID(prefix string) string {
	w.t.Helper()
	c, err := continuity.LoadContinuity(w.v)
	if err != nil {
		w.t.Fatal(err)
	}
	for _, d := range c.Decisions {
		if strings.HasPrefix(d.Decision, prefix) && d.Status == vault.StatusActive {
			return d.ID
		}
	}
	w.t.Fatalf("no decision %q", prefix)
	return ""
}

func (w *twoProjects) learningID(prefix string) string {
	w.t.Helper()
	c, err := continuity.LoadContinuity(w.v)
	if err != nil {
		w.t.Fatal(err)
	}
	for _, l := range c.Learnings {
		if strings.HasPrefix(l.Error, prefix) {
			return l.ID
		}
	}
	w.t.Fatalf("no learning %q", prefix)
	return ""
}

// tokenRE finds the token each row of the scenario carries: zqa… alpha,
// zqb… beta, zqg… no thread, zqx… a beta row that names an alpha event,
// zqh… a line a person typed into CONTINUITY.md.
var tokenRE = regexp.MustCompile(`\bzq[abghx]\d+\b`)

// twoProjectsStart is what the checks of TestTwoProjectsOneVault look at:
// the vault after the scenario and what a new session in alpha started with.
type twoProjectsStart struct {
	w        *twoProjects
	ctx      string // the session-start injection in alpha
	alpha    string // alpha's thread key
	beta     string
	linkedTo string // the alpha event the zqx row names
}

// twoProjectsChecks are the assertions of TestTwoProjectsOneVault, each a
// subtest; add new ones here.
var twoProjectsChecks = []struct {
	name  string
	check func(t *testing.T, s *twoProjectsStart)
}{
	{"every live row of alpha and every global row once", checkLiveOnce},
	{"nothing of beta but its index line", checkNothingOfBeta},
	{"nothing closed, superseded or invalidated", checkNothingGone},
	{"current task is alpha's or a global next action", checkCurrentTask},
	{"memvault context gives the same text", checkContextSame},
	{"alpha's rows are cut after the other threads' index", checkCutOrder},
	{"a prompt about beta brings nothing of beta", checkPromptNothingOfBeta},
	{"one summary node per session", checkOneSummaryPerSession},
	{"no stale head", checkNoStaleHead},
}

// TestTwoProjectsOneVault plays issue 34's two-project vault: one vault
// (MEMVAULT_DIR style) serving projects alpha and beta, folders with their
// own git remotes, through the real hook entry points (Runner.Run with
// Claude Code payloads and transcripts whose replies hold DECISION:,
// NEXT:, BLOCKER:, DONE: and LEARNED: lines and whose prompts hold harness
// markup), with a person's CLI corrections between the sessions (a
// decision superseded, a learning invalidated, a next action done), a
// beta row that names an alpha event (an explicit link), and a line a
// person typed into CONTINUITY.md. A new session in alpha must then be
// injected every live row of alpha and every global row once, nothing of
// beta but its one index line, and nothing closed, superseded or
// invalidated (twoProjectsChecks).
//
// After each session end the job queue is run, as the detached worker the
// binary's hooks start would run it, so "no stale head" and "one summary
// node per session" are checked as a person's machine would leave them.
//
// TODO (issue 34, "A git log of memory"; add it to twoProjectsChecks when
// it passes): "commits per session within K + 2": for each session of
// s.w.played, playedSession.commits ≤ K + 2, K being its turns whose reply
// records memory (every turn of this scenario records some, so K =
// playedSession.turns). Today a session of one recording turn makes 4 to
// 5 commits and one of two makes 6 to 7 (session.started, the transcript,
// the summary, continuity.session, the refreshes; the test logs "commits
// per session" when it fails or runs with -v).
func TestTwoProjectsOneVault(t *testing.T) {
	t.Parallel()
	w := newTwoProjects(t)
	s := playTwoProjects(t, w)
	for _, c := range twoProjectsChecks {
		t.Run(c.name, func(t *testing.T) { c.check(t, s) })
	}
	if t.Failed() {
		t.Logf("alpha's session started with:\n%s", s.ctx)
	}
}

// playTwoProjects plays the scenario and starts the session in alpha.
func playTwoProjects(t *testing.T, w *twoProjects) *twoProjectsStart {
	const (
		alpha = "project:alpha"
		beta  = "project:beta"
	)
	w.session("beta", "b1",
		[2]string{"<system-reminder>the beta env</system-reminder> plan beta",
			"Planned.\nDECISION: beta keeps its data in sqlite zqb1 | one file is enough\nNEXT: beta write the csv importer zqb2\nBLOCKER: beta waits on the vendor api keys zqb3"})
	// Global rows, a person's, from no project.
	w.remember(memory.Input{Kind: "constraint", Text: "never push to main on Fridays zqg1"})
	w.cont("", func(ct *continuity.ContinuityTx) error { return ct.Next("renew the shared domain zqg2", false) })
	w.cont("", func(ct *continuity.ContinuityTx) error {
		_, err := ct.Decide(continuity.DecideInput{Decision: "every project uses semver zqg3"})
		return err
	})
	w.cont("", func(ct *continuity.ContinuityTx) error {
		_, err := ct.Learn(continuity.LearnInput{Error: "ci caches break on lockfile changes zqg4", Prevention: "key the cache on the lockfile"})
		return err
	})
	w.session("alpha", "a1",
		[2]string{"<command-name>/compact</command-name> <command-message>compact</command-message> plan the alpha schema",
			"Sure.\nDECISION: alpha stores users in postgres 16 zqa1 | the ops team runs it\nNEXT: alpha migrate the users table zqa2\nBLOCKER: alpha staging certificate expired zqa3"},
		[2]string{"<system-reminder>ignore this</system-reminder> what else for alpha?",
			"DECISION: alpha serves the api over grpc zqa4\nNEXT: alpha write the rollback script zqa5\n" +
				"LEARNED: alpha migrations lock the table zqa6 | no concurrent index | build indexes concurrently\n" +
				"LEARNED: alpha fixtures drift from prod zqa7 | hand edits | regenerate them nightly"})
	linked := w.rowID("alpha migrate the users table zqa2")
	w.session("beta", "b2",
		[2]string{"beta again", "DECISION: beta ships weekly zqb5\nNEXT: beta second step zqb4"})
	w.remember(memory.Input{Kind: "blocker", Thread: beta, Text: "the importer waits for " + linked + " to land zqx1"})
	// Naming an event is a link only to the event's thread: beta's own, or
	// an alpha id inside a word, brings nothing into alpha.
	w.remember(memory.Input{Kind: "next", Thread: beta, Text: "beta after " + w.rowID("beta ships weekly") + " and x" + linked + " zqb7"})
	// A person's corrections, in alpha.
	w.cont(alpha, func(ct *continuity.ContinuityTx) error {
		_, err := ct.Decide(continuity.DecideInput{Decision: "alpha serves the api over http json zqa8", Supersedes: w.decisionID("alpha serves the api over grpc")})
		return err
	})
	w.cont(alpha, func(ct *continuity.ContinuityTx) error {
		_, err := ct.Invalidate(w.learningID("alpha fixtures drift"), "they are generated now")
		return err
	})
	w.cont(alpha, func(ct *continuity.ContinuityTx) error { return ct.Done("alpha write the rollback script zqa5") })
	w.session("alpha", "a2",
		[2]string{"continue alpha", "Renewed it.\nDONE: alpha staging certificate expired zqa3\nNEXT: alpha tune the connection pool zqa9"})
	w.session("beta", "b3",
		[2]string{"<local-command-stdout>ok</local-command-stdout> beta once more", "NEXT: beta third step zqb6"})
	// A person types a next action into CONTINUITY.md.
	cm := filepath.Join(w.v.Root, vault.ContinuityHead)
	data, err := os.ReadFile(cm)
	if err != nil {
		t.Fatal(err)
	}
	typed := strings.Replace(string(data), "## Next Actions\n\n", "## Next Actions\n\n- ask ops about the shared runner zqh1\n", 1)
	if typed == string(data) {
		t.Fatalf("CONTINUITY.md has no Next Actions section:\n%s", data)
	}
	if err := os.WriteFile(cm, []byte(typed), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range w.played {
		t.Logf("commits per session: %s made %d commits in %d turns", p.session, p.commits, p.turns)
	}
	ctx := w.hook("alpha", "a3", SessionStart, Payload{Source: "startup"})
	return &twoProjectsStart{w: w, ctx: ctx, alpha: alpha, beta: beta, linkedTo: linked}
}

// liveTokens are the tokens of the rows that hold, by thread.
func (s *twoProjectsStart) liveTokens(t *testing.T) map[string][]string {
	st, err := s.w.v.LoadState()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, r := range st.Rows {
		if !r.Holds() || !heads.ContentKinds[r.EffectiveKind()] {
			continue
		}
		for _, tok := range tokenRE.FindAllString(r.Text, -1) {
			out[r.Thread] = append(out[r.Thread], tok)
		}
	}
	return out
}

func checkLiveOnce(t *testing.T, s *twoProjectsStart) {
	live := s.liveTokens(t)
	want := []string{"zqa1", "zqa2", "zqa6", "zqa8", "zqa9", "zqg1", "zqg2", "zqg3", "zqg4"}
	got := append(append([]string(nil), live[s.alpha]...), live[""]...)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("the scenario left live rows %v in alpha and of no thread, want %v (a control line or a correction was not recorded)", got, want)
	}
	for _, tok := range append(got, "zqx1", "zqh1") {
		if n := strings.Count(s.ctx, tok); n != 1 {
			t.Errorf("%s is injected %d times, want once", tok, n)
		}
	}
}

func checkNothingOfBeta(t *testing.T, s *twoProjectsStart) {
	st, err := s.w.v.LoadState()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range st.Rows {
		if r.Thread != s.beta || strings.Contains(r.Text, "zqx1") {
			continue
		}
		if strings.Contains(s.ctx, r.ID) {
			t.Errorf("beta's %s %s is injected", r.Kind, r.ID)
		}
		for _, tok := range tokenRE.FindAllString(r.Text, -1) {
			if strings.Contains(s.ctx, tok) {
				t.Errorf("beta's %s %q is injected", r.Kind, r.Text)
			}
		}
	}
	for _, word := range []string{"csv importer", "vendor api keys", "sqlite", "beta second step", "beta third step"} {
		if strings.Contains(s.ctx, word) {
			t.Errorf("beta's %q is injected", word)
		}
	}
	ix, err := node.Load(s.w.v.Files())
	if err != nil {
		t.Fatal(err)
	}
	betaNodes := ix.Select(node.Filter{Thread: s.beta, All: true})
	if len(betaNodes) == 0 {
		t.Error("beta's sessions left no node: the check below checks nothing")
	}
	for _, n := range betaNodes {
		if strings.Contains(s.ctx, n.ID) {
			t.Errorf("beta's node %s (%s) is injected", n.ID, n.Kind)
		}
	}
	var lines []string
	for _, line := range strings.Split(s.ctx, "\n") {
		if strings.Contains(line, s.beta) && !strings.Contains(line, "zqx1") {
			lines = append(lines, line)
		}
	}
	if len(lines) != 1 || !strings.HasPrefix(lines[0], "- "+s.beta+": ") || !strings.HasSuffix(lines[0], "→ threads/project/beta.md") {
		t.Errorf("beta is named by %q, want its one index line", lines)
	}
}

func checkNothingGone(t *testing.T, s *twoProjectsStart) {
	for tok, what := range map[string]string{"zqa3": "a blocker a DONE: line closed", "zqa4": "a superseded decision",
		"zqa5": "a next action `done` closed", "zqa7": "an invalidated learning"} {
		if strings.Contains(s.ctx, tok) {
			t.Errorf("%s (%s) is injected", what, tok)
		}
	}
	for _, markup := range []string{"<command-name>", "<system-reminder>", "<local-command-stdout>"} {
		if strings.Contains(s.ctx, markup) {
			t.Errorf("harness markup %s is injected", markup)
		}
	}
}

// checkCurrentTask: the vault's first next action is beta's; alpha's
// session is shown the first one in its scope, the global zqg2.
func checkCurrentTask(t *testing.T, s *twoProjectsStart) {
	_, after, ok := strings.Cut(s.ctx, "## Current Task\n")
	if !ok {
		t.Fatal("no Current Task injected")
	}
	if line, _, _ := strings.Cut(after, "\n"); !strings.Contains(line, "zqg2") {
		t.Errorf("Current Task is %q, want the global next action zqg2 (beta's comes first in the vault)", line)
	}
}

func checkContextSame(t *testing.T, s *twoProjectsStart) {
	got := StartContext(s.w.v, "default", s.alpha, s.w.dirs["alpha"], mustHarness(t, "claude-code").ContextLimit)
	if got != s.ctx {
		t.Errorf("memvault context differs from session start:\n%s", got)
	}
}

// checkCutOrder: within a budget that holds all but the index of other
// threads, every row of alpha is still there; the index is what goes.
func checkCutOrder(t *testing.T, s *twoProjectsStart) {
	i := strings.LastIndex(s.ctx, "\n\n# Other threads")
	if i < 0 || strings.Contains(s.ctx[i+2:], "\n\n") {
		t.Fatalf("the other threads' index is not the last piece:\n%s", s.ctx)
	}
	limit := len(s.ctx) - 1
	cut := StartContext(s.w.v, "default", s.alpha, s.w.dirs["alpha"], limit)
	if strings.Contains(cut, "- "+s.beta+":") || !strings.Contains(cut, "left out to stay within") {
		t.Errorf("cut to %d characters, beta's index line is kept:\n%s", limit, cut)
	}
	for _, tok := range s.liveTokens(t)[s.alpha] {
		if !strings.Contains(cut, tok) {
			t.Errorf("cut to %d characters, alpha's %s is left out before the index", limit, tok)
		}
	}
}

func checkPromptNothingOfBeta(t *testing.T, s *twoProjectsStart) {
	out := s.w.hook("alpha", "a3", PromptSubmit, Payload{Prompt: "should we keep data in sqlite and write a csv importer once the vendor api keys arrive? beta second step"})
	for _, word := range []string{"zqb", "sqlite", "csv importer", "vendor api keys"} {
		if strings.Contains(out, word) {
			t.Errorf("prompt-submit in alpha brought beta's %q:\n%s", word, out)
		}
	}
}

func checkOneSummaryPerSession(t *testing.T, s *twoProjectsStart) {
	ix, err := node.Load(s.w.v.Files())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range s.w.played {
		if n := len(ix.Select(node.Filter{Session: p.session, Kind: node.SessionSummary, All: true})); n != 1 {
			t.Errorf("session %s has %d session-summary nodes, want 1", p.session, n)
		}
	}
}

func checkNoStaleHead(t *testing.T, s *twoProjectsStart) {
	stale, err := heads.StaleHeads(s.w.v)
	if err != nil {
		t.Fatal(err)
	}
	if len(stale) > 0 {
		t.Errorf("stale heads after the scenario: %v", stale)
	}
}

// BenchmarkStartContextManyThreads measures session start's context in a
// vault of 40 project threads, 1,000 learnings and 300 decisions: what
// scoping the injection (context_scope.go) adds is the protocol's state
// read for the threads of CONTINUITY.md's rows.
//
//	go test -run '^$' -bench StartContextManyThreads -benchtime 200x ./hooks/
func BenchmarkStartContextManyThreads(b *testing.B) {
	root := b.TempDir()
	v, _, err := vault.Init(filepath.Join(root, vault.DirName))
	if err != nil {
		b.Fatal(err)
	}
	if _, err := v.Update(vault.TxOptions{Command: "bench"}, func(tx *vault.Tx) error {
		for i := range 40 {
			th := fmt.Sprintf("project:p%02d", i)
			for j := range 20 {
				kind := []string{"next", "blocker", "decision", "fact"}[j%4]
				if _, err := memory.Remember(tx, memory.Input{Kind: kind, Thread: th, Text: fmt.Sprintf("%s row %d of %s", kind, j, th)}); err != nil {
					return err
				}
			}
		}
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	if _, err := continuity.UpdateContinuity(v, continuity.ContinuityOptions{TxOptions: vault.TxOptions{Command: "bench"}}, func(ct *continuity.ContinuityTx) error {
		for i := range 1000 {
			if _, err := ct.Learn(continuity.LearnInput{Error: fmt.Sprintf("failure number %d happened", i), Prevention: "prevent it"}); err != nil {
				return err
			}
		}
		for i := range 300 {
			if _, err := ct.Decide(continuity.DecideInput{Decision: fmt.Sprintf("decision number %d", i)}); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	if _, err := heads.Refresh(v, heads.RefreshOptions{Memory: true, AllThreads: true}); err != nil {
		b.Fatal(err)
	}
	StartContext(v, "default", "project:p07", "", DefaultContextLimit) // the derived states, built once
	b.ResetTimer()
	for range b.N {
		StartContext(v, "default", "project:p07", "", DefaultContextLimit)
	}
}

// A row's thread is read only from where a renderer writes it, and an
// id counts as named only as a whole word: hostile and hand-written
// lines do not pass for another thread's, nor hide one.
func TestScopeReadsThreadsOfLines(t *testing.T) {
	const e1, e2 = "e_01m8ka2jczxbayr291ppmj0erd", "e_01m8ka2jdrt3xr0p34khqgnbn6"
	cases := []struct {
		line string
		want []string
	}{
		{"- beta waits (project:beta, `" + e1 + "`)", []string{"project:beta"}},
		{"- never on Fridays (`" + e1 + "`)", nil}, // no thread named: found by id
		{"- `n_01m8k6myfsrc8nyxkmnsdasesf` session-summary, project:alpha, project:beta, 2026-11-29: a: b", []string{"project:alpha", "project:beta"}},
		{"- `n_01m8k6myfsrc8nyxkmnsdasesf` compaction, 2026-11-29: no thread", []string{""}},
		{"- says (project:beta, `" + e1 + "`) then ends (`" + e2 + "`)", nil},
		{"- (Project:Beta, `" + e1 + "`)", nil},
		{"- (project:beta x, `" + e1 + "`)", nil},
		{"- project:beta: blocked (1 blocker) → threads/project/beta.md", []string{"project:beta"}},
		{"3. beta write the csv importer", nil},
	}
	for _, c := range cases {
		if got := lineThreads(parseRow(c.line)); !slices.Equal(got, c.want) {
			t.Errorf("lineThreads(%q) = %q, want %q", c.line, got, c.want)
		}
	}
	if got := namedIDs("waits for " + e1 + ", not x" + e2 + " nor " + e2[:10]); !slices.Equal(got, []string{e1}) {
		t.Errorf("namedIDs = %q, want only the whole id", got)
	}
}
