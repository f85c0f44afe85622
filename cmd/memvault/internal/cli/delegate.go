package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"unicode/utf8"

	ucli "github.com/urfave/cli/v2"

	"github.com/memvault/memvault/cmd/memvault/internal/ops"
	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/executor"
	"github.com/memvault/memvault/vault/fault"
	"github.com/memvault/memvault/vault/fileio"
)

// memvault delegate: run tasks on an executor, at most N at a time, and
// record each verified result as one event (docs/EXECUTORS.md,
// "Delegation"). The executors run without the vault lock; each result
// is written by a transaction of its own as soon as it is verified.

type delegateOptions struct {
	writeOptions
	rowThreadOptions
	executor       string // "" for the first active one
	any            bool
	capability     string // what a task that names none needs
	file           string // the tasks; "-" for stdin
	mode           string
	concurrency    int
	concurrencySet bool     // not given: memvault.toml's
	args           []string // tasks, or "-" for JSON lines on stdin
}

func newDelegateCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "delegate",
		Usage:     "run tasks on an executor and record each verified summary as an executor.delegated event",
		ArgsUsage: "TASK… | - | --file PATH",
		Description: "- reads the tasks as JSON lines from stdin, one object a line:\n" +
			"{\"id\": \"b\", \"task\": \"…\", \"after\": [\"a\"], \"capability\": \"read\", \"scope\": \"src/parse\", \"thread\": \"project:x\"};\n" +
			"a task with \"after\" runs once those it names have, and is given what they found; \"scope\" is the folder it runs in,\n" +
			"and its event goes to that folder's thread. --file reads them from a file (- for stdin): JSON lines when its\n" +
			"first line is an object, else one task a line.",
	}
}

func (o *delegateOptions) flags() []ucli.Flag {
	return o.writeFlags(
		&ucli.StringFlag{Name: "executor", Usage: "the executor's name (default: the first active one)", Destination: &o.executor},
		&ucli.BoolFlag{Name: "any", Usage: "share the tasks among the active executors able to do them, the least loaded first", Destination: &o.any},
		&ucli.StringFlag{Name: "capability", Usage: "what an executor must be able to do to be given a task that names none", Destination: &o.capability},
		&ucli.StringFlag{Name: "file", Usage: "read the tasks from this file (- for stdin): JSON lines, or one task a line", Destination: &o.file},
		newRowThreadFlag(&o.thread), newGlobalFlag(&o.global),
		&ucli.StringFlag{Name: "mode", Value: executor.ModeAuto, Usage: "how the tasks run; auto chooses from the tasks, the vault and the machine", Destination: &o.mode},
		&ucli.IntFlag{Name: "concurrency", Value: executor.DefaultConcurrency,
			DefaultText: fmt.Sprintf("memvault.toml's [delegate] concurrency, else %d", executor.DefaultConcurrency),
			Usage:       fmt.Sprintf("how many run at a time (%d–%d)", executor.MinConcurrency, executor.MaxConcurrency),
			Destination: &o.concurrency, Action: markSet[int](&o.concurrencySet)},
	)
}

func (o *delegateOptions) setArgs(args []string) { o.args = args }

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

// checkedTasks reads the tasks and checks them, and the options, before
// anything runs.
func (o delegateOptions) checkedTasks(e env) ([]executor.Task, error) {
	if !slices.Contains(executor.RunModes, o.mode) {
		return nil, usagef("delegate: --mode %q: want one of %s", o.mode, strings.Join(executor.RunModes, ", "))
	}
	tasks, err := delegateTasks(e, o.file, o.args)
	if err != nil {
		return nil, err
	}
	if need := o.capability; need != "" {
		if err := executor.CheckCapability(need); err != nil {
			return nil, fmt.Errorf("delegate: --capability: %w", err)
		}
		for i := range tasks {
			if tasks[i].Capability == "" {
				tasks[i].Capability = need
			}
		}
	}
	if _, err := executor.Order(tasks); err != nil {
		return nil, err // ids and dependencies, checked before anything runs
	}
	return tasks, executor.CheckConcurrency(o.concurrency)
}

