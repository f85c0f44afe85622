package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/memvault/memvault/hooks"
	"github.com/memvault/memvault/hooks/hookstate"
	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/fault"
)

// memvault jobs: the queue of work the hooks deferred (docs/HOOKS.md,
// "Jobs"), listed; jobs run runs it now, model summaries included, in the
// foreground, or, with --background, as the worker a hook starts.

type jobsOptions struct{ jsonOnly }

type jobsRunOptions struct {
	json       bool
	background bool // be the worker a hook starts
}

func newJobsCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "jobs",
		Usage: "list the queued jobs the hooks deferred (summaries, head refreshes, imports): kind, session, age, attempts, what each waits for",
		Subcommands: []*ucli.Command{{
			Name:  "run",
			Usage: "run the queued jobs now, model summaries included, with progress on stderr; exits 0 when the queue is empty at the end",
		}},
	}
}

func (o *jobsRunOptions) flags() []ucli.Flag {
	return []ucli.Flag{newJSONFlag(&o.json),
		&ucli.BoolFlag{Name: "background", Destination: &o.background,
			Usage: "plumbing: be the worker a hook starts, handed the worker lock as descriptor 3; problems go to the hook log"}}
}

func runJobs(_ context.Context, opts jobsOptions, e env, v *vault.Vault) error {
	q, err := hooks.ListQueue(v)
	if err != nil {
		return err
	}
	if opts.json {
		return printJSON(e.stdout, q)
	}
	w := e.stdout
	if len(q.Jobs) == 0 {
		fmt.Fprintln(w, "no jobs queued")
	}
	now := time.Now()
	for _, j := range q.Jobs {
		attempts := ""
		if j.Attempts > 0 {
			attempts = fmt.Sprintf("  attempts: %d", j.Attempts)
		}
		fmt.Fprintf(w, "%-9s  %s/%s  %s ago%s  waits for %s\n", j.Kind, j.Agent, j.Session,
			age(int64(now.Sub(j.Queued).Seconds())), attempts, j.Waits)
	}
	if q.Worker.Running {
		fmt.Fprintf(w, "worker: running (%s)\n", q.Worker)
	}
	return nil
}

// jobsRunReport is `jobs run --json`.
type jobsRunReport struct {
	hooks.WorkReport
	Queued int `json:"queued"` // jobs still queued at the end
}

func runJobsRun(ctx context.Context, opts jobsRunOptions, e env) error {
	v, err := e.openVaultWith(vault.OpenForCapture)
	if err != nil {
		return err
	}
	if opts.background {
		return jobsWorker(ctx, v)
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	say := func(line string) { fmt.Fprintf(e.stderr, "memvault: jobs: %s\n", line) }
	w, ok, err := hookstate.TryJobWorker(v)
	if err == nil && !ok {
		say(fmt.Sprintf("waiting for the background worker (%s) to finish", hookstate.JobWorkerStatus(v)))
		w, err = hookstate.WaitJobWorker(v, func() bool { return ctx.Err() == nil })
		if ctx.Err() != nil {
			return fmt.Errorf("jobs run: interrupted while waiting for the background worker; nothing was run")
		}
	}
	if err != nil {
		return err
	}
	rep, err := hooks.Work(ctx, v, w, hooks.WorkOptions{Progress: say})
	if err != nil {
		return fmt.Errorf("jobs run: %w", err)
	}
	queued, err := hookstate.PendingJobs(v)
	if err != nil {
		return err
	}
	if opts.json {
		if err := printJSON(e.stdout, jobsRunReport{WorkReport: rep, Queued: len(queued)}); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(e.stdout, "%d jobs run, %d queued\n", len(rep.Ran), len(queued))
	}
	switch {
	case len(rep.Failed) > 0:
		return fmt.Errorf("jobs run: %d failed and dropped (see .logs/hooks.log): %s", len(rep.Failed), rep.Failed[0])
	case len(rep.Left) > 0:
		// The first reason classifies the exit (busy: 5, refused: its class).
		return fmt.Errorf("jobs run: %d left queued: %s: %w", len(rep.Left), rep.Left[0], rep.LeftErr())
	case len(queued) > 0:
		return fault.New(vault.ErrBusy, "jobs run: %d jobs queued meanwhile; run it again", len(queued))
	}
	return nil
}

// jobsWorker is `jobs run --background`, started by a hook (hooks/worker.go)
// with the worker lock as descriptor 3. It prints nothing (its streams are
// /dev/null): what goes wrong goes to the hook log, and it exits 0.
func jobsWorker(ctx context.Context, v *vault.Vault) error {
	w, err := hookstate.AdoptJobWorker(v, 3)
	if err != nil {
		hooks.LogTo(v.Root, fmt.Sprintf("jobs worker: %v", err))
		return err
	}
	// Stopped by a signal (a person's kill, a shutdown), the executor's
	// process group is killed and the job under way stays queued.
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	_, err = hooks.Work(ctx, v, w, hooks.WorkOptions{Background: true})
	if err != nil && !errors.Is(err, context.Canceled) {
		hooks.LogTo(v.Root, fmt.Sprintf("jobs worker: %v", err))
	}
	return nil
}

// jobsLine is the queue as status and doctor show it: "none queued", or
// "2 queued, the oldest 3m10s ago; worker: pid 4121, for 2.0 s".
func jobsLine(q hookstate.JobQueue, now time.Time) string {
	if q.Jobs == 0 && !q.Worker.Running {
		return "none queued"
	}
	s := fmt.Sprintf("%d queued", q.Jobs)
	if !q.Oldest.IsZero() {
		s += fmt.Sprintf(", the oldest %s ago", age(int64(now.Sub(q.Oldest).Seconds())))
	}
	return s + "; worker: " + q.Worker.String()
}

// staleJobs is how old the oldest queued job may be, with no worker
// running, before doctor warns: the hooks run the queue at every stop, so
// a job this old waits for a session that is not coming.
const staleJobs = time.Hour

// jobsProblem is doctor's warning about a queue nothing is running.
func jobsProblem(q hookstate.JobQueue, now time.Time) (hooks.Problem, bool) {
	if q.Jobs == 0 || q.Worker.Running || q.Oldest.IsZero() || now.Sub(q.Oldest) < staleJobs {
		return hooks.Problem{}, false
	}
	return hooks.Problem{Severity: hooks.SeverityWarning,
		Problem: fmt.Sprintf("%d jobs queued, the oldest %s ago, and no worker runs them: summaries and CONTINUITY.md wait for the next session's hooks",
			q.Jobs, age(int64(now.Sub(q.Oldest).Seconds()))),
		Fix: "memvault jobs run"}, true
}
