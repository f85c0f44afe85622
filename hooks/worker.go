package hooks

// The job worker (docs/HOOKS.md, "Jobs"): the queue run outside any hook,
// with no hook's budget. A hook that finds a summary for a model to write
// starts it in the background (`memvault jobs run --background`): a
// process in a session of its own, its standard streams on /dev/null,
// handed the worker lock (hooks/hookstate/jobworker.go), which the hook took
// without waiting, so two hooks never start two workers. A person runs the
// same loop in the foreground with `memvault jobs run`.
//
// The worker runs every queued job oldest first, the jobs of a session in
// their order, until none is left that it may run; then it lets the lock
// go and looks once more: a hook that queued a job while the worker held
// the lock started no worker, and the job was queued before that hook
// tried the lock, so it is either seen by this last look (and the worker
// takes the lock again, if nobody else did) or by a worker started after
// the lock was let go.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/memvault/memvault/hooks/hookstate"
	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/executor"
	"github.com/memvault/memvault/vault/fileio"
	"github.com/memvault/memvault/vault/lineage"
	"github.com/memvault/memvault/vault/recall"
	"github.com/memvault/memvault/vault/transcript"
)

// workerClaimWait is how long the worker waits for the queue, which a
// hook holds for its job budget (and one job past it at most).
const workerClaimWait = 10 * time.Second

// errInterrupted: the run was interrupted; what was under way wrote
// nothing and stays queued.
var errInterrupted = errors.New("interrupted; the job under way stays queued")

// startWorker starts the background worker, detached, unless one runs,
// and reports whether one runs now.
func (r *Runner) startWorker() bool { return startWorker(r.V, r.Worker) }

// startWorker starts worker, the command of v's background worker,
// detached, unless one runs: the runner's after a hook, a front end's
// after a write (afterwrite.go). It reports whether a worker runs now
// (this one, or one that held the lock): false without a worker command,
// or when it could not be started, and the queue waits for the caller or
// the next event.
func startWorker(v *vault.Vault, worker []string) bool {
	if len(worker) == 0 {
		return false
	}
	w, ok, err := hookstate.TryJobWorker(v)
	if err != nil {
		logf(v, "jobs worker: %v", err)
		return false
	}
	if !ok {
		return true // a worker runs: it looks at the queue again before it stops
	}
	inheritNothing()
	cmd := exec.Command(worker[0], worker[1:]...)
	cmd.Dir = v.Root
	cmd.Env = workerEnv(os.Environ())
	cmd.ExtraFiles = []*os.File{w.File()}
	// A session of its own: the harness's terminal and process group
	// signals (a Ctrl-C in the agent's terminal) do not reach it, and a
	// harness that kills its hook's group leaves it be.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		w.Release()
		logf(v, "jobs worker: start %s: %v", worker[0], err)
		return false
	}
	w.Handoff()
	go cmd.Wait() //nolint:errcheck // reaped in a process that outlives it (tests); the worker logs for itself
	return true
}

// inheritNothing marks every descriptor of this process close-on-exec
// (Go's own are already), so that the worker inherits none the hook was
// started with: a harness waits for its hook's output to end, and a copy
// of that pipe held open by the worker would make it wait for the worker.
// The worker gets its streams on /dev/null and the lock, and nothing else.
func inheritNothing() {
	// /proc/self is a link, which a Root does not follow.
	entries, err := fileio.At("/proc").ReadDir("/proc/" + strconv.Itoa(os.Getpid()) + "/fd")
	if err != nil {
		return // no /proc: nothing to do but hope
	}
	for _, e := range entries {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd > 2 {
			syscall.CloseOnExec(fd)
		}
	}
}

// workerEnv is the hook's environment as the worker gets it: without the
// variables that would point git at another repository or memvault at
// another vault (the worker is given its vault), a profile to write, and
// without any whose name suggests a credential (executors never get those
// either: vault/executor/env.go).
func workerEnv(env []string) []string {
	var out []string
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		switch {
		case name == "GIT_DIR", name == "GIT_INDEX_FILE", name == "GIT_WORK_TREE",
			name == "MEMVAULT_DIR", name == "MEMVAULT_CPUPROFILE", executor.LooksSecret(name):
			continue
		}
		out = append(out, kv)
	}
	return out
}

// WorkOptions tune a run of the queue outside a hook.
type WorkOptions struct {
	// Progress hears a line per step, for a person (`jobs run` prints them
	// on stderr); nil: nothing is said.
	Progress func(line string)
	// Background: the worker a hook started. Problems go to the hook log,
	// and a summary whose model no worker finished asking
	// (maxModelAttempts) is written without it.
	Background bool
}

// WorkReport is what a run of the queue did, each job named "KIND
// AGENT/SESSION".
type WorkReport struct {
	Ran    []string `json:"ran"`    // run and taken off the queue
	Failed []string `json:"failed"` // failed, with why: logged and dropped, as a hook drops them
	Left   []string `json:"left"`   // still queued (a busy vault, a vault in need of repair): LeftErr says why

	leftErr error // why the first job left was left
}

// LeftErr is why the first job left queued was left (a busy vault's
// ErrBusy, a refusal's class); nil when none was.
func (rep WorkReport) LeftErr() error { return rep.leftErr }

// worker is one run of the queue.
type worker struct {
	r    *Runner
	opts WorkOptions
	rep  WorkReport
	// settled: the jobs this run ran or left; blocked: sessions with a
	// job left, whose later jobs wait for it.
	settled map[string]bool
	blocked map[transcript.Ref]bool
	idle    func() // called when the queue holds nothing to run, before the lock goes (tests)
}

