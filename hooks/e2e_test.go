// End-to-end tests of the hooks against the real harness binaries, offline.
//
// Each test installs memvault into a harness with `memvault install`, runs
// the harness for a turn or two against the fake model server of
// vault/vaulttest/e2etest (on 127.0.0.1, port 0), and checks what reached
// the model and what the vault recorded. They run only when told where a
// harness is (MEMVAULT_E2E_CLAUDE, …: e2etest's doc lists them), and each
// runs in a network namespace with only loopback up where it can.
// .ci/e2e-harnesses.sh installs the pinned versions from npm and prints
// these variables. A test whose variable is unset skips with the reason.
package hooks_test

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/memvault/memvault/vault/transcript"
	"github.com/memvault/memvault/vault/vaulttest/e2etest"
)

// TestMain removes the memvault binary the end-to-end tests built.
func TestMain(m *testing.M) { e2etest.Main(m) }

// e2e is one harness test's world (e2etest.World), with the checks of
// what the hooks recorded.
type e2e struct{ *e2etest.World }

func newE2E(t *testing.T) *e2e {
	t.Helper()
	return &e2e{e2etest.New(t)}
}

// ---------------------------------------------------------------------------
// Assertions

// mindLines returns the line of a prompt that the fake model answers with a
// reply's control lines of the event-sourced mind (issue 21): a
// commitment, a claim the state contradicts (the setup's fact is no
// commitment), a reflection, and a constraint, which the default policy
// refuses from a reply. check, once the harness's hooks have read the
// reply, requires exactly their events: one commitment, one rejected claim
// with its reason, one reflection, no constraint, and one violation that
// names the refused line; the harness's turn itself went on.
func (e *e2e) mindLines() (lines string, check func()) {
	commit := "publish the changelog " + e2etest.RandWord("commitword")
	claimWord := e2etest.RandWord("claimword")
	reflect := "the fixture made the failure easy to see " + e2etest.RandWord("reflectword")
	constraint := "never deploy on a friday " + e2etest.RandWord("constraintword")
	reply := "COMMIT: " + commit +
		"\nCLAIM: commitment.open={\"id\":\"" + e.FactID + "\",\"note\":\"" + claimWord + "\"}" +
		"\nREFLECT: {\"text\":\"" + reflect + "\"}" +
		"\nCONSTRAINT: " + constraint
	lines = "\nMIND64:" + base64.StdEncoding.EncodeToString([]byte(reply))
	with := func(kind, word string) []map[string]any {
		var out []map[string]any
		for _, r := range e.Ledger(kind) {
			if text, _ := r["text"].(string); strings.Contains(text, word) {
				out = append(out, r)
			}
		}
		return out
	}
	check = func() {
		e.T.Helper()
		if n := len(with("commitment.open", commit)); n != 1 {
			e.T.Errorf("the reply's COMMIT: line made %d commitments, want 1\nhooks.log:\n%s", n, e.hooksLog())
		}
		claims := with("claim", claimWord)
		if len(claims) != 1 {
			e.T.Errorf("the reply's CLAIM: line made %d claims, want 1\nhooks.log:\n%s", len(claims), e.hooksLog())
		} else if d, _ := claims[0]["data"].(map[string]any); d["status"] != "rejected" || !strings.Contains(fmt.Sprint(d["reason"]), "not a commitment") {
			e.T.Errorf("the claim that a fact is an open commitment was not rejected with its reason: %v", d)
		}
		if n := len(with("reflection", reflect)); n != 1 {
			e.T.Errorf("the reply's REFLECT: line made %d reflections, want 1\nhooks.log:\n%s", n, e.hooksLog())
		}
		if n := len(with("constraint", constraint)); n != 0 {
			e.T.Errorf("the reply's CONSTRAINT: line was recorded (%d constraints): the default policy forbids it from a control line", n)
		}
		var refused int
		for _, r := range e.Ledger("violation") {
			d, _ := r["data"].(map[string]any)
			if d["kind"] == "constraint" && d["source"] == "control" && d["control"] != nil && r["session"] != "" {
				refused++
			}
		}
		if refused != 1 {
			e.T.Errorf("%d violations name the reply's refused CONSTRAINT: line, want 1\nhooks.log:\n%s", refused, e.hooksLog())
		}
	}
	return lines, check
}

// requireClosedNext fails unless the next action with text is in the
// ledger and closed (a DONE: line of a reply closed it), and is gone from
// what holds now.
func (e *e2e) requireClosedNext(text string) {
	e.T.Helper()
	var found map[string]any
	for _, r := range e.Ledger("next") {
		if r["text"] == text {
			found = r
		}
	}
	if found == nil {
		e.T.Fatalf("the NEXT: line of a reply recorded no next action %q\nhooks.log:\n%s", text, e.hooksLog())
	}
	if found["status"] != "closed" {
		e.T.Fatalf("the DONE: line of a reply did not close the next action %q: status %v\nhooks.log:\n%s", text, found["status"], e.hooksLog())
	}
	if strings.Contains(e.Memvault("ledger", "--current", "--kind", "next"), text) {
		e.T.Fatalf("ledger --current still lists the closed next action %q", text)
	}
}

// requireMarkIn asserts that some model request in reqs carries the
// remembered fact's marker, and returns the first such request.
func (e *e2e) requireMarkIn(what string, reqs []e2etest.LoggedRequest) e2etest.LoggedRequest {
	e.T.Helper()
	for _, r := range reqs {
		if strings.Contains(r.Body, e.Mark) {
			return r
		}
	}
	e.T.Fatalf("%s: the session-start context (marker %s) reached none of %d model requests (log: %s)",
		what, e.Mark, len(reqs), filepath.Join(e.Dir, "requests.jsonl"))
	return e2etest.LoggedRequest{}
}

