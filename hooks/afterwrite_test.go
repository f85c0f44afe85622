package hooks

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memvault/memvault/hooks/hookstate"
	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/continuity"
	"github.com/memvault/memvault/vault/gitrepo"
	"github.com/memvault/memvault/vault/heads"
	"github.com/memvault/memvault/vault/testvault"
)

// freshVault is a vault whose heads, CONTINUITY.md included, were all
// rendered once.
func freshVault(t *testing.T) *vault.Vault {
	t.Helper()
	v := testvault.New(t)
	if _, err := continuity.UpdateContinuity(v, continuity.ContinuityOptions{Trigger: "test",
		TxOptions: vault.TxOptions{Command: "test"}}, func(*continuity.ContinuityTx) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if err := RefreshAfterWrite(v, 0); err != nil {
		t.Fatal(err)
	}
	return v
}

func headHas(t *testing.T, v *vault.Vault, head, want string) bool {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(v.Root, head))
	return err == nil && strings.Contains(string(data), want)
}

// A stop whose reply recorded a decision refreshes MEMORY.md, the
// thread's head and CONTINUITY.md (the runner's Refresh inline here; the
// hook's default starts the worker, fresh_test.go in cmd/memvault); a stop
// that recorded nothing commits nothing and refreshes nothing.
func TestStopThatRecordedRefreshesHeads(t *testing.T) {
	t.Parallel()
	v := freshVault(t)
	h := mustHarness(t, "claude-code")
	run := func(reply string) {
		t.Helper()
		r := &Runner{V: v, Harness: h, Agent: "default", Thread: "project:alpha", Start: time.Now(), Refresh: RefreshInline}
		if _, err := r.Run(Stop, Payload{SessionID: "s1", LastAssistant: reply}); err != nil {
			t.Fatal(err)
		}
	}
	before := commits(t, v)
	run("Nothing to record this turn.")
	if got := commits(t, v); got != before {
		t.Errorf("a stop that recorded nothing made %d commits", got-before)
	}
	run("Settled.\nDECISION: keep the exports in parquet\n")
	for _, head := range []string{vault.MemoryHead, vault.ContinuityHead, "threads/project/alpha.md"} {
		if !headHas(t, v, head, "keep the exports in parquet") {
			t.Errorf("%s after the stop lacks the decision the stop recorded", head)
		}
	}
	if stale, err := heads.StaleHeads(v); err != nil || len(stale) > 0 {
		t.Errorf("stale heads after the stop: %v %v", stale, err)
	}
}

func commits(t *testing.T, v *vault.Vault) int {
	t.Helper()
	n := 0
	if err := v.Log(func(gitrepo.CommitInfo) bool { n++; return true }); err != nil {
		t.Fatal(err)
	}
	return n
}

