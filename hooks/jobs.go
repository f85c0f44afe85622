package hooks

// Work a hook defers to a later event (a summary, a refresh, an index
// catch-up), run oldest first within the hook's time budget.

import (
	"errors"
	"time"

	"github.com/memvault/memvault/vault"
)

func (r *Runner) queue(j vault.Job) {
	if err := r.V.EnqueueJob(j); err != nil {
		logf(r.V, "queue %s job: %v", j.Kind, err)
	}
}

// runDeferred retries the head refreshes that were deferred because
// someone held a head's lease.
func (r *Runner) runDeferred() {
	if _, err := r.V.RunDeferred(vault.TxOptions{Command: "hook deferred refresh", Agent: r.Agent,
		Harness: r.Harness.Name, LockTimeout: eventLockWait}); err != nil && !vault.IsBusy(err) && !r.refused(err) {
		logf(r.V, "deferred head refresh: %v", err)
	}
}

// runJobs retries deferred head refreshes, then runs queued jobs, oldest
// first, until the budget is spent. Only one hook process runs the queue at
// a time; another waits for it within the budget, then leaves the jobs to
// it. A job that fails on a busy vault stays queued for the next event, and
// so do the jobs after it; so does one a vault in need of repair refuses
// (health.go), until the repair; one that fails otherwise is logged and
// dropped.
func (r *Runner) runJobs() {
	r.runDeferred()
	wait := jobBudget - time.Since(r.Start)
	if wait < 0 {
		return
	}
	claim, err := r.V.ClaimJobs(wait)
	if err != nil {
		if !vault.IsBusy(err) {
			logf(r.V, "job queue: %v", err)
		}
		return
	}
	defer claim.Release()
	defer r.catchUpIndex()
	for time.Since(r.Start) <= jobBudget {
		j, ok, err := claim.Next()
		if err != nil {
			logf(r.V, "job queue: %v", err)
			return
		}
		if !ok {
			return
		}
		if err := r.runJob(j); err != nil {
			if vault.IsBusy(err) || r.refused(err) {
				return // try again at the next event, or once the vault is repaired
			}
			logf(r.V, "job %s %s/%s: %v", j.Kind, j.Agent, j.Session, err)
		}
		if err := claim.Done(j); err != nil {
			logf(r.V, "job %s %s/%s: %v", j.Kind, j.Agent, j.Session, err)
		}
	}
}

// catchUpIndex spends what is left of the job budget on a bounded index
// catch-up, so that the next prompt's recall has less to search in memory.
// Only the queue's runner does it, so hook processes do not queue up on the
// index lock.
func (r *Runner) catchUpIndex() {
	if time.Since(r.Start) > jobBudget-indexStepTime {
		return
	}
	if _, err := r.V.CatchUpIndex(indexStepBytes); err != nil && !vault.IsBusy(err) {
		logf(r.V, "index catch-up: %v", err)
	}
}

func (r *Runner) runJob(j vault.Job) error {
	t := vault.TranscriptRef{Agent: j.Agent, Session: j.Session}
	switch j.Kind {
	case "summarize":
		_, err := r.V.Update(vault.TxOptions{Command: "hook job summarize", Agent: j.Agent, Session: j.Session,
			Harness: j.Harness, LockTimeout: eventLockWait}, func(tx *vault.Tx) error {
			if _, _, err := tx.Summarize(t, vault.SummaryOptions{Thread: j.Thread}); err != nil {
				return err
			}
			// A lineage event: the summary commits what the session left
			// uncommitted (the turns after its last commit, for a session
			// that never ended).
			return tx.CommitTranscript(t)
		})
		if errors.Is(err, vault.ErrNotFound) {
			return nil // no transcript: nothing to summarise
		}
		if err != nil {
			return err
		}
		// CONTINUITY.md: the summary recorded the session's control lines
		// (DONE:, NEXT:, DECISION:, …); count the session, audit, refresh.
		_, err = r.V.UpdateContinuityAtSessionEnd(vault.TxOptions{Command: "hook job continuity", Agent: j.Agent,
			Session: j.Session, Harness: j.Harness, LockTimeout: eventLockWait}, vault.SessionEndInput{})
		return err
	case "refresh":
		// Tier 1 and the Tier 2 heads this session wrote to (and the job's
		// thread: a compaction node's); a head someone holds is deferred by
		// Refresh itself, and retried by a later event.
		return r.refresh(j, "hook job refresh", eventLockWait)
	}
	return nil
}
