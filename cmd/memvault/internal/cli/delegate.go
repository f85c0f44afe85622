package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"

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
	json        bool
	tasks       []string
}

func newDelegateCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "delegate",
		Usage:     "run tasks on an executor and record each verified summary as an executor.delegated event",
		ArgsUsage: "TASK…",
		Flags: writeFlags(
			&ucli.StringFlag{Name: "executor", Aliases: []string{"e"}, Usage: "the executor's name (default: the first active one)"},
			rowThreadFlag, globalFlag,
			&ucli.IntFlag{Name: "concurrency", Value: executor.DefaultConcurrency,
				Usage: fmt.Sprintf("how many run at a time (%d–%d)", executor.MinConcurrency, executor.MaxConcurrency)},
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
	opts := delegateOptions{executor: c.String("executor"), concurrency: c.Int("concurrency"), json: c.Bool("json"), tasks: c.Args().Slice()}
	for _, t := range opts.tasks {
		if strings.TrimSpace(t) == "" {
			return usagef("delegate: an empty task")
		}
	}
	if len(opts.tasks) == 0 {
		return &usageError{msg: "delegate: no task", hint: "e.g. memvault delegate \"summarise the parser in src/parse\""}
	}
	if err := executor.CheckConcurrency(opts.concurrency); err != nil {
		return err
	}
	v, err := openVault(c)
	if err != nil {
		return err
	}
	e, err := executor.Pick(v, opts.executor)
	if err != nil {
		return err
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
	out := executor.Delegate(context.Background(), v, opts.tasks, executor.Options{
		Executor: e, Thread: thread, Concurrency: opts.concurrency, Dir: wd, Tx: txo,
		OnRecorded: func(o executor.Outcome) {
			if o.Err != nil {
				last = o.Err
			}
			printOutcome(c, opts, o)
		},
	})
	_ = out // printed as each was recorded
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
