package hooks

// Model-written session summaries (docs/EXECUTORS.md, "Summaries";
// docs/HOOKS.md, "Jobs"): when memvault.toml's [summarise] names an active
// executor, a summarize job asks it for the summary before its
// transaction. The call takes seconds, more than any hook may make its
// harness wait, so no hook makes it: a hook that finds such a job starts
// the background worker (worker.go) and goes on, and the worker, or
// `memvault jobs run`, asks the executor without the vault lock, then
// writes the node in a transaction. Without an active executor the hooks
// run the job as before, and the node says why it is deterministic.

import (
	"context"
	"fmt"
	"time"

	"github.com/memvault/memvault/hooks/hookstate"
	"github.com/memvault/memvault/vault/lineage"
	"github.com/memvault/memvault/vault/transcript"
)

// maxModelAttempts is how many background workers may start asking a
// model for one summary: a worker killed mid-call (by a person, by the
// system's memory killer, by a machine going to sleep) leaves the job
// queued, and the next one asks again; after this many the next worker
// writes the deterministic summary and says why. `memvault jobs run`
// always asks.
const maxModelAttempts = 3

// workerLockWait is how long the worker waits for the vault lock: it is
// on nobody's path, but should not outwait a lock someone forgot.
const workerLockWait = 5 * time.Second

// jobLockWait is the vault lock's wait of a job: a hook's, or the
// worker's.
func (r *Runner) jobLockWait() time.Duration {
	if r.worker {
		return workerLockWait
	}
	return eventLockWait
}

// modelSummary is the worker's summarize job: it counts the attempt (a
// background worker), lets the queue go, asks the model without any lock,
// then takes the queue again and writes the node, unless the job left the
// queue meanwhile. An interrupt stops the executor and writes nothing: the
// job stays queued. It releases claim.
func (k *worker) modelSummary(ctx context.Context, claim *hookstate.JobClaim, j hookstate.Job) error {
	var err error
	if k.opts.Background {
		if j, err = claim.Attempt(j); err != nil {
			return k.settle(claim, j, err)
		}
	}
	claim.Release()
	t := transcript.Ref{Agent: j.Agent, Session: j.Session}
	opts := lineage.ModelOptions{}
	gaveUp := k.opts.Background && j.Attempts > maxModelAttempts
	if gaveUp {
		opts.NoCall = true
	} else {
		k.progress("%s: asking the model", jobName(j))
	}
	model, merr := lineage.SessionModel(ctx, k.r.V, t, opts)
	if ctx.Err() != nil {
		return errInterrupted
	}
	if gaveUp && model != nil && model.Call.Err != nil {
		model.Call.Err = fmt.Errorf("summarise: not asked again: %d workers started asking it and did not finish (killed?)",
			j.Attempts-1)
	}
	claim, err = hookstate.ClaimJobs(k.r.V, workerClaimWait)
	if err != nil {
		return err
	}
	j, ok, err := claim.Take(j)
	if err != nil || !ok {
		claim.Release()
		return err // gone: another runner wrote it (the summariser was switched off meanwhile)
	}
	k.r.Start = time.Now()
	return k.settle(claim, j, k.r.summarizeJob(j, model, merr))
}