// Work runs the queued jobs of v under the worker lock w, model summaries
// included, until none is left that it may run, and releases w. It stops
// at an interrupt of ctx (the executor's process group killed, nothing of
// the job under way written) with an error, and when the queue stays busy.
func Work(ctx context.Context, v *vault.Vault, w *hookstate.JobWorker, opts WorkOptions) (WorkReport, error) {
	k := newWorker(v, opts)
	defer recall.EmbedInBackground(ctx, v, func(f string, a ...any) { logf(v, f, a...) }) // issue 36: after the jobs
	rep, err := k.run(ctx, w)
	if err == nil {
		// The index catch-up the hooks' job runner did in what was left of
		// its budget (jobs.go) is the worker's now that the hooks leave the
		// queue to it: the next prompt's recall has less to index itself.
		if _, cerr := recall.CatchUpIndex(v, workerIndexBytes); cerr != nil && !vault.IsBusy(cerr) {
			logf(v, "jobs worker: index catch-up: %v", cerr)
		}
	}
	return rep, err
}

// workerIndexBytes bounds the worker's index catch-up after its jobs
// (about two seconds of work): a vault that took in more (a bulk import)
// is caught up by the next worker, or by recall a step at a time.
const workerIndexBytes = 16 * indexStepBytes

func newWorker(v *vault.Vault, opts WorkOptions) *worker {
	return &worker{r: &Runner{V: v, Harness: &Harness{Name: "jobs"}, ev: "run", worker: true}, opts: opts,
		settled: map[string]bool{}, blocked: map[transcript.Ref]bool{}}
}

func (k *worker) run(ctx context.Context, w *hookstate.JobWorker) (WorkReport, error) {
	defer w.Release()
	for {
		if err := k.drain(ctx); err != nil {
			return k.rep, err
		}
		if k.idle != nil {
			k.idle() // a test's: a job queued between the last look and the unlock
		}
		w.Unlock()
		more, err := k.more()
		if err != nil || !more {
			return k.rep, err
		}
		if ok, err := w.Relock(); err != nil || !ok {
			return k.rep, err // another worker took it: it runs the job
		}
	}
}

// drain runs jobs until none is left that this run may run.
func (k *worker) drain(ctx context.Context) error {
	for {
		if ctx.Err() != nil {
			return errInterrupted
		}
		k.settleWrites() // afterwrite.go
		claim, err := hookstate.ClaimJobs(k.r.V, workerClaimWait)
		if err != nil {
			return err
		}
		j, ok, err := k.next(claim)
		if err != nil || !ok {
			claim.Release()
			return err
		}
		k.r.Start, k.r.session = time.Now(), j.Session
		if j.Kind == "summarize" && lineage.Summarising(k.r.V) {
			err = k.modelSummary(ctx, claim, j)
		} else {
			k.progress("%s: running", jobName(j))
			err = k.settle(claim, j, k.r.runJob(j))
		}
		if err != nil {
			return err
		}
	}
}

// next is the oldest job this run may run: not settled, its session not
// blocked.
func (k *worker) next(claim *hookstate.JobClaim) (hookstate.Job, bool, error) {
	for {
		j, ok, err := claim.Next()
		if err != nil || !ok {
			return j, false, err
		}
		if !k.settled[j.ID()] && !k.blocked[transcript.Ref{Agent: j.Agent, Session: j.Session}] {
			return j, true, nil
		}
	}
}

// more reports whether the queue holds a job this run has not settled:
// one queued while it ran.
func (k *worker) more() (bool, error) {
	jobs, err := hookstate.PendingJobs(k.r.V)
	if err != nil {
		return false, err
	}
	for _, j := range jobs {
		if !k.settled[j.ID()] && !k.blocked[transcript.Ref{Agent: j.Agent, Session: j.Session}] {
			return true, nil
		}
	}
	return false, nil
}

// settle takes j off the queue after it ran (err nil), or after it failed
// for good (logged, and dropped as a hook drops it); leaves it queued, with
// its session's later jobs, when the vault was busy or refused it; and
// releases claim. An import with more to read stays first, for the next
// round.
func (k *worker) settle(claim *hookstate.JobClaim, j hookstate.Job, err error) error {
	defer claim.Release()
	name := jobName(j)
	switch {
	case errors.Is(err, errUnfinished):
		return nil
	case vault.IsBusy(err) || k.r.refused(err):
		k.settled[j.ID()] = true
		k.blocked[transcript.Ref{Agent: j.Agent, Session: j.Session}] = true
		k.rep.Left = append(k.rep.Left, name)
		if k.rep.leftErr == nil {
			k.rep.leftErr = err
		}
		k.progress("%s: left queued: %v", name, err)
		return nil
	case err != nil:
		k.rep.Failed = append(k.rep.Failed, name+": "+oneLine(err.Error()))
		k.progress("%s: failed, dropped: %v", name, err)
		logf(k.r.V, "jobs worker: job %s: %v", name, err)
	default:
		k.rep.Ran = append(k.rep.Ran, name)
		k.progress("%s: done", name)
	}
	k.settled[j.ID()] = true
	if derr := claim.Done(j); derr != nil {
		logf(k.r.V, "jobs worker: job %s: %v", name, derr)
	}
	return nil
}

func (k *worker) progress(format string, args ...any) {
	if k.opts.Progress != nil {
		k.opts.Progress(fmt.Sprintf(format, args...))
	}
}

// jobName names a job for people: "summarize default/s1", "refresh after
// a write".
func jobName(j hookstate.Job) string {
	if isWriteRefresh(j) {
		return "refresh after a write"
	}
	return j.Kind + " " + j.Agent + "/" + j.Session
}
