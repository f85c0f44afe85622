package hooks

// Work a hook defers to a later event (a summary, a refresh, an index
// catch-up), run oldest first within the hook's time budget.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/memvault/memvault/vault/continuity"

	"github.com/memvault/memvault/hooks/hookstate"
	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/heads"
	"github.com/memvault/memvault/vault/lineage"
	"github.com/memvault/memvault/vault/recall"
	"github.com/memvault/memvault/vault/transcript"
)

func (r *Runner) queue(j hookstate.Job) {
	if err := hookstate.EnqueueJob(r.V, j); err != nil {
		logf(r.V, "queue %s job: %v", j.Kind, err)
	}
}

// JobsMode is where the work a hook queues is run (MEMVAULT_JOBS).
type JobsMode string

const (
	// JobsBackground leaves the queue to the detached worker (worker.go):
	// the default. A stop or a compaction starts it when jobs wait, a
	// session end always; none of them runs a job on the agent's path.
	JobsBackground JobsMode = "background"
	// JobsInline runs the queue in the hook within its budget, as when no
	// worker can be started: slower, deterministic (tests, scripts that
	// read the summary next).
	JobsInline JobsMode = "inline"
)

// ParseJobsMode reads MEMVAULT_JOBS: "" is JobsBackground.
func ParseJobsMode(s string) (JobsMode, error) {
	switch m := JobsMode(strings.TrimSpace(s)); m {
	case "":
		return JobsBackground, nil
	case JobsBackground, JobsInline:
		return m, nil
	}
	return "", fmt.Errorf("MEMVAULT_JOBS=%q: want background or inline", s)
}

// handOff gives the queued jobs to the detached worker, started unless one
// runs, when the runner has one and is not told to run its jobs inline;
// always: start it even when the queue looks empty (a session end, which
// queued its own). It reports false when no worker runs: the caller runs
// the jobs itself (runJobs), so that no job waits for a worker that cannot
// start.
func (r *Runner) handOff(always bool) bool {
	if len(r.Worker) == 0 || r.Jobs == JobsInline {
		return false
	}
	if !always {
		jobs, err := hookstate.PendingJobs(r.V)
		if err == nil && len(jobs) == 0 && !recall.EmbedDue(r.V) {
			return true // nothing waits
		}
	}
	return r.startWorker()
}

// runDeferred retries the head refreshes that were deferred because
// someone held a head's lease.
func (r *Runner) runDeferred() {
	if _, err := heads.RunDeferred(r.V, vault.TxOptions{Command: "hook deferred refresh", Agent: r.Agent,
		Harness: r.Harness.Name, LockTimeout: eventLockWait, Defer: true}, continuity.RefreshHead); err != nil && !vault.IsBusy(err) && !r.refused(err) {
		logf(r.V, "deferred head refresh: %v", err)
	}
}

// runJobs retries deferred head refreshes, then runs queued jobs, oldest
// first, until the budget is spent; import jobs last (below). Only one hook
// process runs the queue at a time; another waits for it within the budget,
// then leaves the jobs to it. A job that fails on a busy vault stays queued
// for the next event, and so do the jobs after it; so does one a vault in
// need of repair refuses (health.go), until the repair; one that fails
// otherwise is logged and dropped. A summary a model writes is never run
// here: it takes seconds, so the hook starts the background worker for it
// (worker.go) and goes on; the jobs of its session wait for it.
func (r *Runner) runJobs() {
	r.runDeferred()
	wait := jobBudget - time.Since(r.Start)
	if wait < 0 {
		return
	}
	claim, err := hookstate.ClaimJobs(r.V, wait)
	if err != nil {
		if !vault.IsBusy(err) {
			logf(r.V, "job queue: %v", err)
		}
		return
	}
	if r.runClaimed(claim) || recall.EmbedDue(r.V) {
		r.startWorker()
	}
}