// requirePromptInTranscript asserts that the session is listed for the
// default agent and that its transcript holds the prompt word.
func (e *e2e) requirePromptInTranscript(session, word string) {
	e.T.Helper()
	rows := e.Sessions()
	found := false
	for _, r := range rows {
		if fmt.Sprint(r["session"]) == session && fmt.Sprint(r["agent"]) == "default" {
			found = true
		}
	}
	if !found {
		e.T.Fatalf("memvault sessions --json lists no agent default / session %s: %v", session, rows)
	}
	out := e.Memvault("transcript", "show", "--json", "--session", session)
	var msgs []struct {
		N    int    `json:"n"`
		Role string `json:"role"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal([]byte(out), &msgs); err != nil {
		e.T.Fatalf("transcript show --json: %v\n%s", err, e2etest.ClipHead(out))
	}
	var with []int
	for _, m := range msgs {
		if m.Role != "user" {
			continue
		}
		if strings.Contains(m.Text, word) {
			with = append(with, m.N)
		}
		// Memory memvault injected must not come back as the user's words.
		if strings.Contains(m.Text, word) && strings.Contains(m.Text, e.Mark) {
			e.T.Errorf("session %s: user message #%d stores memvault's injected context with the prompt:\n%s", session, m.N, e2etest.ClipHead(m.Text))
		}
	}
	switch {
	case len(with) == 0:
		e.T.Fatalf("transcript of session %s has no user message with the prompt word %s:\n%s", session, word, e2etest.ClipHead(out))
	case len(with) > 1:
		e.T.Errorf("transcript of session %s stores the prompt with %s %d times (user messages %v): the hook's copy and the harness transcript's copy are not merged",
			session, word, len(with), with)
	}
}

// sessionStarts returns the sources of the session.started events of a
// session, in order.
func (e *e2e) sessionStarts(session string) []string {
	var out []string
	for _, ev := range e.Ledger("session.started") {
		if fmt.Sprint(ev["session"]) == session {
			out = append(out, fmt.Sprint(e2etest.MapOf(ev["data"])["source"]))
		}
	}
	return out
}

// requireSummary asserts a session-summary node for the session. When the
// session end left the summary as a deferred job, a later hook event runs
// it: triggerDeferred (if not nil) is that event; the test says when it was
// needed.
func (e *e2e) requireSummary(session string, triggerDeferred func()) {
	e.T.Helper()
	// The session end left its summary, refresh and commit to the detached
	// worker (docs/HOOKS.md, "Jobs"): `jobs run` waits for it, and runs
	// what it left.
	if out, err := e.MemvaultErr("jobs", "run"); err != nil {
		e.T.Fatalf("memvault jobs run: %v\n%s", err, out)
	}
	if len(e.Nodes("session-summary", session)) > 0 {
		e.T.Logf("session-summary node for %s: made by the session end's jobs", session)
		e.requireHeadLists(session)
		return
	}
	if triggerDeferred == nil {
		e.T.Fatalf("no session-summary node for session %s", session)
	}
	triggerDeferred()
	if len(e.Nodes("session-summary", session)) == 0 {
		e.T.Fatalf("no session-summary node for session %s, even after one more hook event ran the deferred jobs\nhooks.log:\n%s\njobs: %v",
			session, e.hooksLog(), e.jobs())
	}
	e.T.Logf("session-summary node for %s: made by a deferred job that the next hook event ran", session)
	e.requireHeadLists(session)
}

// requireHeadLists asserts that MEMORY.md was refreshed after the session
// end: it lists the session's latest summary node and the remembered fact.
func (e *e2e) requireHeadLists(session string) {
	e.T.Helper()
	nodes := e.Nodes("session-summary", session)
	id := fmt.Sprint(nodes[len(nodes)-1]["id"])
	// One summary of the session counts, and no harness markup is in it
	// (issue 34).
	if len(nodes) != 1 {
		e.T.Errorf("session %s lists %d session summaries, want 1", session, len(nodes))
	}
	body, err := os.ReadFile(filepath.Join(e.Proj, ".memory", filepath.FromSlash(fmt.Sprint(nodes[len(nodes)-1]["path"]))))
	if err != nil {
		e.T.Errorf("the summary node's file: %v", err)
	}
	for _, tag := range transcript.MarkupTags() {
		if strings.Contains(string(body), tag) {
			e.T.Errorf("the summary node of session %s holds harness markup %s:\n%s", session, tag, body)
		}
	}
	data, err := os.ReadFile(filepath.Join(e.Proj, ".memory", "MEMORY.md"))
	if err != nil {
		e.T.Errorf("no MEMORY.md after the session end: %v", err)
		return
	}
	if !strings.Contains(string(data), id) || !strings.Contains(string(data), e.Mark) {
		e.T.Errorf("MEMORY.md after the session end lacks the summary node %s or the fact %s:\n%s", id, e.Mark, data)
	}
}

func (e *e2e) jobs() []string {
	ents, _ := os.ReadDir(filepath.Join(e.Proj, ".memory", ".state", "jobs"))
	var names []string
	for _, d := range ents {
		names = append(names, d.Name())
	}
	return names
}

func (e *e2e) hooksLog() string {
	data, _ := os.ReadFile(filepath.Join(e.Proj, ".memory", ".logs", "hooks.log"))
	return string(data)
}

// holdLock takes the vault's write lock the way memvault does (flock on
// .memory/.locks/vault.lock) and returns its release.
func (e *e2e) holdLock() func() {
	e.T.Helper()
	p := filepath.Join(e.Proj, ".memory", ".locks", "vault.lock")
	os.MkdirAll(filepath.Dir(p), 0o700)
	f, err := os.OpenFile(p, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		e.T.Fatal(err)
	}
	// The background worker a session end started, or the automatic pack
	// after it, may hold the lock a while yet: wait for it, as a writer
	// would, rather than fail the test on a lock held for a good reason.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) || time.Now().After(deadline) {
			e.T.Fatalf("flock %s: %v", p, err)
		}
	}
	return func() {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}
}

// requireBusyLogged asserts that hooks.log recorded the busy vault since
// line n of the log.
func (e *e2e) requireBusyLogged(before string) {
	e.T.Helper()
	log := strings.TrimPrefix(e.hooksLog(), before)
	if !strings.Contains(log, "busy") {
		e.T.Errorf("a hook ran against the locked vault but hooks.log says nothing about a busy vault:\n%s", log)
	}
}

// ---------------------------------------------------------------------------
// Claude Code

// newClaudeE2E finds the claude binary and sets up a run against the fake
// model with memvault installed at user scope; nil when the test runs
// inside its network namespace (inNetns has run it there).
func newClaudeE2E(t *testing.T) (string, *e2e) {
	claude := e2etest.HarnessBin(t, "MEMVAULT_E2E_CLAUDE", "claude-code")
	if e2etest.InNetns(t) {
		return claude, nil
	}
	e := newE2E(t)
	e.Setenv("ANTHROPIC_BASE_URL="+e.Model.URL(), "ANTHROPIC_API_KEY=sk-fake",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1")
	e.Install("claude-code", "--scope", "user")
	return claude, e
}

func TestE2EClaudeCode(t *testing.T) {
	claude, e := newClaudeE2E(t)
	if e == nil {
		return
	}

	type ccOut struct {
		SessionID string `json:"session_id"`
		Result    string `json:"result"`
		IsError   bool   `json:"is_error"`
	}
	parse := func(r e2etest.RunResult) ccOut {
		var o ccOut
		if err := json.Unmarshal([]byte(strings.TrimSpace(r.Stdout)), &o); err != nil {
			t.Fatalf("claude output is not JSON: %v\n%s\nstderr: %s", err, r.Stdout, r.Stderr)
		}
		if o.IsError {
			t.Fatalf("claude reported an error: %s", r.Stdout)
		}
		return o
	}

	// Turn 1: a new session. The start context reaches the first request.
	// The reply decides something (the fake model echoes the line).
	word1 := e2etest.RandWord("promptword")
	decision := "keep the release branch frozen " + e2etest.RandWord("decisionword")
	next := "write the release notes " + e2etest.RandWord("nextword")
	mind, checkMind := e.mindLines()
	r := e.MustRun(90*time.Second, claude, "-p", "hello, first turn "+word1+"\nDECISION: "+decision+"\nNEXT: "+next+mind, "--output-format", "json")
	sid := parse(r).SessionID
	if sid == "" {
		t.Fatalf("no session_id in %s", r.Stdout)
	}
	e.requireMarkIn("startup", e.Model.Requests("/v1/messages?"))
	e.requirePromptInTranscript(sid, word1)

	// Turn 2: /compact in the same session (manual compaction).
	before := e.Model.Count()
	e.MustRun(90*time.Second, claude, "-p", "/compact", "--resume", sid, "--output-format", "json")
	if len(e.Nodes("compaction", sid)) == 0 {
		t.Fatalf("no compaction node for session %s after /compact\nhooks.log:\n%s", sid, e.hooksLog())
	}
	starts := e.sessionStarts(sid)
	if !contains(starts, "compact") {
		t.Fatalf("no session-start with source compact recorded for %s: %v", sid, starts)
	}

	// Turn 3: the first request after the compaction carries the context
	// that SessionStart(compact) re-injected.
	word3 := e2etest.RandWord("promptword")
	e.MustRun(90*time.Second, claude, "-p", "after the compaction "+word3+"\nDONE: "+next, "--resume", sid, "--output-format", "json")
	after := e.Model.Requests("/v1/messages?")
	var post []e2etest.LoggedRequest
	for _, q := range after {
		if q.N > before && !strings.Contains(q.Body, "CRITICAL: Respond with TEXT ONLY") {
			post = append(post, q)
		}
	}
	req := e.requireMarkIn("after /compact", withWord(post, word3))
	// The compaction dropped the history, and the fake summary does not
	// hold the marker: after it, the marker comes once from
	// SessionStart(compact) (kept in the new history) and once from this
	// run's SessionStart(resume). Both render as "SessionStart hook
	// additional context" (Claude Code does not name the source there).
	if n := strings.Count(req.Body, e.Mark); n < 2 {
		t.Errorf("the first request after /compact (#%d) carries the marker %d time(s); want 2 (compact re-injection + resume)", req.N, n)
	}
	// The decision made before the compaction is in the memory injected
	// after it (the history that held it is gone).
	if !strings.Contains(req.Body, decision) {
		t.Errorf("the first request after /compact (#%d) does not carry the decision made before it (%q)", req.N, decision)
	}
	e.requirePromptInTranscript(sid, word3)
	// The reply's DONE: line closed the next action its first reply set.
	e.requireClosedNext(next)

	// Session end: each -p run ends the session; the summary node follows.
	e.requireSummary(sid, func() {
		e.Hook("claude-code", "session-start", map[string]any{"session_id": "e2e-trigger", "cwd": e.Proj,
			"hook_event_name": "SessionStart", "source": "startup"})
	})
	checkMind()
	e.RequireFsck()

	// Fail-open: with the vault lock held by someone else, a whole turn
	// (start, prompt, stop, end) still answers.
	release := e.holdLock()
	logBefore := e.hooksLog()
	r = e.MustRun(60*time.Second, claude, "-p", "turn with a locked vault", "--output-format", "json")
	o := parse(r)
	release()
	if !strings.Contains(o.Result, "Fake answer") {
		t.Fatalf("turn with a locked vault: unexpected result %q", o.Result)
	}
	t.Logf("locked-vault turn took %.1fs", r.Took.Seconds())
	e.requireBusyLogged(logBefore)
	e.RequireFsck()
}

// TestE2EClaudeCodeCapturesWithABrokenConfig: a memvault.toml that does
// not parse refuses structured writes, but a real Claude Code turn still
// has its prompt stored and committed, and the model is told the vault
// needs fixing (docs/HOOKS.md, "Capture never stops").
func TestE2EClaudeCodeCapturesWithABrokenConfig(t *testing.T) {
	claude, e := newClaudeE2E(t)
	if e == nil {
		return
	}
	config := filepath.Join(e.Proj, ".memory", "memvault.toml")
	good, err := os.ReadFile(config)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(config, append(append([]byte{}, good...), "\n[heads\n"...), 0o600); err != nil {
		t.Fatal(err)
	}

	word := e2etest.RandWord("promptword")
	decision := "wait for the fix " + e2etest.RandWord("decisionword") // the fake model echoes it
	r := e.MustRun(90*time.Second, claude, "-p", "a turn under a broken config "+word+"\nDECISION: "+decision, "--output-format", "json")
	var o struct {
		SessionID string `json:"session_id"`
	}
	if err := json.Unmarshal([]byte(strings.TrimSpace(r.Stdout)), &o); err != nil || o.SessionID == "" {
		t.Fatalf("claude output: %v\n%s\nstderr: %s", err, r.Stdout, r.Stderr)
	}
	req := e.requireMarkIn("broken config", e.Model.Requests("/v1/messages?"))
	if !strings.Contains(req.Body, "memvault: WARNING: memvault.toml does not parse") {
		t.Errorf("the start context reaching the model (#%d) does not warn about memvault.toml", req.N)
	}
	if _, err := e.MemvaultErr("remember", "refused"); err == nil {
		t.Fatal("remember succeeded with a broken memvault.toml")
	}
	if status := e.Git("-C", ".memory", "status", "--porcelain"); strings.Contains(status, "transcripts/") {
		t.Errorf("the session's transcript was not committed at its end:\n%s", status)
	}
	if log := e.hooksLog(); !strings.Contains(log, "structured writes refused, transcript lines still captured") {
		t.Errorf("hooks.log does not say why events were refused:\n%s", log)
	}

	// Fixed by hand: the prompt is there, once, and the decision follows
	// at the next stop.
	if err := os.WriteFile(config, good, 0o600); err != nil {
		t.Fatal(err)
	}
	e.requirePromptInTranscript(o.SessionID, word)
	e.Hook("claude-code", "stop", map[string]any{"session_id": o.SessionID, "cwd": e.Proj, "hook_event_name": "Stop",
		"transcript_path": transcriptPathOf(t, e, o.SessionID)})
	found := false
	for _, row := range e.Ledger("decision") {
		found = found || strings.Contains(fmt.Sprint(row["text"]), decision)
	}
	if !found {
		t.Errorf("the DECISION: line of the turn under a broken config was not recorded after the fix\nhooks.log:\n%s", e.hooksLog())
	}
	e.RequireFsck()
}

// transcriptPathOf finds Claude Code's transcript file of a session under
// the e2e home.
func transcriptPathOf(t *testing.T, e *e2e, session string) string {
	t.Helper()
	matches, _ := filepath.Glob(filepath.Join(e.Home, ".claude", "projects", "*", session+".jsonl"))
	if len(matches) != 1 {
		t.Fatalf("Claude Code's transcript of %s: %v", session, matches)
	}
	return matches[0]
}

func withWord(reqs []e2etest.LoggedRequest, word string) []e2etest.LoggedRequest {
	var out []e2etest.LoggedRequest
	for _, q := range reqs {
		if strings.Contains(q.Body, word) {
			out = append(out, q)
		}
	}
	return out
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// ---------------------------------------------------------------------------
// Codex

func TestE2ECodex(t *testing.T) {
	codex := e2etest.HarnessBin(t, "MEMVAULT_E2E_CODEX", "codex")
	if e2etest.InNetns(t) {
		return
	}
	e := newE2E(t)
	codexHome := filepath.Join(e.Home, ".codex")
	os.MkdirAll(codexHome, 0o755)
	config := filepath.Join(codexHome, "config.toml")
	os.WriteFile(config, []byte(e2etest.CodexConfig(e.Model.URL(), `env_key = "FAKE_API_KEY"`, "")), 0o644)
	e.Setenv("CODEX_HOME="+codexHome, "FAKE_API_KEY=x")
	out := e.Install("codex", "--scope", "user")
	if !strings.Contains(out, "/hooks") {
		t.Errorf("memvault install codex does not tell the user to trust the hooks in /hooks:\n%s", out)
	}
	// Trust the hooks as the user's /hooks review would, so they run
	// without --dangerously-bypass-hook-trust (untrusted hooks are skipped
	// silently: the marker check below fails if the trust is wrong).
	e2etest.CodexTrust(t, config, filepath.Join(codexHome, "hooks.json"))
	// doctor reads the same trust: none of its lines is about Codex's
	// trust now (the hooks firing below prove Codex agrees).
	if out, _ := e.MemvaultErr("doctor", "--scope", "user"); strings.Contains(out, "in Codex") {
		t.Errorf("memvault doctor still reports a Codex trust problem after the hooks were trusted:\n%s", out)
	}

	sessionID := func() string {
		var newest string
		filepath.Walk(filepath.Join(codexHome, "sessions"), func(p string, info os.FileInfo, err error) error {
			if err == nil && strings.HasPrefix(info.Name(), "rollout-") && p > newest {
				newest = p
			}
			return nil
		})
		m := regexp.MustCompile(`([0-9a-f-]{36})\.jsonl$`).FindStringSubmatch(newest)
		if m == nil {
			t.Fatalf("no Codex rollout file under %s", codexHome)
		}
		return m[1]
	}

	word1 := e2etest.RandWord("promptword")
	decision := "keep the release branch frozen " + e2etest.RandWord("decisionword")
	next := "write the release notes " + e2etest.RandWord("nextword")
	mind, checkMind := e.mindLines()
	e.MustRun(90*time.Second, codex, "exec", "--skip-git-repo-check", "hello, first turn "+word1+"\nDECISION: "+decision+"\nNEXT: "+next+mind)
	sid := sessionID()
	e.requireMarkIn("startup", e.Model.Requests("/v1/responses"))
	e.requirePromptInTranscript(sid, word1)

	// Turn 2: automatic compaction at the start of the resumed turn.
	before := e.Model.Count()
	word2 := e2etest.RandWord("promptword")
	e.MustRun(90*time.Second, codex, "exec", "--skip-git-repo-check", "-c", "model_auto_compact_token_limit=10", "resume", sid, "second turn "+word2+"\nDONE: "+next)
	if len(e.Nodes("compaction", sid)) == 0 {
		t.Fatalf("no compaction node for session %s after automatic compaction\nhooks.log:\n%s", sid, e.hooksLog())
	}
	starts := e.sessionStarts(sid)
	if !contains(starts, "compact") {
		t.Fatalf("no session-start with source compact recorded for %s: %v", sid, starts)
	}
	var post []e2etest.LoggedRequest
	for _, q := range e.Model.Requests("/v1/responses") {
		if q.N > before && strings.Contains(q.Body, word2) {
			post = append(post, q)
		}
	}
	req := e.requireMarkIn("after compaction", post)
	if n := strings.Count(req.Body, e.Mark); n < 2 {
		t.Logf("request #%d after compaction carries the marker %d time(s)", req.N, n)
	}
	// The decision made before the compaction is in the memory injected
	// after it.
	if !strings.Contains(req.Body, decision) {
		t.Errorf("the first request after compaction (#%d) does not carry the decision made before it (%q)", req.N, decision)
	}
	e.requirePromptInTranscript(sid, word2)
	e.requireClosedNext(next)
	checkMind()

	e.requireSummary(sid, func() {
		e.Hook("codex", "session-start", map[string]any{"session_id": "e2e-trigger", "cwd": e.Proj,
			"hook_event_name": "SessionStart", "source": "startup"})
	})
	e.RequireFsck()

	release := e.holdLock()
	logBefore := e.hooksLog()
	r := e.MustRun(60*time.Second, codex, "exec", "--skip-git-repo-check", "turn with a locked vault")
	release()
	if !strings.Contains(r.Stdout, "Fake answer") {
		t.Fatalf("turn with a locked vault: no answer in stdout:\n%s\nstderr: %s", r.Stdout, e2etest.ClipHead(r.Stderr))
	}
	t.Logf("locked-vault turn took %.1fs", r.Took.Seconds())
	e.requireBusyLogged(logBefore)
	e.RequireFsck()
}

// ---------------------------------------------------------------------------
// OpenCode

func TestE2EOpenCode(t *testing.T) {
	opencode := e2etest.HarnessBin(t, "MEMVAULT_E2E_OPENCODE", "opencode")
	if e2etest.InNetns(t) {
		return
	}
	e := newE2E(t)
	cfg := map[string]any{
		"$schema": "https://opencode.ai/config.json", "autoupdate": false, "share": "disabled",
		"provider": map[string]any{"fake": map[string]any{"npm": "@ai-sdk/openai-compatible", "name": "fake",
			"options": map[string]any{"baseURL": e.Model.URL() + "/v1", "apiKey": "x"},
			"models":  map[string]any{"fake-model": map[string]any{"name": "fake-model", "limit": map[string]any{"context": 100000, "output": 4096}}}}},
		"model": "fake/fake-model", "small_model": "fake/fake-model",
	}
	data, _ := json.Marshal(cfg)
	os.WriteFile(filepath.Join(e.Proj, "opencode.json"), data, 0o644)
	e.Setenv("OPENCODE_DISABLE_AUTOUPDATE=1", "OPENCODE_DISABLE_MODELS_FETCH=1", "OPENCODE_DISABLE_DEFAULT_PLUGINS=1",
		"OPENCODE_DISABLE_SHARE=1", "npm_config_offline=true")
	e.Install("opencode")

	sidRE := regexp.MustCompile(`"sessionID":"(ses_[^"]+)"`)
	word1 := e2etest.RandWord("promptword")
	decision := "keep the release branch frozen " + e2etest.RandWord("decisionword")
	next := "write the release notes " + e2etest.RandWord("nextword")
	mind, checkMind := e.mindLines()
	r := e.MustRun(120*time.Second, opencode, "run", "--format", "json", "hello, first turn "+word1+"\nDECISION: "+decision+"\nNEXT: "+next+mind+"\nthat is all")
	m := sidRE.FindStringSubmatch(r.Stdout)
	if m == nil {
		t.Fatalf("no sessionID in opencode output:\n%s\nstderr: %s", e2etest.ClipHead(r.Stdout), e2etest.ClipHead(r.Stderr))
	}
	sid := m[1]
	e.requireMarkIn("startup", e.Model.Requests("/v1/chat/completions"))
	e.requirePromptInTranscript(sid, word1)

	// Turn 2: a big reported usage makes OpenCode compact within the turn.
	before := e.Model.Count()
	word2 := e2etest.RandWord("promptword")
	e.MustRun(120*time.Second, opencode, "run", "--format", "json", "--session", sid, "BIGUSAGE second turn "+word2)
	if len(e.Nodes("compaction", sid)) == 0 {
		t.Fatalf("no compaction node for session %s after automatic compaction\nhooks.log:\n%s", sid, e.hooksLog())
	}
	// The summary OpenCode's compaction wrote (the fake model's answer to
	// the compaction prompt), taken from its summary message on the event
	// bus, is the node's text.
	cn := e.Nodes("compaction", sid)
	body, _ := os.ReadFile(filepath.Join(e.Proj, ".memory", filepath.FromSlash(fmt.Sprint(cn[len(cn)-1]["path"]))))
	if !strings.Contains(string(body), "Fake answer") || strings.Contains(string(body), "without a summary") {
		t.Errorf("the compaction node does not hold OpenCode's compaction summary:\n%s", body)
	}
	if !contains(e.sessionStarts(sid), "compact") {
		t.Fatalf("no session-start with source compact recorded for %s: %v", sid, e.sessionStarts(sid))
	}
	reqs := e.Model.Requests("/v1/chat/completions")
	last := reqs[len(reqs)-1]
	if last.N <= before {
		t.Fatalf("no model request in the compacting turn")
	}
	req := e.requireMarkIn("after compaction (the turn's last request)", []e2etest.LoggedRequest{last})
	// The decision of the turn before the compaction is in the memory
	// injected after it.
	if !strings.Contains(req.Body, decision) {
		t.Errorf("the request after compaction (#%d) does not carry the decision made before it (%q)", req.N, decision)
	}
	e.requirePromptInTranscript(sid, word2)

	// The end of each `opencode run` process ends the sessions it ran
	// (OpenCode has no session-end event: the plugin's exit handler).
	e.waitWorker()
	e.requireSummary(sid, nil)
	word3 := e2etest.RandWord("promptword")
	// Its reply closes the first session's next action: OpenCode hands
	// over only the last answer of a turn, and the compacting turn's last
	// answer is the one after the compaction, so the DONE: line goes here.
	r = e.MustRun(120*time.Second, opencode, "run", "--format", "json", "a new session "+word3+"\nDONE: "+next+"\nthat is all")
	if m := sidRE.FindStringSubmatch(r.Stdout); m == nil || m[1] == sid {
		t.Fatalf("expected a new session: %v", m)
	}
	e.requireClosedNext(next)
	checkMind()
	e.RequireFsck()

	release := e.holdLock()
	logBefore := e.hooksLog()
	r = e.MustRun(90*time.Second, opencode, "run", "--format", "json", "turn with a locked vault")
	release()
	if !strings.Contains(r.Stdout, "Fake answer") {
		t.Fatalf("turn with a locked vault: no answer:\n%s\nstderr: %s", e2etest.ClipHead(r.Stdout), e2etest.ClipHead(r.Stderr))
	}
	t.Logf("locked-vault turn took %.1fs", r.Took.Seconds())
	e.requireBusyLogged(logBefore)
	e.RequireFsck()
}

