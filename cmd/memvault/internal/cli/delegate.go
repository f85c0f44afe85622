package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	ucli "github.com/urfave/cli/v2"

	"github.com/memvault/memvault/vault/executor"
)

// memvault delegate: run tasks on an executor, at most N at a time, and
// record each verified result as one event (docs/EXECUTORS.md,
// "Delegation"). The executors run without the vault lock; each result
// is written by a transaction of its own as soon as it is verified.

type delegateOptions struct {
	executor    string
	concurrency int
	mode        string
	json        bool
	tasks       []executor.Task
}

func newDelegateCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "delegate",
		Usage:     "run tasks on an executor and record each verified summary as an executor.delegated event",
		ArgsUsage: "TASK… | -",
		Description: "- reads the tasks as JSON lines from stdin, one object a line: {\"id\": \"b\", \"task\": \"…\", \"after\": [\"a\"]};\n" +
			"a task with \"after\" runs once those it names have, and is given what they found.",
		Flags: writeFlags(
			&ucli.StringFlag{Name: "executor", Usage: "the executor's name (default: the first active one)"},
			&ucli.BoolFlag{Name: "any", Usage: "share the tasks among the active executors able to do them, the least loaded first"},
			&ucli.StringFlag{Name: "capability", Usage: "what an executor must be able to do to be given a task that names none"},
			rowThreadFlag, globalFlag,
			&ucli.StringFlag{Name: "mode", Value: executor.ModeAuto, Usage: "how the tasks run; auto chooses from the tasks, the vault and the machine"},
			&ucli.IntFlag{Name: "concurrency", Value: executor.DefaultConcurrency,
				DefaultText: fmt.Sprintf("memvault.toml's [delegate] concurrency, else %d", executor.DefaultConcurrency),
				Usage:       fmt.Sprintf("how many run at a time (%d–%d)", executor.MinConcurrency, executor.MaxConcurrency)},
		),
	}
}

// delegateReport is one task's line of --json.
type delegateReport struct {
	Task     string             `json:"task"`
	OK       bool               `json:"ok"`
	ID       string             `json:"id,omitempty"`
	Kind     string             `json:"kind,omitempty"`
	Summary  string             `json:"summary,omitempty"`
	Checksum string             `json:"checksum,omitempty"`
	Attempts []executor.Attempt `json:"attempts"`
	Error    string             `json:"error,omitempty"`
	Code     string             `json:"code,omitempty"`
}

func runDelegate(c *ucli.Context) error {
	opts := delegateOptions{executor: c.String("executor"), concurrency: c.Int("concurrency"), mode: c.String("mode"), json: c.Bool("json")}
	if !slices.Contains(executor.RunModes, opts.mode) {
		return usagef("delegate: --mode %q: want one of %s", opts.mode, strings.Join(executor.RunModes, ", "))
	}
	tasks, err := delegateTasks(c)
	if err != nil {
		return err
	}
	if need := c.String("capability"); need != "" {
		if err := executor.CheckCapability(need); err != nil {
			return fmt.Errorf("delegate: --capability: %w", err)
		}
		for i := range tasks {
			if tasks[i].Capability == "" {
				tasks[i].Capability = need
			}
		}
	}
	if _, err := executor.Order(tasks); err != nil {
		return err // ids and dependencies, checked before anything runs
	}
	opts.tasks = tasks
	if err := executor.CheckConcurrency(opts.concurrency); err != nil {
		return err
	}
	v, err := openVault(c)
	if err != nil {
		return err
	}
	if !c.IsSet("concurrency") {
		if opts.concurrency, err = executor.Concurrency(v); err != nil {
			return err
		}
	}
	var e executor.Entry
	var many []executor.Entry
	switch {
	case c.Bool("any") && opts.executor != "":
		return usagef("delegate: --any and --executor do not go together")
	case c.Bool("any"):
		if many, err = executor.Active(v); err != nil {
			return err
		}
		e = many[0]
	default:
		if e, err = executor.Pick(v, opts.executor); err != nil {
			return err
		}
	}
	names := e.Name
	if len(many) > 1 {
		var ns []string
		for _, m := range many {
			ns = append(ns, m.Name)
		}
		names = strings.Join(ns, ", ")
	}
	thread, fromDir, err := currentThread(c, v)
	if err != nil {
		return err
	}
	txo, err := txOptions(c, v)
	if err != nil {
		return err
	}
	wd, _ := os.Getwd()
	var last error
	// Executors run in process groups of their own, out of the terminal's
	// reach: an interrupt stops them through the context (their groups
	// killed), and what they had done is recorded as stopped.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	out := executor.DelegateTasks(ctx, v, opts.tasks, executor.Options{
		Executor: e, Executors: many, Thread: thread, Concurrency: opts.concurrency, Dir: wd, Tx: txo, Mode: opts.mode,
		OnMode: func(mode, why string) {
			if !opts.json {
				fmt.Fprintf(c.App.ErrWriter, "memvault: delegate: %d tasks on %s, %s (%s)\n", len(opts.tasks), names, mode, why)
			}
		},
		OnRecorded: func(o executor.Outcome) {
			if o.Err != nil {
				last = o.Err
			}
			printOutcome(c, opts, o)
		},
	})
	if len(out) == 1 && out[0].Task == "" && out[0].Err != nil {
		return out[0].Err // the tasks were refused before any ran
	}
	if fromDir {
		dirThreadNote(c, thread, optOutWrite)
	}
	return last
}

