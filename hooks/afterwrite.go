package hooks

// Heads never behind (docs/HEADS.md, "Freshness"): after a write that a
// front end committed (the command line, the MCP server, the web view's
// --write routes) or a stop hook that recorded memory, the heads whose
// rows changed are brought up to date off the writer's path. The writer
// queues one refresh job (unless one is queued and not yet started) and
// starts the detached job worker (worker.go), or leaves the job to the
// worker that runs; it waits for neither. The worker marks the job started
// before it reads the ledger, so a write committed after that queues a new
// job, which the same worker finds and runs (coalescing: a burst of writes
// makes one refresh, or a few, not one per write); the job leaves the
// queue once it ran, so a worker that dies mid-way leaves it to the next.

import (
	"fmt"
	"strings"
	"time"

	"github.com/memvault/memvault/hooks/hookstate"
	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/continuity"
	"github.com/memvault/memvault/vault/heads"
)

// RefreshMode is how the heads are brought up to date after a write
// (MEMVAULT_REFRESH).
type RefreshMode string

const (
	// RefreshBackground queues a refresh job and starts the detached
	// worker: the default.
	RefreshBackground RefreshMode = "background"
	// RefreshInline refreshes in the writer's process before it returns:
	// slower, deterministic (tests, scripts that read the heads next).
	RefreshInline RefreshMode = "inline"
	// RefreshOff refreshes nothing: the heads wait for the next session
	// end, `memvault render` or `memvault refresh`.
	RefreshOff RefreshMode = "off"
)

// ParseRefreshMode reads MEMVAULT_REFRESH: "" is RefreshBackground.
func ParseRefreshMode(s string) (RefreshMode, error) {
	switch m := RefreshMode(strings.TrimSpace(s)); m {
	case "":
		return RefreshBackground, nil
	case RefreshBackground, RefreshInline, RefreshOff:
		return m, nil
	}
	return "", fmt.Errorf("MEMVAULT_REFRESH=%q: want background, inline or off", s)
}

// Refresher is what a front end does after each write it committed. The
// zero Refresher does nothing: a front end built without one (a test's)
// leaves the heads as they are.
type Refresher struct {
	Mode RefreshMode
	// Binary is memvault's own path: the worker is `Binary --vault ROOT
	// jobs run --background`, handed the worker lock. Without it a
	// background refresh runs inline.
	Binary string
}

// WorkerCommand is the worker command of the vault at root, run by the
// memvault binary at self.
func WorkerCommand(self, root string) []string {
	return []string{self, "--vault", root, "jobs", "run", "--background"}
}

// After brings the heads of v up to date after a write that made commit;
// a write that committed nothing ("") or failed calls for nothing. What
// goes wrong is logged (.logs/hooks.log), never returned: the write
// succeeded, and the heads are retried by the next write or session end.
func (k Refresher) After(v *vault.Vault, commit string) {
	var worker []string
	if k.Binary != "" {
		worker = WorkerCommand(k.Binary, v.Root)
	}
	k.after(v, commit, worker, onWrite)
}

// after is After for a write of kind on: onWrite, a front end's, whose
// refresh commits; onStop, a session's, whose refresh rides in the
// session's next commit.
func (k Refresher) after(v *vault.Vault, commit string, worker []string, on string) {
	if commit == "" || k.Mode == "" || k.Mode == RefreshOff {
		return
	}
	if k.Mode == RefreshInline || len(worker) == 0 {
		if err := refreshAfter(v, 0, on); err != nil && !vault.IsBusy(err) {
			logf(v, "heads refresh after a write: %v", err)
		}
		return
	}
	if err := queueHeadsRefresh(v, on); err != nil {
		logf(v, "heads refresh after a write: %v", err)
		return
	}
	startWorker(v, worker)
}

// writeSettle is how long after the first write of a burst the worker
// refreshes: the writes of a script (twenty `remember`s) that come
// meanwhile find the job queued and queue none, so that the burst makes
// one refresh or a few, and the heads are current well within a second of
// the last write.
const writeSettle = 200 * time.Millisecond