// runClaimed is runJobs under the queue's claim, which it releases; it
// reports whether it left a summary for a model to write.
func (r *Runner) runClaimed(claim *hookstate.JobClaim) (model bool) {
	defer claim.Release()
	defer r.catchUpIndex()
	// An import job (a large transcript a session end could not read in
	// its budget) takes what the other jobs leave, at least one small
	// window, so that it holds up no other session's summary or refresh;
	// the jobs of its own session wait for it.
	var imports []hookstate.Job
	behind := map[transcript.Ref]bool{}
	summarising := sync.OnceValue(func() bool { return lineage.Summarising(r.V) })
	for time.Since(r.Start) <= jobBudget {
		j, ok, err := claim.Next()
		if err != nil {
			logf(r.V, "job queue: %v", err)
			return model
		}
		if !ok {
			break
		}
		t := transcript.Ref{Agent: j.Agent, Session: j.Session}
		if j.Kind == "import" {
			imports = append(imports, j)
			behind[t] = true
			continue
		}
		if behind[t] {
			continue // stays queued until its session's import (or model summary) is done
		}
		if j.Kind == "summarize" && summarising() {
			behind[t], model = true, true // the worker's
			continue
		}
		if !r.finishJob(claim, j) {
			return model
		}
	}
	for _, j := range imports {
		if !r.finishJob(claim, j) {
			return model
		}
	}
	return model
}

// finishJob runs j and takes it off the queue, and reports whether the
// runner may go on to the next job.
func (r *Runner) finishJob(claim *hookstate.JobClaim, j hookstate.Job) bool {
	if err := r.runJob(j); err != nil {
		if errors.Is(err, errUnfinished) {
			return false // it goes on at the next event
		}
		if vault.IsBusy(err) || r.refused(err) {
			return false // try again at the next event, or once the vault is repaired
		}
		logf(r.V, "job %s %s/%s: %v", j.Kind, j.Agent, j.Session, err)
	}
	if err := claim.Done(j); err != nil {
		logf(r.V, "job %s %s/%s: %v", j.Kind, j.Agent, j.Session, err)
	}
	return true
}

// catchUpIndex spends what is left of the job budget on a bounded index
// catch-up, so that the next prompt's recall has less to search in memory.
// Only the queue's runner does it, so hook processes do not queue up on the
// index lock.
func (r *Runner) catchUpIndex() {
	if time.Since(r.Start) > jobBudget-indexStepTime {
		return
	}
	if _, err := recall.CatchUpIndex(r.V, indexStepBytes); err != nil && !vault.IsBusy(err) {
		logf(r.V, "index catch-up: %v", err)
	}
}

// errUnfinished: a job used its budget and has more to do; it stays first
// in the queue.
var errUnfinished = errors.New("unfinished")

func (r *Runner) runJob(j hookstate.Job) error {
	t := transcript.Ref{Agent: j.Agent, Session: j.Session}
	switch j.Kind {
	case "import":
		return r.importJob(t, j)
	case "summarize":
		// A hook runs a summary only when no model writes it; it names
		// the executor [summarise] names, if any, and why it was not
		// asked (summarise.go).
		model, err := lineage.SessionModel(context.Background(), r.V, t, lineage.ModelOptions{NoCall: true})
		return r.summarizeJob(j, model, err)
	case "condense": // the cadence: closed days and weeks condensed, self-summaries (docs/LINEAGE.md, "Cadence")
		_, err := lineage.RunCadence(r.V, r.jobOptions(j, "hook job condense"), r.V.Now())
		return err
	case "refresh":
		// Tier 1 and the Tier 2 heads this session wrote to (and the job's
		// thread: a compaction node's); a head someone holds is deferred by
		// Refresh itself, and retried by a later event.
		if err := r.refresh(j, "hook job refresh", r.jobLockWait()); err != nil {
			return err
		}
		if j.On != "session-end" {
			return nil
		}
		// The session's end is one commit: its transcript, its summary,
		// continuity.session and the heads, all written deferred, with
		// whatever else waits, named by the summary's title and the
		// memory it carries.
		_, err := r.V.Flush(r.jobOptions(j, "hook job flush"))
		return err
	}
	return nil
}

// jobOptions are the options of a job's transaction: deferred, for the
// session-end flush to commit (bookkeeping, docs/HOOKS.md "Commits").
func (r *Runner) jobOptions(j hookstate.Job, command string) vault.TxOptions {
	return vault.TxOptions{Command: command, Agent: j.Agent, Session: j.Session, Harness: j.Harness,
		LockTimeout: r.jobLockWait(), Defer: true}
}

