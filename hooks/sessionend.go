package hooks

// A session's end, and the sessions that started and did not end: what a
// session end makes durable before it returns, the jobs it queues and who
// runs them, and the list of open sessions a harness without a session end
// is summarised from.

import (
	"path/filepath"
	"time"

	"github.com/memvault/memvault/hooks/hookstate"
	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/transcript"
	"github.com/memvault/memvault/vault/waiting"
)

// closeEarlierSessions makes up for harnesses whose session end may never
// come (OpenCode has none; OpenClaw's needs its Gateway): the sessions of
// this harness that started and did not end are queued for a summary when
// another session starts (the job runs at its first stop, compaction or
// end). Sessions that end properly are taken off the list.
func (r *Runner) closeEarlierSessions(t transcript.Ref, thread string) {
	r.editOpenList(func(open []hookstate.Job) []hookstate.Job {
		for _, j := range open {
			if j.Agent == t.Agent && j.Session == t.Session {
				continue
			}
			r.queue(j)
			r.queue(hookstate.Job{Kind: "condense", Agent: j.Agent, Session: j.Session, Harness: j.Harness})
			r.queue(hookstate.Job{Kind: "refresh", Agent: j.Agent, Session: j.Session, Harness: j.Harness, On: "session-end"})
		}
		return []hookstate.Job{{Kind: "summarize", Agent: t.Agent, Session: t.Session, Thread: thread, Harness: r.Harness.Name}}
	})
}

// sessionEnded takes a session off the list of sessions that started.
func (r *Runner) sessionEnded(t transcript.Ref) {
	r.editOpenList(func(open []hookstate.Job) []hookstate.Job {
		var still []hookstate.Job
		for _, j := range open {
			if j.Agent != t.Agent || j.Session != t.Session {
				still = append(still, j)
			}
		}
		return still
	})
}

// editOpenList changes the list of this harness's open sessions, which the
// vault keeps under a lock so that two sessions starting or ending at once
// do not lose each other's change. Without the lock in time the change is
// skipped and logged: the list only decides which sessions to summarise
// early.
func (r *Runner) editOpenList(fn func(open []hookstate.Job) []hookstate.Job) {
	if err := hookstate.EditOpenSessions(r.V, r.Harness.Name, eventLockWait, fn); err != nil {
		if vault.IsBusy(err) {
			logf(r.V, "%s open sessions: not updated: lock busy", r.Harness.Name)
			return
		}
		logf(r.V, "%s open sessions: %v", r.Harness.Name, err)
	}
}

func (r *Runner) sessionEnd(t transcript.Ref, p Payload, thread string) error {
	// Durable first: everything the harness wrote is imported and committed.
	if err := r.capture(t, p, thread, captureControls|captureCommit); err != nil {
		return err
	}
	// The summary, the head refresh and the session's one commit (the
	// refresh job's flush) are the worker's: queued, durable, and the
	// worker started; the hook returns. Without a worker the hook runs
	// them itself, from what is left of its budget on (finishSession). What the import could not read within
	// the budget goes first, so the summary covers the whole session.
	// The jobs go in one durable write: one sync of the queue's folder.
	r.sessionEnded(t)
	var jobs []hookstate.Job
	if b := r.behind; b != nil {
		if src, err := filepath.Abs(b.source); err == nil {
			jobs = append(jobs, hookstate.Job{Kind: "import", Agent: t.Agent, Session: t.Session, Harness: r.Harness.Name,
				Source: src, Format: string(b.format)})
		}
	}
	jobs = append(jobs, hookstate.Job{Kind: "summarize", Agent: t.Agent, Session: t.Session, Thread: thread, Harness: r.Harness.Name},
		hookstate.Job{Kind: "condense", Agent: t.Agent, Session: t.Session, Harness: r.Harness.Name},
		hookstate.Job{Kind: "refresh", Agent: t.Agent, Session: t.Session, Harness: r.Harness.Name, On: "session-end"})
	if err := hookstate.EnqueueJobs(r.V, jobs...); err != nil {
		logf(r.V, "queue the session end's jobs: %v", err)
	}
	if !r.handOff(true) {
		r.finishSession(t)
	}
	return nil
}

// finishSession runs the queue in the hook, there being no worker to hand
// it to (a test's runner, MEMVAULT_JOBS=inline, a worker that could not
// start): a budget at a time, for as long as the session's own jobs make
// progress, so that its summary, refresh and one commit come now; then
// flushLeft.
func (r *Runner) finishSession(t transcript.Ref) {
	left := func() int {
		jobs, _ := hookstate.PendingJobs(r.V)
		n := 0
		for _, j := range jobs {
			if j.Agent == t.Agent && j.Session == t.Session {
				n++
			}
		}
		return n
	}
	for i, n := 0, left(); i < maxFinishBudgets && n > 0; i++ {
		// A budget of its own each, the first too: the hook's work before
		// may have spent the hook's (a loaded machine), and a budget that
		// ran nothing would read as another process holding the queue.
		r.Start = time.Now()
		r.runJobs()
		if m := left(); m < n {
			n = m
		} else {
			break // no progress: another process runs the queue, or a model's summary waits for the worker
		}
	}
	r.flushLeft(t)
}

// maxFinishBudgets bounds the job budgets a session end without a worker
// spends on its own jobs.
const maxFinishBudgets = 8

// flushLeft commits what the session left waiting when the hook ran its
// jobs itself and they did not all run (another process holds the queue, a
// model's summary waits for the worker; their refresh ends with the flush,
// and so does a worker's, moments after the hook returns): a session end
// leaves the vault's work tree as git has it, so that a person's `git
// pull` or `git commit -a` between sessions meets nothing of memvault's.
// The summary a job writes later makes its own commit, so a session of K
// recording turns stays within K + 2 commits.
func (r *Runner) flushLeft(t transcript.Ref) {
	if waiting.Load(r.V.Files(), r.V.Root).Empty() {
		return
	}
	if _, err := r.V.Flush(r.txOptions(t, eventLockWait)); err != nil && !r.refused(err) {
		logf(r.V, "%s session-end %s: commit what waits: %v", r.Harness.Name, t.Session, err)
	}
}