// ---------------------------------------------------------------------------
// Gemini CLI

func TestE2EGemini(t *testing.T) {
	gemini := e2etest.HarnessBin(t, "MEMVAULT_E2E_GEMINI", "gemini")
	if e2etest.InNetns(t) {
		return
	}
	e := newE2E(t)
	settings := filepath.Join(e.Home, ".gemini", "settings.json")
	os.MkdirAll(filepath.Dir(settings), 0o755)
	// With comments, which Gemini CLI strips (it takes no trailing comma):
	// install edits around them.
	os.WriteFile(settings, []byte(`{
  // the fake model's key type
  "security": {"auth": {"selectedType": "gemini-api-key"}},
  "privacy": {"usageStatisticsEnabled": false}, /* no telemetry */
  "general": {"disableAutoUpdate": true}
}
`), 0o644)
	e.Setenv("GEMINI_API_KEY=fake", "GOOGLE_GEMINI_BASE_URL="+e.Model.URL(), "GEMINI_CLI_TRUST_WORKSPACE=true")
	e.Install("gemini", "--scope", "user")

	type gemOut struct {
		SessionID string `json:"session_id"`
		Response  string `json:"response"`
	}
	parse := func(r e2etest.RunResult) gemOut {
		var o gemOut
		if err := json.Unmarshal([]byte(r.Stdout), &o); err != nil {
			t.Fatalf("gemini output is not JSON: %v\n%s\nstderr: %s", err, e2etest.ClipHead(r.Stdout), e2etest.ClipHead(r.Stderr))
		}
		return o
	}
	word1 := e2etest.RandWord("promptword")
	o := parse(e.MustRun(90*time.Second, gemini, "-p", "hello, first turn "+word1, "-o", "json"))
	sid := o.SessionID
	if sid == "" {
		t.Fatalf("no session_id in gemini output")
	}
	e.requireMarkIn("startup", e.Model.Requests("/v1beta/models/"))
	e.requirePromptInTranscript(sid, word1)

	// Turn 2: resumed. Gemini has no post-compression event (documented as
	// degraded): no compaction node is expected, so none is checked.
	word2 := e2etest.RandWord("promptword")
	mind, checkMind := e.mindLines()
	o2 := parse(e.MustRun(90*time.Second, gemini, "-p", "second turn "+word2+mind, "--resume", "latest", "-o", "json"))
	if o2.SessionID != sid {
		t.Fatalf("--resume latest started session %s, not %s", o2.SessionID, sid)
	}
	e.requirePromptInTranscript(sid, word2)

	e.requireSummary(sid, func() {
		e.Hook("gemini", "session-start", map[string]any{"session_id": "e2e-trigger", "cwd": e.Proj,
			"hook_event_name": "SessionStart", "source": "startup"})
	})
	checkMind()
	e.RequireFsck()

	release := e.holdLock()
	logBefore := e.hooksLog()
	r := e.MustRun(60*time.Second, gemini, "-p", "turn with a locked vault", "-o", "json")
	release()
	if o := parse(r); !strings.Contains(o.Response, "Fake answer") {
		t.Fatalf("turn with a locked vault: unexpected response %q\nstderr: %s", o.Response, e2etest.ClipHead(r.Stderr))
	}
	t.Logf("locked-vault turn took %.1fs", r.Took.Seconds())
	e.requireBusyLogged(logBefore)
	e.RequireFsck()
}

