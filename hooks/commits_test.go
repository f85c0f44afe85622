package hooks

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/memvault/memvault/hooks/hookstate"
	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/vaulttest"
)

// memorySubject is what a commit subject of a session must start with:
// the memory it records ("decision: …", "learning: …") or the session's
// end by its summary's title ("session: …"); never bookkeeping alone
// (session.started, transcript, continuity.session, refresh, head.*).
var memorySubject = regexp.MustCompile(`^(decision|learning|next|done|blocker|constraint|fact|claim|commitment\.open|commitment\.close|session): `)

// A Claude Code session of N turns, K of them with control lines in the
// reply, run through the real hook entry points (payloads parsed as the
// harness sends them, the transcript file it writes), makes at most K + 2
// commits, each named by the memory it holds; nothing is left uncommitted
// once its jobs are done, and the vault verifies. So too when the hook's
// own budget is spent before its jobs (a loaded machine: the session end
// then ran no job, read that as another process holding the queue, and
// committed what waited as bookkeeping).
func TestSessionCommitsAreMemory(t *testing.T) {
	t.Run("a fresh budget", func(t *testing.T) { sessionCommitsAreMemory(t, 0) })
	t.Run("the session end's budget spent", func(t *testing.T) { sessionCommitsAreMemory(t, time.Hour) })
}

