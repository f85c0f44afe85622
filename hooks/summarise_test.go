package hooks

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memvault/memvault/hooks/hookstate"
	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/executor"
	"github.com/memvault/memvault/vault/memory"
	"github.com/memvault/memvault/vault/node"
	"github.com/memvault/memvault/vault/testvault"
	"github.com/memvault/memvault/vault/vaulttest"
)

// fakeExecutor builds the fake executor (fixtures/executor/fake) into the
// test's temporary folder.
func fakeExecutor(t *testing.T) string {
	t.Helper()
	bin, err := vaulttest.BuildFakeExecutor(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// runs counts what the fake tells its -notify socket.
type runs struct {
	mu   sync.Mutex
	msgs map[string]int
	seen chan string
}

func (r *runs) count(msg string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.msgs[msg]
}

// notifySocket serves the fake's -notify socket, counting each message
// and passing it on to seen (when there is room).
func notifySocket(t *testing.T) (string, *runs) {
	t.Helper()
	r := &runs{msgs: map[string]int{}, seen: make(chan string, 16)}
	sock := vaulttest.NotifySocket(t, func(line string) string {
		msg, _, _ := strings.Cut(line, " ")
		r.mu.Lock()
		r.msgs[msg]++
		r.mu.Unlock()
		select {
		case r.seen <- msg:
		default:
		}
		return "ok"
	})
	return sock, r
}

// summarisingVault is a vault whose [summarise] names the fake in mode,
// told to sock.
func summarisingVault(t *testing.T, bin, mode, sock, timeout string) (*vault.Vault, string) {
	t.Helper()
	root := t.TempDir()
	v, _, err := vault.Init(filepath.Join(root, vault.DirName))
	if err != nil {
		t.Fatal(err)
	}
	e := executor.Entry{Name: "fake", Command: bin, Args: []string{"-mode", mode, "-notify", sock}, Mode: executor.ModeEnvelope,
		TimeoutText: "10s"}
	_, err = v.Update(vault.TxOptions{}, func(tx *vault.Tx) error {
		return executor.Edit(tx, "summariser", func(data []byte) ([]byte, error) {
			out, err := executor.AddTo(data, e)
			return append(out, fmt.Sprintf("\n[summarise]\nexecutor = \"fake\"\ntimeout = %q\n", timeout)...), err
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return v, root
}

func runEvent(t *testing.T, v *vault.Vault, ev Event, p Payload) {
	t.Helper()
	h, _ := Lookup("claude-code")
	r := &Runner{V: v, Harness: h, Agent: "default", Start: time.Now()}
	if _, err := r.Run(ev, p); err != nil {
		t.Fatalf("%s: %v", ev, err)
	}
}

// sessionNode is the session-summary node of session s, read whole; nil
// when there is none.
func sessionNode(t *testing.T, v *vault.Vault, s string) *node.Node {
	t.Helper()
	ix, err := node.Load(v.Files())
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range ix.Select(node.Filter{Agent: "default", Session: s, Kind: node.SessionSummary}) {
		full, err := node.Read(v.Files(), n)
		if err != nil {
			t.Fatal(err)
		}
		return full
	}
	return nil
}

func soundVault(t *testing.T, v *vault.Vault) {
	t.Helper()
	testvault.MustVerify(t, v)
	vaulttest.Fsck(t, v.Root)
}

// runQueue runs the queue in this process as `memvault jobs run` does.
func runQueue(t *testing.T, v *vault.Vault) WorkReport {
	t.Helper()
	w, ok, err := hookstate.TryJobWorker(v)
	if err != nil || !ok {
		t.Fatalf("the worker lock: %v %v", ok, err)
	}
	rep, err := Work(context.Background(), v, w, WorkOptions{})
	if err != nil {
		t.Fatalf("jobs run: %v", err)
	}
	return rep
}

// No hook asks the executor, whatever the event: a summary for a model
// waits in the queue, with its session's refresh behind it, for the
// worker (here none is started: the runner has no Worker) or jobs run;
// other sessions' jobs run. jobs run then asks the executor once per
// session and writes the model's summaries.
func TestHookSummaryModelNeverInAHook(t *testing.T) {
	bin := fakeExecutor(t)
	sock, seen := notifySocket(t)
	v, root := summarisingVault(t, bin, "count", sock, "10s")

	runEvent(t, v, SessionStart, Payload{SessionID: "s1", CWD: root, Source: "startup"})
	runEvent(t, v, PromptSubmit, Payload{SessionID: "s1", CWD: root, Prompt: "rename the flag to --dry-run"})
	runEvent(t, v, SessionEnd, Payload{SessionID: "s1", CWD: root, LastAssistant: "renamed, tests pass"})
	if got := strings.Join(jobKinds(t, v), " "); got != "summarize condense refresh" {
		t.Fatalf("queued %q after the session end", got)
	}
	runEvent(t, v, SessionStart, Payload{SessionID: "s2", CWD: root, Source: "startup"})
	runEvent(t, v, PromptSubmit, Payload{SessionID: "s2", CWD: root, Prompt: "and now the docs"})
	runEvent(t, v, SessionEnd, Payload{SessionID: "s3", CWD: root, LastAssistant: "nothing"})
	for range 3 {
		runEvent(t, v, Stop, Payload{SessionID: "s2", CWD: root, LastAssistant: "docs updated"})
		runEvent(t, v, PreCompaction, Payload{SessionID: "s2", CWD: root})
	}
	if n := seen.count("start"); n != 0 {
		t.Fatalf("a hook ran the executor %d times", n)
	}
	if n := sessionNode(t, v, "s1"); n != nil {
		t.Fatalf("summarised without the model in a hook: %s", n.ID)
	}
	q, err := ListQueue(v)
	if err != nil {
		t.Fatal(err)
	}
	if len(q.Jobs) != 6 || q.Jobs[0].Waits != waitsModel || q.Jobs[1].Waits != waitsSummary || q.Jobs[2].Waits != waitsSummary || q.Worker.Running {
		t.Fatalf("queue %+v", q)
	}

	rep := runQueue(t, v)
	if len(rep.Ran) != 6 || len(rep.Failed)+len(rep.Left) != 0 {
		t.Fatalf("jobs run: %+v", rep)
	}
	if n := seen.count("start"); n != 2 {
		t.Errorf("%d runs of the executor for two sessions", n)
	}
	n := sessionNode(t, v, "s1")
	if n == nil || n.Summary != node.SummaryModel || n.SummaryBy != "fake" ||
		!strings.Contains(n.Body, "counted: Summarise this session") || !strings.Contains(n.Body, "rename the flag") {
		t.Fatalf("node %+v", n)
	}
	if k := jobKinds(t, v); len(k) != 0 {
		t.Errorf("left queued: %v", k)
	}
	// An empty queue: nothing to do, nothing asked.
	if rep := runQueue(t, v); len(rep.Ran)+len(rep.Failed)+len(rep.Left) != 0 {
		t.Errorf("jobs run of an empty queue: %+v", rep)
	}
	soundVault(t, v)
}

// jobs run (and the worker): an executor that crashes, hangs past its
// time, prints garbage or a wrong checksum leaves the deterministic
// summary, the reason in the node and in an executor.failed event; the
// job is done and the vault verifies. While it hangs, another writer
// takes the vault lock, and a hook runs.
func TestHookSummaryModelFailsOpen(t *testing.T) {
	bin := fakeExecutor(t)
	for _, c := range []struct{ mode, code string }{
		{"crash", executor.CodeCrash}, {"hang", executor.CodeTimeout},
		{"garbage", executor.CodeMalformed}, {"badsum", executor.CodeChecksum},
	} {
		t.Run(c.mode, func(t *testing.T) {
			sock, seen := notifySocket(t)
			v, root := summarisingVault(t, bin, c.mode, sock, "1500ms")
			runEvent(t, v, PromptSubmit, Payload{SessionID: "s1", CWD: root, Prompt: "fix the race"})
			runEvent(t, v, SessionEnd, Payload{SessionID: "s1", CWD: root, LastAssistant: "fixed"})
			done := make(chan WorkReport)
			go func() { done <- runQueue(t, v) }()
			var rep WorkReport
			if c.mode == "hang" {
				select {
				case <-seen.seen: // the executor hangs now
				case rep = <-done:
					t.Fatal("jobs run did not wait for the executor")
				}
				if _, err := v.Update(vault.TxOptions{LockTimeout: 200 * time.Millisecond}, func(tx *vault.Tx) error {
					_, err := memory.Remember(tx, memory.Input{Text: "written while the executor hangs"})
					return err
				}); err != nil {
					t.Fatalf("the hanging executor held the vault lock: %v", err)
				}
				runEvent(t, v, Stop, Payload{SessionID: "s2", CWD: root, LastAssistant: "a turn meanwhile"})
			}
			rep = <-done
			if len(rep.Ran) != 3 || len(rep.Failed)+len(rep.Left) != 0 {
				t.Fatalf("jobs run: %+v", rep)
			}
			n := sessionNode(t, v, "s1")
			if n == nil || n.Summary != node.SummaryDeterministic || !strings.HasPrefix(n.SummaryFallback, c.code+": ") ||
				!strings.Contains(n.Body, "## Asked") {
				t.Fatalf("node %+v", n)
			}
			if k := testvault.Kinds(t, v); k[vault.KindDelegationFailed] != 1 {
				t.Errorf("kinds %v", k)
			}
			if kinds := strings.Join(jobKinds(t, v), " "); strings.Contains(kinds, "summarize") {
				t.Errorf("left queued: %v", kinds)
			}
			soundVault(t, v)
		})
	}
}
