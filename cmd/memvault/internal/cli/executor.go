package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"
	"unicode"

	ucli "github.com/urfave/cli/v2"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/executor"
)

// memvault executor add|list|show|ping|remove: the registry of executors
// in memvault.toml (docs/EXECUTORS.md). add and ping run the executor's
// ping before the vault lock is taken, then record what it found in one
// transaction that changes memvault.toml alone.

type executorAddOptions struct {
	writeOptions
	timeout, pingTimeout       time.Duration
	timeoutSet, pingTimeoutSet bool // given: a preset's own do not apply
	plain                      bool
	env                        []string
	weight                     int
	preset                     string
	memoryLimit                string
	isolate                    string
	capabilities               []string
	args                       []string // NAME, then the COMMAND and its ARGS
}

// executorNameOptions are the options of executor ping and remove.
type executorNameOptions struct {
	writeOptions
	args []string // NAME
}

type executorListOptions struct{ jsonOnly }

type executorShowOptions struct {
	json bool
	args []string // NAME
}

func newExecutorCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "executor",
		Usage: "the executors delegate runs: other agents' CLIs, local models, scripts (docs/EXECUTORS.md)",
		Subcommands: []*ucli.Command{
			{
				Name:      "add",
				Usage:     "register an executor and ping it; one that fails its ping is added inactive, with the reason",
				ArgsUsage: "NAME [--preset P] -- COMMAND [ARGS…]",
				Description: "The prompt reaches the command on stdin (the request envelope; the prompt's text with --plain),\n" +
					"or in an argument holding {prompt}.",
			},
			{Name: "list", Usage: "list the registered executors"},
			{Name: "show", Usage: "print one executor's registration", ArgsUsage: "NAME"},
			{Name: "ping", Usage: "ping an executor and record whether it answered (active or inactive)", ArgsUsage: "NAME"},
			{Name: "remove", Usage: "take an executor out of memvault.toml", ArgsUsage: "NAME"},
		},
	}
}

func (o *executorAddOptions) flags() []ucli.Flag {
	return o.writeFlags(
		&ucli.DurationFlag{Name: "timeout", Value: executor.DefaultTimeout, Usage: "how long one try may run", Destination: &o.timeout, Action: markSet[time.Duration](&o.timeoutSet)},
		&ucli.DurationFlag{Name: "ping-timeout", Value: executor.PingTimeout, DefaultText: "2s; a preset's 15s", Usage: "how long a ping may run", Destination: &o.pingTimeout, Action: markSet[time.Duration](&o.pingTimeoutSet)},
		&ucli.BoolFlag{Name: "plain", Usage: "the command prints text: memvault wraps it and computes the checksum", Destination: &o.plain},
		&ucli.StringSliceFlag{Name: "env", Usage: "an environment variable passed through (repeatable); never a credential's", Action: setSlice(&o.env)},
		&ucli.IntFlag{Name: "weight", Value: 1, Usage: "slots of delegate's concurrency bound one run takes", Destination: &o.weight},
		&ucli.StringFlag{Name: "preset", Usage: "a harness CLI's command, arguments, mode, timeout and ping (after --: ollama's model, generic's command)", Destination: &o.preset},
		&ucli.StringFlag{Name: "isolate", Usage: "net: run it in a network namespace of its own, no network at all (Linux with user namespaces, or root); refused where the platform cannot", Destination: &o.isolate},
		&ucli.StringFlag{Name: "memory-limit", Usage: "bound its address space (RLIMIT_AS, Linux), e.g. 4GiB; a run out of memory under it is memory_limit", Destination: &o.memoryLimit},
		&ucli.StringSliceFlag{Name: "capability", Usage: "what it can do (repeatable), when its ping reply does not say; default: " + executor.DefaultCapability, Action: setSlice(&o.capabilities)},
	)
}

func (o *executorAddOptions) setArgs(args []string) { o.args = args }

func (o *executorNameOptions) flags() []ucli.Flag { return o.writeFlags() }

func (o *executorNameOptions) setArgs(args []string) { o.args = args }

func (o *executorShowOptions) flags() []ucli.Flag { return []ucli.Flag{newJSONFlag(&o.json)} }

func (o *executorShowOptions) setArgs(args []string) { o.args = args }

// pingReport is what add and ping print.
type pingReport struct {
	Executor executor.Entry `json:"executor"`
	OK       bool           `json:"ok"`
	Error    string         `json:"error,omitempty"`
	Code     string         `json:"code,omitempty"`
	MS       int64          `json:"ms"`
	// Hint is what to do about a failed ping, when memvault can tell
	// (printed as a hint: line; executorHint).
	Hint string `json:"hint,omitempty"`
}

// shellWord is w as a shell reads it back: bare when safe, else in single
// quotes; one with a control character is Go-quoted, so the hint stays one
// line.
func shellWord(w string) string {
	if w != "" && strings.Trim(w, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./:=@%+,-{}") == "" {
		return w
	}
	if strings.ContainsFunc(w, unicode.IsControl) {
		return strconv.Quote(w)
	}
	return "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
}