// sessionCommitsAreMemory is TestSessionCommitsAreMemory, its session end
// started spent before now.
func sessionCommitsAreMemory(t *testing.T, spent time.Duration) {
	root, v, git, count := gitVault(t)
	before := count()
	h := mustHarness(t, "claude-code")
	const session = "5a1c2a9e-5b7d-4c1e-9a2b-6d8e0f1a2b3c"
	cc := filepath.Join(root, "cc.jsonl")
	run := func(native string, extra map[string]any) {
		t.Helper()
		p := map[string]any{"session_id": session, "transcript_path": cc, "cwd": filepath.Join(root, "shop"), "hook_event_name": native}
		for k, x := range extra {
			p[k] = x
		}
		data, _ := json.Marshal(p)
		ev, payload, err := Parse(h, "", data)
		if err != nil {
			t.Fatal(err)
		}
		r := &Runner{V: v, Harness: h, Agent: "default", Start: time.Now()}
		if native == "SessionEnd" {
			r.Start = r.Start.Add(-spent)
		}
		if _, err := r.Run(ev, payload); err != nil {
			t.Fatalf("%s: %v", native, err)
		}
	}
	replies := []string{
		"Let me read the webhook handler first.",
		"DECISION: retry Stripe webhooks 5 times\nLEARNED: Stripe signs every retry again",
		"The handler is in api/webhooks.go.",
		"NEXT: add a test for the retry limit",
		"You are welcome.",
	}
	const k = 2
	var lines []string
	run("SessionStart", map[string]any{"source": "startup"})
	if n := count() - before; n != 0 {
		t.Fatalf("session start made %d commits: it is bookkeeping", n)
	}
	for i, reply := range replies {
		prompt := fmt.Sprintf("question %d about webhooks", i+1)
		run("UserPromptSubmit", map[string]any{"prompt": prompt})
		ts := time.Date(2026, 11, 22, 4, i, 0, 0, time.UTC)
		u, _ := json.Marshal(map[string]any{"type": "user", "uuid": fmt.Sprintf("u%d", i), "sessionId": session,
			"timestamp": ts.Format(time.RFC3339), "message": map[string]any{"role": "user", "content": prompt}})
		a, _ := json.Marshal(map[string]any{"type": "assistant", "uuid": fmt.Sprintf("a%d", i), "sessionId": session,
			"timestamp": ts.Add(30 * time.Second).Format(time.RFC3339), "message": map[string]any{"role": "assistant", "model": "m",
				"content": []map[string]any{{"type": "text", "text": reply}}}})
		lines = append(lines, string(u), string(a))
		if err := os.WriteFile(cc, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		run("Stop", map[string]any{"stop_hook_active": false})
	}
	run("SessionEnd", map[string]any{"reason": "other"})
	// Whatever the session end's budget left queued, a later event runs.
	for i := 0; len(jobKinds(t, v)) > 0; i++ {
		if i > 50 {
			t.Fatalf("the queue is not done: %v", jobKinds(t, v))
		}
		other := &Runner{V: v, Harness: h, Agent: "default", Start: time.Now()}
		if _, err := other.Run(Stop, Payload{SessionID: "other", CWD: root}); err != nil {
			t.Fatal(err)
		}
	}
	made := count() - before
	subjects := strings.Split(strings.TrimSpace(git.Run(t, "log", "--format=%s", fmt.Sprintf("-%d", made))), "\n")
	if made > k+2 {
		t.Errorf("%d commits for %d turns of which %d record memory, want at most %d:\n%s", made, len(replies), k, k+2, strings.Join(subjects, "\n"))
	}
	for _, s := range subjects {
		if !memorySubject.MatchString(s) {
			t.Errorf("subject %q names no memory", s)
		}
	}
	if !strings.HasPrefix(subjects[0], "session: question 1 about webhooks") {
		t.Errorf("the session end's commit is %q, want it named by the summary's title", subjects[0])
	}
	t.Logf("commits:\n%s", strings.Join(subjects, "\n"))
	if st := git.Run(t, "status", "--porcelain"); st != "" {
		t.Errorf("left uncommitted:\n%s", st)
	}
	vaulttest.Fsck(t, v.Root)
	if rep, err := v.Verify(); err != nil || !rep.OK {
		t.Fatalf("verify: %v %+v", err, rep)
	}
}

// A session end whose jobs it cannot run (here: another process holds the
// queue) still returns with nothing of memvault's uncommitted, so that a person's
// `git pull` between sessions meets a clean work tree (TestConvergence's
// git mode failed on it under load: "Your local changes … would be
// overwritten by merge"); the summary the queued jobs write later makes
// its own commit, within K + 2.
func TestSessionEndLeavesNothingWaiting(t *testing.T) {
	root, v, git, count := gitVault(t)
	before := count()
	h := mustHarness(t, "claude-code")
	cwd := filepath.Join(root, "shop")
	run := func(ev Event, p Payload, start time.Time) {
		t.Helper()
		p.SessionID, p.CWD = "s-budget", cwd
		r := &Runner{V: v, Harness: h, Agent: "default", Start: start}
		if _, err := r.Run(ev, p); err != nil {
			t.Fatalf("%s: %v", ev, err)
		}
	}
	run(SessionStart, Payload{Source: "startup"}, time.Now())
	run(PromptSubmit, Payload{Prompt: "how do we retry webhooks"}, time.Now())
	run(Stop, Payload{LastAssistant: "DECISION: retry Stripe webhooks 5 times"}, time.Now())
	// A last prompt, whose turn ends with the session: its line waits on
	// disk for the session end's commit.
	run(PromptSubmit, Payload{Prompt: "and the refunds?"}, time.Now())
	// Another process runs the queue while the session ends: the session
	// end's jobs wait for it.
	claim, err := hookstate.ClaimJobs(v, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	run(SessionEnd, Payload{Reason: "other"}, time.Now())
	claim.Release()
	if st := git.Run(t, "status", "--porcelain"); st != "" {
		t.Fatalf("the session end left uncommitted:\n%s", st)
	}
	if len(jobKinds(t, v)) == 0 {
		t.Fatal("the test's session end ran its jobs: it proves nothing")
	}
	for i := 0; len(jobKinds(t, v)) > 0; i++ {
		if i > 50 {
			t.Fatalf("the queue is not done: %v", jobKinds(t, v))
		}
		other := &Runner{V: v, Harness: h, Agent: "default", Start: time.Now()}
		if _, err := other.Run(Stop, Payload{SessionID: "other", CWD: root}); err != nil {
			t.Fatal(err)
		}
	}
	if made := count() - before; made > 1+2 {
		t.Errorf("%d commits for 1 recording turn, want at most 3:\n%s", made, git.Run(t, "log", "--format=%s", fmt.Sprintf("-%d", made)))
	}
	if st := git.Run(t, "status", "--porcelain"); st != "" {
		t.Errorf("left uncommitted after the jobs:\n%s", st)
	}
	vaulttest.Fsck(t, v.Root)
}

// gitVault is a new vault in a temporary folder (the folder returned, the
// vault in it), git run on it as a person, and the count of its commits;
// the test skips without git.
func gitVault(t *testing.T) (string, *vault.Vault, vaulttest.Git, func() int) {
	t.Helper()
	if !vaulttest.HasGit() {
		t.Skip("needs git")
	}
	root := t.TempDir()
	v, _, err := vault.Init(filepath.Join(root, vault.DirName))
	if err != nil {
		t.Fatal(err)
	}
	git := vaulttest.Git{Dir: v.Root, Env: vaulttest.Sandbox(t.TempDir())}
	count := func() int {
		n, _ := strconv.Atoi(strings.TrimSpace(git.Run(t, "rev-list", "--count", "HEAD")))
		return n
	}
	return root, v, git, count
}