// The queue keeps one refresh after a write: a second write finds it
// queued and queues none. The worker marks it started before it
// refreshes, so a write made while the refresh runs queues a new one,
// which the same run of the worker finds and runs: the heads end current
// and the queue empty.
func TestRefreshAfterWriteCoalesces(t *testing.T) {
	t.Parallel()
	v := freshVault(t)
	for range 3 {
		if err := QueueHeadsRefresh(v); err != nil {
			t.Fatal(err)
		}
	}
	if jobs, _ := hookstate.PendingJobs(v); len(jobs) != 1 {
		t.Fatalf("three writes queued %d refresh jobs, want 1", len(jobs))
	}
	remember := func(text string) {
		t.Helper()
		if _, err := v.Update(vault.TxOptions{Command: "test"}, func(tx *vault.Tx) error {
			tx.Append(&vault.Event{Kind: "decision", Thread: "project:alpha", Text: text})
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	remember("first decision")
	// The worker takes the job, then waits for the vault lock, which the
	// test holds: the job is marked started before the refresh reads
	// anything, so the write the test makes then queues a new one.
	release, err := v.Lock(vault.Lease{Agent: "test", Command: "test"}, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	w, ok, err := hookstate.TryJobWorker(v)
	if err != nil || !ok {
		t.Fatalf("worker lock: %v %v", ok, err)
	}
	type result struct {
		rep WorkReport
		err error
	}
	out := make(chan result, 1)
	go func() {
		rep, err := newWorker(v, WorkOptions{}).run(t.Context(), w)
		out <- result{rep, err}
	}()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		if jobs, _ := hookstate.PendingJobs(v); len(jobs) == 1 && jobs[0].Attempts > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the worker never took the job")
		}
	}
	if err := QueueHeadsRefresh(v); err != nil {
		t.Fatal(err)
	}
	if jobs, _ := hookstate.PendingJobs(v); len(jobs) != 2 {
		t.Fatalf("a write during the refresh left %d jobs queued, want 2: the one running and a new one", len(jobs))
	}
	release()
	remember("second decision")
	res := <-out
	rep, err := res.rep, res.err
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Ran) != 2 {
		t.Errorf("the worker ran %v: want the refresh taken and the one queued during it", rep.Ran)
	}
	if !headHas(t, v, vault.MemoryHead, "second decision") || !headHas(t, v, vault.MemoryHead, "first decision") {
		t.Errorf("MEMORY.md lacks a decision written before the worker stopped")
	}
	if jobs, _ := hookstate.PendingJobs(v); len(jobs) != 0 {
		t.Errorf("%d jobs left queued", len(jobs))
	}
}

// A row MEMORY.md does not show (a thread's fact) leaves its render as it
// was; the refresh records it current, so status does not call it stale
// until some later row changes it.
func TestUnchangedHeadIsCurrentAfterRefresh(t *testing.T) {
	t.Parallel()
	v := freshVault(t)
	for _, text := range []string{"the thread starts", "the cache lives in /var/cache"} {
		if _, err := v.Update(vault.TxOptions{Command: "test"}, func(tx *vault.Tx) error {
			tx.Append(&vault.Event{Kind: "fact", Thread: "project:alpha", Text: text})
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if text == "the thread starts" {
			if err := RefreshAfterWrite(v, 0); err != nil { // MEMORY.md lists the new thread
				t.Fatal(err)
			}
		}
	}
	if stale, _ := heads.StaleHeads(v); len(stale) == 0 {
		t.Fatal("no stale head after a new row: the test sees nothing")
	}
	if err := RefreshAfterWrite(v, 0); err != nil {
		t.Fatal(err)
	}
	if stale, err := heads.StaleHeads(v); err != nil || len(stale) > 0 {
		t.Errorf("stale after the refresh: %v %v", stale, err)
	}
	if !headHas(t, v, "threads/project/alpha.md", "the cache lives in /var/cache") {
		t.Error("the thread's head lacks its fact")
	}
}

// BenchmarkAfterWrite is what a write pays for the refresh after it: the
// queue looked at, a job queued when none is, the worker lock tried and a
// worker started (here /bin/true, which exits at once).
func BenchmarkAfterWrite(b *testing.B) {
	v := testvault.New(b)
	k := Refresher{Mode: RefreshBackground}
	for b.Loop() {
		if jobs, _ := hookstate.PendingJobs(v); len(jobs) > 0 {
			os.RemoveAll(filepath.Join(v.Root, ".state", "jobs"))
		}
		k.after(v, "c0ffee", []string{"/bin/true"}, onWrite)
	}
}

// A worker that died in its refresh (the job marked started, never run to
// its end) leaves the job queued: the next worker runs it, and the heads
// end current.
func TestRefreshAfterWriteSurvivesADeadWorker(t *testing.T) {
	t.Parallel()
	v := freshVault(t)
	if _, err := v.Update(vault.TxOptions{Command: "test"}, func(tx *vault.Tx) error {
		tx.Append(&vault.Event{Kind: "decision", Text: "ship on fridays"})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := QueueHeadsRefresh(v); err != nil {
		t.Fatal(err)
	}
	jobs, _ := hookstate.PendingJobs(v)
	if len(jobs) != 1 {
		t.Fatalf("%d jobs queued", len(jobs))
	}
	if err := hookstate.MarkStarted(v, jobs[0]); err != nil { // and the worker dies
		t.Fatal(err)
	}
	w, ok, err := hookstate.TryJobWorker(v)
	if err != nil || !ok {
		t.Fatalf("worker lock: %v %v", ok, err)
	}
	if _, err := Work(t.Context(), v, w, WorkOptions{}); err != nil {
		t.Fatal(err)
	}
	if !headHas(t, v, vault.MemoryHead, "ship on fridays") {
		t.Error("MEMORY.md lacks the decision whose refresh a dead worker left")
	}
	if jobs, _ := hookstate.PendingJobs(v); len(jobs) != 0 {
		t.Errorf("%d jobs left queued", len(jobs))
	}
}