// executorHint is what to do about ex's failed ping, when memvault can
// tell: a command that answered with text, not memvault's JSON reply, is
// one for --plain (docs/EXECUTORS.md), which add takes, and ping cannot
// change.
func executorHint(ex executor.Entry) string {
	if ex.Mode == executor.ModePlain || !strings.Contains(ex.Reason, "malformed response: not one JSON value") {
		return ""
	}
	words := []string{}
	for _, w := range append([]string{ex.Command}, ex.Args...) {
		words = append(words, shellWord(w))
	}
	cmd := strings.Join(words, " ")
	return fmt.Sprintf("it printed text, not memvault's JSON reply: a command that prints text takes --plain: memvault executor remove %s && memvault executor add %s --plain -- %s",
		ex.Name, ex.Name, cmd)
}

// pingResult is a ping's report and the capabilities it found.
type pingResult struct {
	pingReport
	caps []string
}

func ping(e executor.Entry) pingResult {
	wd, _ := os.Getwd()
	// as delegate: an interrupt kills the ping's process group
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	start := time.Now()
	caps, err := executor.Runner{}.Ping(ctx, e, wd)
	rep := pingResult{pingReport: pingReport{OK: err == nil, MS: time.Since(start).Milliseconds()}, caps: caps}
	if err != nil {
		rep.Error, rep.Code = err.Error(), executor.CodeOf(err)
	}
	return rep
}

// entry is the registration the options ask for, before its defaults.
func (o executorAddOptions) entry() (executor.Entry, error) {
	args := o.args
	if len(args) < 2 && !(o.preset != "" && len(args) == 1) {
		return executor.Entry{}, &usageError{msg: "executor add: want NAME -- COMMAND [ARGS…], or NAME --preset P", hint: "e.g. memvault executor add reader --plain -- ollama run llama3 {prompt}"}
	}
	mode := executor.ModeEnvelope
	if o.plain {
		mode = executor.ModePlain
	}
	entry := executor.Entry{Name: args[0], Weight: o.weight, Env: o.env, Mode: mode,
		Status: executor.StatusActive, TimeoutText: o.timeout.String(), Capabilities: o.capabilities,
		MemoryLimitText: o.memoryLimit, Isolate: o.isolate}
	if err := executor.CheckIsolation(args[0], o.isolate); err != nil {
		return entry, err
	}
	if o.preset != "" {
		p, err := executor.Preset(o.preset, args[1:])
		if err != nil {
			return entry, err
		}
		entry.Command, entry.Args, entry.Mode, entry.Ping = p.Command, p.Args, p.Mode, p.Ping
		if !o.timeoutSet {
			entry.TimeoutText = p.TimeoutText
		}
		if !o.pingTimeoutSet {
			entry.PingTimeoutText = p.PingTimeoutText
		}
	} else {
		entry.Command, entry.Args = args[1], args[2:]
	}
	if o.pingTimeoutSet {
		entry.PingTimeoutText = o.pingTimeout.String()
	}
	if entry.Weight == 0 {
		return entry, usagef("executor add: --weight 0: want 1–%d", executor.MaxWeight)
	}
	return entry, nil
}

func prepareExecutorAdd(_ context.Context, opts executorAddOptions, e env, v *vault.Vault) (txWork, error) {
	entry, err := opts.entry()
	if err != nil {
		return txWork{}, err
	}
	data, err := v.ConfigData()
	if err != nil {
		return txWork{}, err
	}
	// Refuse a bad entry, or a name taken, before running anything.
	if _, err := executor.AddTo(data, entry); err != nil {
		return txWork{}, err
	}
	es, err := executor.Parse(mustAdd(data, entry))
	if err != nil {
		return txWork{}, err
	}
	for _, ex := range es {
		if ex.Name == entry.Name {
			entry = ex
		}
	}
	rep := ping(entry)
	if !rep.OK {
		entry.Status, entry.Reason = executor.StatusInactive, "ping: "+rep.Error
	} else {
		entry.Capabilities = rep.caps
	}
	rep.Executor = entry
	rep.Hint = executorHint(entry)
	return txWork{
		apply: func(tx *vault.Tx) error {
			return executor.Edit(tx, "executor add "+entry.Name+": "+entry.Status, func(data []byte) ([]byte, error) { return executor.AddTo(data, entry) })
		},
		report: func(*vault.Result) error { return printPing(e.stdout, e.stderr, opts.json, "added", rep.pingReport) },
	}, nil
}

// mustAdd is data with e added, for reading e back with its defaults; AddTo
// was checked to succeed just before.
func mustAdd(data []byte, e executor.Entry) []byte {
	out, _ := executor.AddTo(data, e)
	return out
}