// executors are the executor the tasks go to, the executors they are
// shared among with --any, and their names as the command says them.
func (o delegateOptions) executors(v *vault.Vault) (ex executor.Entry, many []executor.Entry, names string, err error) {
	switch {
	case o.any && o.executor != "":
		return ex, nil, "", usagef("delegate: --any and --executor do not go together")
	case o.any:
		if many, err = executor.Active(v); err != nil {
			return ex, nil, "", err
		}
		ex = many[0]
	default:
		if ex, err = executor.Pick(v, o.executor); err != nil {
			return ex, nil, "", err
		}
	}
	names = ex.Name
	if len(many) > 1 {
		var ns []string
		for _, m := range many {
			ns = append(ns, m.Name)
		}
		names = strings.Join(ns, ", ")
	}
	return ex, many, names, nil
}

// scopeThreads files each task scoped to a folder under that folder's
// thread, as remember run there would, unless the task names its thread.
func scopeThreads(v *vault.Vault, wd string, tasks []executor.Task) {
	for i, t := range tasks {
		if t.Scope == "" || t.Thread != "" {
			continue
		}
		dir := t.Scope
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(wd, dir)
		}
		if th, _, err := ops.CurrentThread(v, "", filepath.Clean(dir)); err == nil && th != "" {
			tasks[i].Thread = th
		}
	}
}

func runDelegate(ctx context.Context, opts delegateOptions, e env) error {
	tasks, err := opts.checkedTasks(e)
	if err != nil {
		return err
	}
	v, err := e.openVault()
	if err != nil {
		return err
	}
	concurrency := opts.concurrency
	if !opts.concurrencySet {
		if concurrency, err = executor.Concurrency(v); err != nil {
			return err
		}
	}
	ex, many, names, err := opts.executors(v)
	if err != nil {
		return err
	}
	thread, fromDir, err := currentThread(e, v, opts.rowThreadOptions)
	if err != nil {
		return err
	}
	wd, _ := os.Getwd()
	if !opts.global && !opts.typed() {
		scopeThreads(v, wd, tasks)
	}
	txo, err := e.txOptions(v, opts.writeOptions)
	if err != nil {
		return err
	}
	var last error
	// Executors run in process groups of their own, out of the terminal's
	// reach: an interrupt stops them through the context (their groups
	// killed), and what they had done is recorded as stopped.
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	out := executor.DelegateTasks(ctx, v, tasks, executor.Options{
		Executor: ex, Executors: many, Thread: thread, Concurrency: concurrency, Dir: wd, Tx: txo, Mode: opts.mode,
		OnMode: func(mode, why string) {
			if !opts.json {
				fmt.Fprintf(e.stderr, "memvault: delegate: %d tasks on %s, %s (%s)\n", len(tasks), names, mode, why)
			}
		},
		OnRecorded: func(o executor.Outcome) {
			if o.Err != nil {
				last = o.Err
			}
			printOutcome(e, opts.json, o)
		},
	})
	if len(out) == 1 && out[0].Task == "" && out[0].Err != nil {
		return out[0].Err // the tasks were refused before any ran
	}
	if fromDir {
		dirThreadNote(e, thread, optOutWrite)
	}
	return last
}

func printOutcome(e env, asJSON bool, o executor.Outcome) {
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
	if asJSON {
		// one object per line, as each task is recorded
		enc := json.NewEncoder(e.stdout)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(rep)
		return
	}
	w := e.stdout
	switch {
	case o.Err == nil:
		first, _, _ := strings.Cut(strings.TrimSpace(o.Response.Summary), "\n")
		fmt.Fprintf(w, "%s  %s\n", o.Event.ID, first)
	case o.Event != nil:
		fmt.Fprintf(w, "%s  failed after %d tries: %v\n", o.Event.ID, len(o.Attempts), o.Err)
	default:
		fmt.Fprintf(e.stderr, "memvault: delegate: %q: %v\n", o.Task, o.Err)
	}
}