// summarizeJob writes the session-summary node of j's session, with the
// model's summary asked for before (model, modelErr; nil without
// [summarise]), then updates CONTINUITY.md.
func (r *Runner) summarizeJob(j hookstate.Job, model *lineage.Model, modelErr error) error {
	t := transcript.Ref{Agent: j.Agent, Session: j.Session}
	if errors.Is(modelErr, vault.ErrNotFound) {
		return nil // no transcript: nothing to summarise
	}
	if modelErr != nil {
		return modelErr
	}
	_, err := r.V.Update(r.jobOptions(j, "hook job summarize"), func(tx *vault.Tx) error {
		if _, _, err := lineage.Summarize(tx, t, lineage.SummaryOptions{Thread: j.Thread, Model: model}); err != nil {
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
	_, err = continuity.UpdateContinuityAtSessionEnd(r.V, r.jobOptions(j, "hook job continuity"), continuity.SessionEndInput{})
	return err
}

// importJob goes on with the import of a harness transcript that a session
// end left unfinished at its budget (a large transcript met for the first
// time), within the job budget; once it has read the file to its end, it
// commits the transcript with its transcript.imported event, as the session
// end would have. The summary queued after it waits for it.
func (r *Runner) importJob(t transcript.Ref, j hookstate.Job) error {
	format, err := transcript.ParseFormat(j.Format)
	if err != nil {
		return err
	}
	opts := r.jobOptions(j, "hook job import")
	rep, err := lineage.ImportUntil(r.V, opts, t, format, j.Source, r.Start.Add(jobBudget))
	if errors.Is(err, vault.ErrNotFound) {
		return nil // the file is gone: nothing more to read
	}
	if err != nil {
		return err
	}
	if rep.More {
		return errUnfinished
	}
	_, err = r.V.Update(opts, func(tx *vault.Tx) error {
		if err := lineage.RecordImport(tx, t, format, j.Source); err != nil {
			return err
		}
		return tx.CommitTranscript(t)
	})
	return err
}

// QueuedJob is a queued job as `memvault jobs` lists it.
type QueuedJob struct {
	ID       string    `json:"id"`
	Kind     string    `json:"kind"`
	Agent    string    `json:"agent"`
	Session  string    `json:"session"`
	Thread   string    `json:"thread,omitempty"`
	Harness  string    `json:"harness,omitempty"`
	Queued   time.Time `json:"queued"`
	Attempts int       `json:"attempts"`
	// Waits says what the job waits for, in the words of docs/HOOKS.md.
	Waits string `json:"waits"`
}

// Queue is the job queue and its worker.
type Queue struct {
	Jobs   []QueuedJob           `json:"jobs"`
	Worker hookstate.WorkerState `json:"worker"`
}

// What a queued job waits for.
const (
	waitsEvent        = "the next stop, compaction or session end, or memvault jobs run"
	waitsImport       = "its session's import, before it"
	waitsSummary      = "its session's summary, before it"
	waitsModel        = "a model ([summarise]): the next stop, compaction or session end starts the worker, or memvault jobs run"
	waitsModelRunning = "a model ([summarise]): the worker is on it"
)

// ListQueue lists the queued jobs, oldest first, each with what it waits
// for, the way the hooks and the worker would take them.
func ListQueue(v *vault.Vault) (Queue, error) {
	jobs, err := hookstate.PendingJobs(v)
	if err != nil {
		return Queue{}, err
	}
	q := Queue{Jobs: []QueuedJob{}, Worker: hookstate.JobWorkerStatus(v)}
	summarising := sync.OnceValue(func() bool { return lineage.Summarising(v) })
	behind := map[transcript.Ref]string{}
	for _, j := range jobs {
		t := transcript.Ref{Agent: j.Agent, Session: j.Session}
		waits := waitsEvent
		switch {
		case behind[t] != "" && j.Kind != "import":
			waits = behind[t]
		case j.Kind == "import":
			behind[t] = waitsImport
		case j.Kind == "summarize" && summarising():
			waits = waitsModel
			if q.Worker.Running {
				waits = waitsModelRunning
			}
			behind[t] = waitsSummary
		}
		q.Jobs = append(q.Jobs, QueuedJob{ID: j.ID(), Kind: j.Kind, Agent: j.Agent, Session: j.Session, Thread: j.Thread,
			Harness: j.Harness, Queued: j.Queued(), Attempts: j.Attempts, Waits: waits})
	}
	return q, nil
}