func printPing(w, hintOut io.Writer, json bool, verb string, rep pingReport) error {
	if json {
		return printJSON(w, rep)
	}
	if rep.OK {
		fmt.Fprintf(w, "executor %s %s: active (ping answered in %d ms; capabilities: %s)\n", rep.Executor.Name, verb, rep.MS,
			strings.Join(rep.Executor.Caps(), ", "))
		return nil
	}
	fmt.Fprintf(w, "executor %s %s: inactive: %s\n", rep.Executor.Name, verb, rep.Executor.Reason)
	if rep.Hint != "" {
		fmt.Fprintf(hintOut, "hint: %s\n", rep.Hint)
	}
	return nil
}

func executorName(e env, args []string) (string, error) {
	if len(args) != 1 {
		return "", usagef("%s: want one NAME", e.name)
	}
	name := args[0]
	return name, executor.CheckName(name)
}

func prepareExecutorPing(_ context.Context, opts executorNameOptions, e env, v *vault.Vault) (txWork, error) {
	name, err := executorName(e, opts.args)
	if err != nil {
		return txWork{}, err
	}
	ex, err := executor.Lookup(v, name)
	if err != nil {
		return txWork{}, err
	}
	rep := ping(ex)
	status, reason := executor.StatusActive, ""
	if !rep.OK {
		status, reason = executor.StatusInactive, "ping: "+rep.Error
	} else {
		ex.Capabilities = rep.caps
	}
	ex.Status, ex.Reason = status, reason
	rep.Executor = ex
	rep.Hint = executorHint(ex)
	return txWork{
		apply: func(tx *vault.Tx) error {
			return executor.Edit(tx, "executor ping "+name+": "+status, func(data []byte) ([]byte, error) {
				data, err := executor.SetStatus(data, name, status, reason)
				if err != nil || !rep.OK {
					return data, err
				}
				return executor.SetCapabilities(data, name, rep.caps)
			})
		},
		report: func(*vault.Result) error { return printPing(e.stdout, e.stderr, opts.json, "pinged", rep.pingReport) },
	}, nil
}

func prepareExecutorRemove(_ context.Context, opts executorNameOptions, e env, v *vault.Vault) (txWork, error) {
	name, err := executorName(e, opts.args)
	if err != nil {
		return txWork{}, err
	}
	if _, err := executor.Lookup(v, name); err != nil {
		return txWork{}, err
	}
	return txWork{
		apply: func(tx *vault.Tx) error {
			return executor.Edit(tx, "executor remove "+name, func(data []byte) ([]byte, error) { return executor.RemoveFrom(data, name) })
		},
		report: func(*vault.Result) error {
			if opts.json {
				return printJSON(e.stdout, map[string]any{"removed": name})
			}
			fmt.Fprintf(e.stdout, "executor %s removed\n", name)
			return nil
		},
	}, nil
}

func runExecutorList(_ context.Context, opts executorListOptions, e env, v *vault.Vault) error {
	es, err := executor.List(v)
	if err != nil {
		return err
	}
	if opts.json {
		return printJSON(e.stdout, es)
	}
	if len(es) == 0 {
		fmt.Fprintln(e.stdout, "no executors: memvault executor add NAME -- COMMAND registers one")
		return nil
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSTATUS\tMODE\tTIMEOUT\tCOMMAND")
	for _, ex := range es {
		status := ex.Status
		if ex.Reason != "" {
			status += " (" + ex.Reason + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", ex.Name, status, ex.Mode, ex.TimeoutText, strings.Join(append([]string{ex.Command}, ex.Args...), " "))
	}
	return tw.Flush()
}

func runExecutorShow(_ context.Context, opts executorShowOptions, e env, v *vault.Vault) error {
	name, err := executorName(e, opts.args)
	if err != nil {
		return err
	}
	ex, err := executor.Lookup(v, name)
	if err != nil {
		return err
	}
	if opts.json {
		return printJSON(e.stdout, ex)
	}
	w := e.stdout
	fmt.Fprintf(w, "name:    %s\nstatus:  %s\n", ex.Name, ex.Status)
	if ex.Reason != "" {
		fmt.Fprintf(w, "reason:  %s\n", ex.Reason)
	}
	memory := "no limit"
	if ex.MemoryLimit > 0 {
		memory = ex.MemoryLimitText + " of address space"
	}
	network := "the host's"
	if ex.Isolate == executor.IsolateNet {
		network = "none (a network namespace of its own)"
	}
	fmt.Fprintf(w, "command: %s\nargs:    %q\nmode:    %s\ntimeout: %s\nping:    %s within %s\nweight:  %d\nmemory:  %s\nnetwork: %s\nenv:     %s\ncan:     %s\n",
		ex.Command, ex.Args, ex.Mode, ex.TimeoutText, pingText(ex), ex.PingTimeout, ex.Weight, memory, network, strings.Join(ex.Env, ", "), strings.Join(ex.Caps(), ", "))
	return nil
}

// pingText says how e is pinged.
func pingText(e executor.Entry) string {
	if len(e.Ping) > 0 {
		return "the command with " + strings.Join(e.Ping, " ")
	}
	return "a ping request"
}