// ---------------------------------------------------------------------------
// OpenClaw

// fakeOpenClawModels is OpenClaw's models config: the fake model server's
// one model, as an OpenAI-compatible provider.
func fakeOpenClawModels(e *e2e) map[string]any {
	return map[string]any{"providers": map[string]any{"fake": map[string]any{"baseUrl": e.Model.URL() + "/v1", "apiKey": "x",
		"api": "openai-completions", "models": []any{map[string]any{"id": "fake-model", "name": "fake-model",
			"contextWindow": 200000, "maxTokens": 4096}}}}}
}

func TestE2EOpenClaw(t *testing.T) {
	openclaw := e2etest.HarnessBin(t, "MEMVAULT_E2E_OPENCLAW", "openclaw")
	if e2etest.InNetns(t) {
		return
	}
	e := newE2E(t)
	e.UseNode24()
	config := filepath.Join(e.Dir, "openclaw.json")
	state := filepath.Join(e.Dir, "openclaw-state")
	os.MkdirAll(state, 0o755)
	cfg := map[string]any{
		"models": fakeOpenClawModels(e),
		// OpenClaw's workspace stays its default ($OPENCLAW_STATE_DIR/
		// workspace): the plugin finds the vault from the project it was
		// installed for, which is what this checks.
		"agents": map[string]any{"defaults": map[string]any{"model": map[string]any{"primary": "fake/fake-model"}}},
	}
	// JSON5, as OpenClaw reads it: a comment, bare keys, single quotes and
	// trailing commas around the JSON values, which install edits as text.
	models, _ := json.Marshal(cfg["models"])
	json5 := "// e2e config\n{\n  models: " + string(models) + ",\n  agents: {defaults: {model: {primary: 'fake/fake-model',},},},\n}\n"
	os.WriteFile(config, []byte(json5), 0o644)
	e.Setenv("OPENCLAW_CONFIG_PATH="+config, "OPENCLAW_STATE_DIR="+state, "OPENCLAW_OFFLINE=1", "OPENCLAW_NO_AUTO_UPDATE=1")
	e.Install("openclaw")

	const sid = "e2e"
	agent := func(msg string) e2etest.RunResult {
		return e.MustRun(100*time.Second, openclaw, "agent", "--local", "--session-id", sid, "--message", msg, "--json")
	}
	word1 := e2etest.RandWord("promptword")
	decision := "keep the release branch frozen " + e2etest.RandWord("decisionword")
	next := "write the release notes " + e2etest.RandWord("nextword")
	mind, checkMind := e.mindLines()
	agent("hello, first turn " + word1 + "\nDECISION: " + decision + "\nNEXT: " + next + mind + "\nthat is all")
	e.requireMarkIn("first prompt", e.Model.Requests("/v1/chat/completions"))
	e.requirePromptInTranscript(sid, word1)

	// A near-full context window reported in turn 2 (195,000 of 200,000
	// tokens) makes OpenClaw compact at the start of turn 3, as when the
	// fixtures were captured (fixtures/hooks/openclaw/order.txt):
	// before_compaction, after_compaction, then the turn.
	agent("BIGUSAGE fill the context " + e2etest.RandWord("promptword"))
	before := e.Model.Count()
	word3 := e2etest.RandWord("promptword")
	agent("after compaction " + word3 + "\nDONE: " + next + "\nthat is all")
	if len(e.Nodes("compaction", sid)) == 0 {
		t.Fatalf("no compaction node for session %s after a near-full context window\nhooks.log:\n%s", sid, e.hooksLog())
	}
	var post []e2etest.LoggedRequest
	for _, q := range e.Model.Requests("/v1/chat/completions") {
		if q.N > before && strings.Contains(q.Body, word3) {
			post = append(post, q)
		}
	}
	req := e.requireMarkIn("after compaction", post)
	// The decision of the first turn is in the memory injected after the
	// compaction.
	if !strings.Contains(req.Body, decision) {
		t.Errorf("the first request after compaction (#%d) does not carry the decision made before it (%q)", req.N, decision)
	}
	// One session start per OpenClaw process that starts the session:
	// the first run, the next run continuing it (no session_start without
	// a Gateway: the plugin sees its history), the run that compacted.
	if got := strings.Join(e.sessionStarts(sid), ","); got != "startup,resume,compact" {
		t.Errorf("session.started sources of %s: %s, want startup,resume,compact", sid, got)
	}
	e.requirePromptInTranscript(sid, word3)
	e.requireClosedNext(next)
	checkMind()
	// session_end fires only with a running Gateway (documented as
	// degraded): no summary node is expected from `openclaw agent --local`.
	if n := len(e.Nodes("session-summary", sid)); n > 0 {
		t.Logf("OpenClaw made %d session-summary node(s) without a Gateway", n)
	}
	e.RequireFsck()

	release := e.holdLock()
	logBefore := e.hooksLog()
	r := e.MustRun(100*time.Second, openclaw, "agent", "--local", "--session-id", "locked", "--message", "turn with a locked vault", "--json")
	release()
	if !strings.Contains(r.Stdout, "Fake answer") {
		t.Fatalf("turn with a locked vault: no answer:\n%s\nstderr: %s", e2etest.ClipHead(r.Stdout), e2etest.ClipHead(r.Stderr))
	}
	t.Logf("locked-vault turn took %.1fs", r.Took.Seconds())
	e.requireBusyLogged(logBefore)
	e.RequireFsck()
}

