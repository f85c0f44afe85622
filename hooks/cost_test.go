package hooks

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime/pprof"
	"testing"
	"time"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/memory"
)

// costVault is a project's vault as docs/PERFORMANCE.md measures the
// hooks on: fifty decisions of its thread, committed one by one.
func costVault(b testing.TB) (root, cwd string) {
	b.Helper()
	cwd = filepath.Join(b.TempDir(), "proj")
	root = filepath.Join(cwd, vault.DirName)
	v, _, err := vault.Init(root)
	if err != nil {
		b.Fatal(err)
	}
	for i := range 50 {
		if _, err := v.Update(vault.TxOptions{Command: "remember"}, func(tx *vault.Tx) error {
			_, err := memory.Remember(tx, memory.Input{Kind: "decision", Thread: "project:proj",
				Text: fmt.Sprintf("decision %d: use postgres shard %d for the billing ledger service", i, i)})
			return err
		}); err != nil {
			b.Fatal(err)
		}
	}
	return root, cwd
}

// costCall runs the four hooks of one `claude -p` call as a hook process
// does, each opening the vault afresh; each event's work carries the pprof
// label event=NAME (go tool pprof -tagfocus event=session-end), and each
// event's time is added to took. worker is the runner's Worker.
func costCall(b testing.TB, root, cwd, sid string, worker []string, took map[Event]time.Duration) {
	b.Helper()
	h := mustHarness(b, "claude-code")
	payloads := []struct {
		ev Event
		p  Payload
	}{
		{SessionStart, Payload{Source: "startup"}},
		{PromptSubmit, Payload{Prompt: "which database does the billing ledger use?"}},
		{Stop, Payload{LastAssistant: "It uses postgres.\nDECISION: keep postgres for billing"}},
		{SessionEnd, Payload{Reason: "other"}},
	}
	for _, e := range payloads {
		e.p.SessionID, e.p.CWD = sid, cwd
		start := time.Now()
		pprof.Do(context.Background(), pprof.Labels("event", string(e.ev)), func(context.Context) {
			v, err := vault.OpenForCapture(root)
			if err != nil {
				b.Fatal(err)
			}
			r := &Runner{V: v, Harness: h, Agent: "default", Start: start, Worker: worker, Refresh: RefreshOff}
			if _, err := r.Run(e.ev, e.p); err != nil {
				b.Fatal(err)
			}
		})
		took[e.ev] += time.Since(start)
	}
}

// BenchmarkHookCall is the four hooks of one call on a fifty-decision
// vault, without the process start; the time of each event is reported
// (ms/EVENT). With a worker command that does nothing, the session end's
// jobs stay queued for it (the detached worker's work is not the hook's);
// without one, the hook runs them within its budget.
func BenchmarkHookCall(b *testing.B) {
	for _, c := range []struct {
		name   string
		worker []string
	}{{"inline-jobs", nil}, {"worker", []string{"true"}}} {
		b.Run(c.name, func(b *testing.B) {
			root, cwd := costVault(b)
			took := map[Event]time.Duration{}
			b.ResetTimer()
			for i := range b.N {
				costCall(b, root, cwd, fmt.Sprintf("s%d", i), c.worker, took)
			}
			for _, ev := range []Event{SessionStart, PromptSubmit, Stop, SessionEnd} {
				b.ReportMetric(float64(took[ev].Microseconds())/1000/float64(b.N), "ms/"+string(ev))
			}
		})
	}
}