// delegateTasks reads the tasks: the arguments, one task each; "-": JSON
// lines from stdin; or --file: JSON lines or one task a line.
func delegateTasks(e env, file string, args []string) ([]executor.Task, error) {
	switch {
	case file != "" && len(args) > 0:
		return nil, usagef("delegate: --file and tasks as arguments do not go together")
	case file != "":
		where := "stdin"
		var raw []byte
		var err error
		if file == "-" {
			raw, err = fileio.ReadBounded(e.stdin, "delegate: stdin", maxTaskInput)
		} else {
			where = file
			raw, err = fileio.ReadInput(file, "delegate: --file "+file, maxTaskInput)
		}
		if err != nil {
			return nil, usageIfMissing(err)
		}
		data, err := taskText(raw, where)
		if err != nil {
			return nil, err
		}
		if first := firstLine(data); strings.HasPrefix(first, "{") {
			return jsonTasks(data, where)
		}
		return lineTasks(data, where)
	case len(args) == 0:
		return nil, &usageError{msg: "delegate: no task", hint: "e.g. memvault delegate \"summarise the parser in src/parse\""}
	case len(args) > 1 || args[0] != "-":
		tasks := make([]executor.Task, len(args))
		for i, a := range args {
			if strings.TrimSpace(a) == "" {
				return nil, usagef("delegate: task %d is empty", i+1)
			}
			tasks[i] = executor.Task{Prompt: a}
		}
		return tasks, nil
	}
	data, err := readTaskInput(e.stdin, "stdin")
	if err != nil {
		return nil, err
	}
	return jsonTasks(data, "stdin")
}

// readTaskInput reads at most maxTaskInput bytes of valid UTF-8 tasks.
func readTaskInput(r io.Reader, where string) (string, error) {
	data, err := fileio.ReadBounded(r, "delegate: "+where, maxTaskInput)
	if err != nil {
		return "", err
	}
	return taskText(data, where)
}

// taskText is data, the tasks read, if it is UTF-8 text.
func taskText(data []byte, where string) (string, error) {
	if !utf8.Valid(data) {
		return "", usagef("delegate: %s: not UTF-8 text", where)
	}
	return string(data), nil
}

func firstLine(data string) string {
	for _, line := range strings.Split(data, "\n") {
		if l := strings.TrimSpace(line); l != "" {
			return l
		}
	}
	return ""
}

// jsonTasks parses JSON lines, one task object a line.
func jsonTasks(data, where string) ([]executor.Task, error) {
	var tasks []executor.Task
	for n, line := range strings.Split(data, "\n") {
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
			return nil, usagef("delegate: %s line %d: want {\"id\", \"task\", \"after\", \"capability\", \"scope\", \"thread\"}: %v", where, n+1, err)
		}
		tasks = append(tasks, t)
	}
	if len(tasks) == 0 {
		return nil, usagef("delegate: %s holds no task", where)
	}
	return tasks, nil
}

// lineTasks is one task a non-blank line.
func lineTasks(data, where string) ([]executor.Task, error) {
	var tasks []executor.Task
	for _, line := range strings.Split(data, "\n") {
		if l := strings.TrimSpace(line); l != "" {
			tasks = append(tasks, executor.Task{Prompt: l})
		}
	}
	if len(tasks) == 0 {
		return nil, usagef("delegate: %s holds no task", where)
	}
	return tasks, nil
}

// maxTaskInput bounds the tasks read from stdin or a file.
const maxTaskInput = 8 << 20

// usageIfMissing makes a missing --file a usage error (exit 2), as these
// flags have always answered it; every other refusal keeps its class.
func usageIfMissing(err error) error {
	if errors.Is(err, fault.ErrNotFound) {
		return usagef("%s", err.Error())
	}
	return err
}