// TestE2EOpenClawGateway drives OpenClaw's other path: a Gateway, run
// offline on 127.0.0.1 (`openclaw gateway run`, gateway.mode local, no
// auth on loopback), and agent turns sent to it (`openclaw agent` without
// --local). The Gateway fires session_start before the first
// before_prompt_build, runs every turn of the session in one process, and
// fires session_end (reason shutdown) for its open sessions when it stops.
func TestE2EOpenClawGateway(t *testing.T) {
	openclaw := e2etest.HarnessBin(t, "MEMVAULT_E2E_OPENCLAW", "openclaw")
	if e2etest.InNetns(t) {
		return
	}
	e := newE2E(t)
	e.UseNode24()
	config := filepath.Join(e.Dir, "openclaw.json")
	state := filepath.Join(e.Dir, "openclaw-state")
	os.MkdirAll(state, 0o755)
	port := freePort(t)
	cfg := map[string]any{
		"gateway": map[string]any{"mode": "local", "port": port, "bind": "loopback", "auth": map[string]any{"mode": "none"}},
		"models":  fakeOpenClawModels(e),
		"agents":  map[string]any{"defaults": map[string]any{"model": map[string]any{"primary": "fake/fake-model"}}},
	}
	data, _ := json.MarshalIndent(cfg, "", "  ")
	os.WriteFile(config, data, 0o644)
	e.Setenv("OPENCLAW_CONFIG_PATH="+config, "OPENCLAW_STATE_DIR="+state, "OPENCLAW_OFFLINE=1", "OPENCLAW_NO_AUTO_UPDATE=1")
	e.Install("openclaw")

	stop := e.startGateway(openclaw, port)
	defer stop()
	const sid = "gw"
	agent := func(msg string) e2etest.RunResult {
		r := e.MustRun(150*time.Second, openclaw, "agent", "--session-id", sid, "--message", msg, "--json")
		if !strings.Contains(r.Stdout, "Fake answer") {
			t.Fatalf("a turn through the Gateway: no answer:\n%s\nstderr: %s", e2etest.ClipHead(r.Stdout), e2etest.ClipHead(r.Stderr))
		}
		return r
	}
	word1 := e2etest.RandWord("promptword")
	decision := "keep the release branch frozen " + e2etest.RandWord("decisionword")
	agent("hello, first turn " + word1 + "\nDECISION: " + decision + "\nthat is all")
	e.requireMarkIn("first prompt through the Gateway", withWord(e.Model.Requests("/v1/chat/completions"), word1))
	e.requirePromptInTranscript(sid, word1)
	word2 := e2etest.RandWord("promptword")
	agent("second turn " + word2)
	// A prompt's prependContext is not kept in OpenClaw's history: the
	// start context goes with every prompt, as system context.
	e.requireMarkIn("second prompt through the Gateway", withWord(e.Model.Requests("/v1/chat/completions"), word2))
	e.requirePromptInTranscript(sid, word2)
	// One session.started for two `openclaw agent` processes: both turns
	// ran in the Gateway's (under --local the second would be a resume).
	if got := e.sessionStarts(sid); len(got) != 1 || got[0] != "startup" {
		t.Errorf("session.started events of the Gateway session: %v, want one, source startup\nhooks.log:\n%s", got, e.hooksLog())
	}
	stop() // session_end, reason shutdown
	e.requireSummary(sid, func() {
		e.Hook("openclaw", "session-start", map[string]any{"session_id": "e2e-trigger", "cwd": e.Proj, "source": "startup"})
	})
	e.RequireFsck()
}