func printOutcome(c *ucli.Context, opts delegateOptions, o executor.Outcome) {
	rep := delegateReport{Task: o.Task, OK: o.Err == nil, Attempts: o.Attempts}
	if rep.Attempts == nil {
		rep.Attempts = []executor.Attempt{}
	}
	if o.Event != nil {
		rep.ID, rep.Kind = o.Event.ID, o.Event.Kind
	}
	if o.Response != nil {
		rep.Summary, rep.Checksum = o.Response.Summary, o.Response.Checksum
	}
	if o.Err != nil {
		rep.Error, rep.Code = o.Err.Error(), executor.CodeOf(o.Err)
	}
	if opts.json {
		// one object per line, as each task is recorded
		enc := json.NewEncoder(c.App.Writer)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(rep)
		return
	}
	w := c.App.Writer
	switch {
	case o.Err == nil:
		first, _, _ := strings.Cut(strings.TrimSpace(o.Response.Summary), "\n")
		fmt.Fprintf(w, "%s  %s\n", o.Event.ID, first)
	case o.Event != nil:
		fmt.Fprintf(w, "%s  failed after %d tries: %v\n", o.Event.ID, len(o.Attempts), o.Err)
	default:
		fmt.Fprintf(c.App.ErrWriter, "memvault: delegate: %q: %v\n", o.Task, o.Err)
	}
}

// delegateTasks reads the tasks: the arguments, one task each, or "-":
// JSON lines from stdin.
func delegateTasks(c *ucli.Context) ([]executor.Task, error) {
	args := c.Args().Slice()
	if len(args) == 0 {
		return nil, &usageError{msg: "delegate: no task", hint: "e.g. memvault delegate \"summarise the parser in src/parse\""}
	}
	if len(args) > 1 || args[0] != "-" {
		tasks := make([]executor.Task, len(args))
		for i, a := range args {
			if strings.TrimSpace(a) == "" {
				return nil, usagef("delegate: task %d is empty", i+1)
			}
			tasks[i] = executor.Task{Prompt: a}
		}
		return tasks, nil
	}
	data, err := io.ReadAll(io.LimitReader(c.App.Reader, maxTaskInput+1))
	if err != nil {
		return nil, fmt.Errorf("delegate: read stdin: %w", err)
	}
	if len(data) > maxTaskInput {
		return nil, usagef("delegate: stdin: over %d bytes of tasks", maxTaskInput)
	}
	var tasks []executor.Task
	for n, line := range strings.Split(string(data), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		dec := json.NewDecoder(strings.NewReader(line))
		dec.DisallowUnknownFields()
		var t executor.Task
		if err := dec.Decode(&t); err != nil || dec.More() {
			if err == nil {
				err = fmt.Errorf("data after the object")
			}
			return nil, usagef("delegate: stdin line %d: want {\"id\", \"task\", \"after\"}: %v", n+1, err)
		}
		tasks = append(tasks, t)
	}
	if len(tasks) == 0 {
		return nil, usagef("delegate: stdin holds no task")
	}
	return tasks, nil
}

// maxTaskInput bounds the tasks read from stdin.
const maxTaskInput = 8 << 20
