package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"unicode/utf8"

	ucli "github.com/urfave/cli/v2"

	"github.com/memvault/memvault/cmd/memvault/internal/ops"
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
		ArgsUsage: "TASK… | - | --file PATH",
		Description: "- reads the tasks as JSON lines from stdin, one object a line:\n" +
			"{\"id\": \"b\", \"task\": \"…\", \"after\": [\"a\"], \"capability\": \"read\", \"scope\": \"src/parse\", \"thread\": \"project:x\"};\n" +
			"a task with \"after\" runs once those it names have, and is given what they found; \"scope\" is the folder it runs in,\n" +
			"and its event goes to that folder's thread. --file reads them from a file (- for stdin): JSON lines when its\n" +
			"first line is an object, else one task a line.",
		Flags: writeFlags(
			&ucli.StringFlag{Name: "executor", Usage: "the executor's name (default: the first active one)"},
			&ucli.BoolFlag{Name: "any", Usage: "share the tasks among the active executors able to do them, the least loaded first"},
			&ucli.StringFlag{Name: "capability", Usage: "what an executor must be able to do to be given a task that names none"},
			&ucli.StringFlag{Name: "file", Usage: "read the tasks from this file (- for stdin): JSON lines, or one task a line"},
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
	thread, fromDir, err := legacyCurrentThread(c, v)
	if err != nil {
		return err
	}
	wd, _ := os.Getwd()
	if !c.Bool("global") && !threadOnCommandLine(c) {
		// a scoped task goes to its folder's thread, as remember run there would
		for i, t := range opts.tasks {
			if t.Scope == "" || t.Thread != "" {
				continue
			}
			dir := t.Scope
			if !filepath.IsAbs(dir) {
				dir = filepath.Join(wd, dir)
			}
			if th, _, err := ops.CurrentThread(v, "", filepath.Clean(dir)); err == nil && th != "" {
				opts.tasks[i].Thread = th
			}
		}
	}
	txo, err := txOptions(c, v)
	if err != nil {
		return err
	}
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
		dirThreadNote(envOf(c), thread, optOutWrite)
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

// delegateTasks reads the tasks: the arguments, one task each; "-": JSON
// lines from stdin; or --file: JSON lines or one task a line.
func delegateTasks(c *ucli.Context) ([]executor.Task, error) {
	args := c.Args().Slice()
	file := c.String("file")
	switch {
	case file != "" && len(args) > 0:
		return nil, usagef("delegate: --file and tasks as arguments do not go together")
	case file != "":
		var r io.Reader = c.App.Reader
		where := "stdin"
		if file != "-" {
			f, err := os.Open(file)
			if err != nil {
				return nil, usagef("delegate: --file %s: %v", file, unwrapPath(err))
			}
			defer f.Close()
			r, where = f, file
		}
		data, err := readTaskInput(r, where)
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
	data, err := readTaskInput(c.App.Reader, "stdin")
	if err != nil {
		return nil, err
	}
	return jsonTasks(data, "stdin")
}

func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// readTaskInput reads at most maxTaskInput bytes of valid UTF-8 tasks.
func readTaskInput(r io.Reader, where string) (string, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxTaskInput+1))
	if err != nil {
		return "", usagef("delegate: read %s: %v", where, unwrapPath(err))
	}
	if len(data) > maxTaskInput {
		return "", usagef("delegate: %s: over %d bytes of tasks", where, maxTaskInput)
	}
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