// startGateway runs `openclaw gateway run` in the background and waits
// until it answers on port; stop sends it SIGTERM and waits for it to exit
// (the Gateway ends its open sessions first), at most once.
func (e *e2e) startGateway(openclaw string, port int) (stop func()) {
	e.T.Helper()
	log, _ := os.Create(filepath.Join(e.Dir, "gateway.log"))
	cmd := exec.Command(openclaw, "gateway", "run", "--port", fmt.Sprint(port))
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = e.Proj, e.Env, log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		e.T.Fatalf("openclaw gateway run: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
			select {
			case err := <-done:
				e.T.Logf("the Gateway stopped: %v", err)
			case <-time.After(60 * time.Second):
				e.T.Errorf("the Gateway did not stop within 60 s of SIGTERM")
			}
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			log.Close()
		})
	}
	start := time.Now()
	for time.Since(start) < 180*time.Second {
		select {
		case err := <-done:
			data, _ := os.ReadFile(log.Name())
			e.T.Fatalf("the Gateway exited before it was ready: %v\n%s", err, e2etest.ClipHead(string(data)))
		case <-time.After(time.Second):
		}
		if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
			c.Close()
			data, _ := os.ReadFile(log.Name())
			if strings.Contains(ansiRE.ReplaceAllString(string(data), ""), "[gateway] ready") {
				e.T.Logf("the Gateway answers on 127.0.0.1:%d after %.1fs", port, time.Since(start).Seconds())
				return stop
			}
		}
	}
	stop()
	data, _ := os.ReadFile(log.Name())
	e.T.Fatalf("the Gateway did not answer on 127.0.0.1:%d within 180 s\n%s", port, e2etest.ClipHead(string(data)))
	return nil
}

var ansiRE = regexp.MustCompile("\x1b\\[[0-9;]*m")

// freePort is a TCP port free on 127.0.0.1 just now.
func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