// settleWrites waits, holding no claim on the queue (a hook's jobs do not
// wait for it), until the refresh after a write that is next in the queue
// is writeSettle old.
func (k *worker) settleWrites() {
	jobs, err := hookstate.PendingJobs(k.r.V)
	if err != nil || len(jobs) == 0 || !isWriteRefresh(jobs[0]) || jobs[0].Attempts > 0 || k.settled[jobs[0].ID()] {
		return
	}
	if wait := writeSettle - time.Since(jobs[0].Queued()); wait > 0 {
		time.Sleep(min(wait, writeSettle))
	}
}

// Refresh jobs after a write carry no session: they refresh every head
// behind its rows, whoever wrote them. After a front end's write (onWrite)
// the refresh makes its own commit, named by what the heads gained: no
// other commit may come for a long time. After a session's stop (onStop)
// it is deferred: the heads ride in the session's next commit, the next
// stop that records memory or its end (docs/HOOKS.md, "Commits").
const (
	onWrite = "write"
	onStop  = "stop"
)

func isWriteRefresh(j hookstate.Job) bool {
	return j.Kind == "refresh" && j.Session == "" && (j.On == onWrite || j.On == onStop)
}

// QueueHeadsRefresh queues a refresh of the heads behind their rows,
// unless one is queued that has not started: its runner marks it started
// (hookstate.MarkStarted) before it reads the ledger, so one not marked
// will see this write. One marked stays queued until it ran (a crash
// leaves it for the next runner), and a write during it queues another.
func QueueHeadsRefresh(v *vault.Vault) error { return queueHeadsRefresh(v, onWrite) }

// queueHeadsRefresh is QueueHeadsRefresh after a write of kind on. A
// queued front end's refresh stands for a stop's too (its commit carries
// what the stop deferred); a queued stop's does not stand for a front
// end's, which must commit.
func queueHeadsRefresh(v *vault.Vault, on string) error {
	jobs, err := hookstate.PendingJobs(v)
	if err != nil {
		return err
	}
	for _, j := range jobs {
		if isWriteRefresh(j) && j.Attempts == 0 && (j.On == on || j.On == onWrite) {
			return nil
		}
	}
	// Not synced: lost in a crash of the machine, the heads wait for the
	// next write or session end, as they did before this job existed.
	return hookstate.EnqueueHint(v, hookstate.Job{Kind: "refresh", On: on})
}

// refreshAfterWriteJob runs a queued refresh after a write: marked
// started first, then the refresh; its runner takes it off the queue once
// it ran, or leaves it for the next one on a busy vault.
func (r *Runner) refreshAfterWriteJob(j hookstate.Job, wait time.Duration) error {
	if err := hookstate.MarkStarted(r.V, j); err != nil {
		return err
	}
	return refreshAfter(r.V, wait, j.On)
}

// RefreshAfterWrite refreshes MEMORY.md, the thread heads whose rows
// changed since their last render, and CONTINUITY.md, through the heads'
// leases and merge (a hand edit is kept; a head someone holds is
// deferred); a head already current is left alone and, when none changed,
// nothing is committed.
func RefreshAfterWrite(v *vault.Vault, wait time.Duration) error {
	return refreshAfter(v, wait, onWrite)
}

// refreshAfter is RefreshAfterWrite after a write of kind on.
func refreshAfter(v *vault.Vault, wait time.Duration, on string) error {
	_, err := heads.Refresh(v, heads.RefreshOptions{TxOptions: headsTxOptions(wait, on), Trigger: on,
		Memory: true, Affected: true, Continuity: true, Protocol: continuity.RefreshHead, AfterWrite: true})
	return err
}

// headsTxOptions are the transaction options of every refresh after a
// write, made here only: deferred after a session's stop (onStop).
func headsTxOptions(wait time.Duration, on string) vault.TxOptions {
	return vault.TxOptions{Command: "heads refresh", LockTimeout: wait, Defer: on == onStop}
}

// afterStop brings the heads up to date after a stop whose control lines
// recorded memory (res made a commit), as a front end does after a write.
func (r *Runner) afterStop(res *vault.Result) {
	if res != nil {
		Refresher{Mode: r.Refresh}.after(r.V, res.Commit, r.Worker, onStop)
	}
}
