package hooks

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/memvault/memvault/hooks/hookstate"
	"github.com/memvault/memvault/vault"
)

// Hooks near the floor (issue 35): a session end does what must be
// durable before it returns (the capture, the session's rows, its jobs
// queued) and leaves the summary, the head refresh and the session's one
// commit to the detached worker; a stop starts the worker for jobs that
// wait and runs none itself. The worker here is `true`: handed the lock,
// it does nothing, so what the hook did alone is what the test sees; the
// worker's work is then run in this process, as `memvault jobs run` does.
func TestSessionEndLeavesItsJobsToTheWorker(t *testing.T) {
	root, v, git, count := gitVault(t)
	h := mustHarness(t, "claude-code")
	cwd := filepath.Join(root, "shop")
	run := func(worker []string, ev Event, p Payload) {
		t.Helper()
		p.CWD = cwd
		r := &Runner{V: v, Harness: h, Agent: "default", Start: time.Now(), Worker: worker}
		if _, err := r.Run(ev, p); err != nil {
			t.Fatalf("%s: %v", ev, err)
		}
	}
	idle := []string{"true"}
	run(idle, SessionStart, Payload{SessionID: "s1", Source: "startup"})
	run(idle, PromptSubmit, Payload{SessionID: "s1", Prompt: "how do we retry webhooks?"})
	run(idle, Stop, Payload{SessionID: "s1", LastAssistant: "DECISION: retry Stripe webhooks 5 times"})
	before := count()
	run(idle, SessionEnd, Payload{SessionID: "s1", LastAssistant: "NEXT: add a test for the retry limit", Reason: "other"})

	// Durable: the last reply and its control line are in the vault's
	// files; the jobs that make the rest are queued.
	if n := count() - before; n != 0 {
		t.Errorf("the session end made %d commits itself: its one commit is the worker's flush", n)
	}
	if got := jobKinds(t, v); !slices.Equal(got, []string{"summarize", "condense", "refresh"}) {
		t.Fatalf("queued after the session end: %v, want [summarize condense refresh]", got)
	}
	if sessionNode(t, v, "s1") != nil {
		t.Errorf("the session end wrote the summary on the agent's path")
	}
	if !strings.Contains(readFile(v, "transcripts/default/s1.jsonl"), "NEXT: add a test for the retry limit") {
		t.Errorf("the session end's last reply is not on disk:\n%s", readFile(v, "transcripts/default/s1.jsonl"))
	}

	// A stop of another session starts the worker for them, and runs none.
	run(idle, Stop, Payload{SessionID: "s2", LastAssistant: "nothing to record"})
	if got := jobKinds(t, v); !slices.Equal(got, []string{"summarize", "condense", "refresh"}) {
		t.Fatalf("queued after another session's stop: %v: a stop ran jobs on the agent's path", got)
	}

	// The worker: the summary, the heads, and the session's one commit.
	w, err := hookstate.WaitJobWorker(v, func() bool { return true }) // `true` exited
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Work(t.Context(), v, w, WorkOptions{}); err != nil {
		t.Fatal(err)
	}
	if sessionNode(t, v, "s1") == nil {
		t.Fatalf("no summary after the worker ran")
	}
	subjects := strings.Split(strings.TrimSpace(git.Run(t, "log", "--format=%s", fmt.Sprintf("-%d", count()-before))), "\n")
	if len(subjects) != 1 || !strings.HasPrefix(subjects[0], "session: how do we retry webhooks?") {
		t.Errorf("the session end's commits: %q, want one, named by the summary", subjects)
	}
	if !strings.Contains(readFile(v, "MEMORY.md"), "add a test for the retry limit") {
		t.Errorf("MEMORY.md does not hold the session end's NEXT:\n%s", readFile(v, "MEMORY.md"))
	}
	if got := jobKinds(t, v); len(got) != 0 {
		t.Errorf("left queued: %v", got)
	}
	// (s2's stop recorded nothing: its lines wait for its own lineage event.)
	if st := git.Run(t, "status", "--porcelain"); strings.TrimSpace(st) != "?? transcripts/default/s2.jsonl" {
		t.Errorf("left uncommitted:\n%s", st)
	}
	soundVault(t, v)
}

// Jobs are never lost to a worker that cannot start: the hook runs them
// itself within its budget, as it does when told to (MEMVAULT_JOBS=inline)
// or when it has no worker.
func TestSessionEndRunsItsJobsWithoutAWorker(t *testing.T) {
	for _, c := range []struct {
		name   string
		worker []string
		mode   JobsMode
	}{
		{"no worker", nil, ""},
		{"a worker that cannot start", []string{filepath.Join(t.TempDir(), "no-such-memvault"), "jobs", "run"}, ""},
		{"MEMVAULT_JOBS=inline", []string{"true"}, JobsInline},
	} {
		t.Run(c.name, func(t *testing.T) {
			v, _, err := vault.Init(filepath.Join(t.TempDir(), vault.DirName))
			if err != nil {
				t.Fatal(err)
			}
			h := mustHarness(t, "codex")
			events := []Event{SessionStart, Stop, SessionEnd}
			// What a busy machine's budget left, the next events run.
			for i := 0; i < len(events) || len(jobKinds(t, v)) > 0 && i < 20; i++ {
				ev, sid := Stop, "s2"
				if i < len(events) {
					ev, sid = events[i], "s1"
				}
				r := &Runner{V: v, Harness: h, Agent: "default", Start: time.Now(), Worker: c.worker, Jobs: c.mode}
				if _, err := r.Run(ev, Payload{SessionID: sid, CWD: v.Root, LastAssistant: "DECISION: use sqlite"}); err != nil {
					t.Fatal(err)
				}
			}
			if sessionNode(t, v, "s1") == nil {
				t.Log(readFile(v, ".logs/hooks.log"))
				t.Errorf("no summary after the session end: queued %v", jobKinds(t, v))
			}
			if got := jobKinds(t, v); len(got) != 0 {
				t.Errorf("left queued: %v", got)
			}
		})
	}
}
