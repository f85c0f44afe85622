package cli

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/executor"
)

// memvault executor add|list|show|ping|remove: the registry of executors
// in memvault.toml (docs/EXECUTORS.md). add and ping run the executor's
// ping before the vault lock is taken, then record what it found in one
// transaction that changes memvault.toml alone.

type executorAddOptions struct {
	entry executor.Entry
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
				Flags: writeFlags(
					&ucli.DurationFlag{Name: "timeout", Value: executor.DefaultTimeout, Usage: "how long one try may run"},
					&ucli.DurationFlag{Name: "ping-timeout", Value: executor.PingTimeout, DefaultText: "2s; a preset's 15s", Usage: "how long a ping may run"},
					&ucli.BoolFlag{Name: "plain", Usage: "the command prints text: memvault wraps it and computes the checksum"},
					&ucli.StringSliceFlag{Name: "env", Usage: "an environment variable passed through (repeatable); never a credential's"},
					&ucli.IntFlag{Name: "weight", Value: 1, Usage: "slots of delegate's concurrency bound one run takes"},
					&ucli.StringFlag{Name: "preset", Usage: "a harness CLI's command, arguments, mode, timeout and ping (after --: ollama's model, generic's command)"},
					&ucli.StringFlag{Name: "memory-limit", Usage: "bound its address space (RLIMIT_AS, Linux), e.g. 4GiB; a run out of memory under it is memory_limit"},
					&ucli.StringSliceFlag{Name: "capability", Usage: "what it can do (repeatable), when its ping reply does not say; default: " + executor.DefaultCapability},
				),
			},
			{Name: "list", Usage: "list the registered executors", Flags: []ucli.Flag{jsonFlag}},
			{Name: "show", Usage: "print one executor's registration", ArgsUsage: "NAME", Flags: []ucli.Flag{jsonFlag}},
			{Name: "ping", Usage: "ping an executor and record whether it answered (active or inactive)", ArgsUsage: "NAME", Flags: writeFlags()},
			{Name: "remove", Usage: "take an executor out of memvault.toml", ArgsUsage: "NAME", Flags: writeFlags()},
		},
	}
}

// pingReport is what add and ping print.
type pingReport struct {
	Executor executor.Entry `json:"executor"`
	OK       bool           `json:"ok"`
	Error    string         `json:"error,omitempty"`
	Code     string         `json:"code,omitempty"`
	MS       int64          `json:"ms"`
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

func prepareExecutorAdd(c *ucli.Context, v *vault.Vault) (txWork, error) {
	args := c.Args().Slice()
	preset := c.String("preset")
	if len(args) < 2 && !(preset != "" && len(args) == 1) {
		return txWork{}, &usageError{msg: "executor add: want NAME -- COMMAND [ARGS…], or NAME --preset P", hint: "e.g. memvault executor add reader --plain -- ollama run llama3 {prompt}"}
	}
	mode := executor.ModeEnvelope
	if c.Bool("plain") {
		mode = executor.ModePlain
	}
	opts := executorAddOptions{entry: executor.Entry{Name: args[0], Weight: c.Int("weight"), Env: c.StringSlice("env"), Mode: mode,
		Status: executor.StatusActive, TimeoutText: c.Duration("timeout").String(), Capabilities: c.StringSlice("capability"),
		MemoryLimitText: c.String("memory-limit")}}
	if preset != "" {
		p, err := executor.Preset(preset, args[1:])
		if err != nil {
			return txWork{}, err
		}
		opts.entry.Command, opts.entry.Args, opts.entry.Mode, opts.entry.Ping = p.Command, p.Args, p.Mode, p.Ping
		if !c.IsSet("timeout") {
			opts.entry.TimeoutText = p.TimeoutText
		}
		if !c.IsSet("ping-timeout") {
			opts.entry.PingTimeoutText = p.PingTimeoutText
		}
	} else {
		opts.entry.Command, opts.entry.Args = args[1], args[2:]
	}
	if c.IsSet("ping-timeout") {
		opts.entry.PingTimeoutText = c.Duration("ping-timeout").String()
	}
	if opts.entry.Weight == 0 {
		return txWork{}, usagef("executor add: --weight 0: want 1–%d", executor.MaxWeight)
	}
	data, err := v.ConfigData()
	if err != nil {
		return txWork{}, err
	}
	// Refuse a bad entry, or a name taken, before running anything.
	if _, err := executor.AddTo(data, opts.entry); err != nil {
		return txWork{}, err
	}
	es, err := executor.Parse(mustAdd(data, opts.entry))
	if err != nil {
		return txWork{}, err
	}
	for _, e := range es {
		if e.Name == opts.entry.Name {
			opts.entry = e
		}
	}
	rep := ping(opts.entry)
	if !rep.OK {
		opts.entry.Status, opts.entry.Reason = executor.StatusInactive, "ping: "+rep.Error
	} else {
		opts.entry.Capabilities = rep.caps
	}
	rep.Executor = opts.entry
	return txWork{
		apply: func(tx *vault.Tx) error {
			return executor.Edit(tx, "executor add "+opts.entry.Name+": "+opts.entry.Status, func(data []byte) ([]byte, error) { return executor.AddTo(data, opts.entry) })
		},
		report: func(*vault.Result) error { return printPing(c, "added", rep.pingReport) },
	}, nil
}

// mustAdd is data with e added, for reading e back with its defaults; AddTo
// was checked to succeed just before.
func mustAdd(data []byte, e executor.Entry) []byte {
	out, _ := executor.AddTo(data, e)
	return out
}

func printPing(c *ucli.Context, verb string, rep pingReport) error {
	if c.Bool("json") {
		return printJSON(c.App.Writer, rep)
	}
	if rep.OK {
		fmt.Fprintf(c.App.Writer, "executor %s %s: active (ping answered in %d ms; capabilities: %s)\n", rep.Executor.Name, verb, rep.MS,
			strings.Join(rep.Executor.Caps(), ", "))
		return nil
	}
	fmt.Fprintf(c.App.Writer, "executor %s %s: inactive: %s\n", rep.Executor.Name, verb, rep.Executor.Reason)
	return nil
}

func executorName(c *ucli.Context) (string, error) {
	if c.NArg() != 1 {
		return "", usagef("%s: want one NAME", c.Command.FullName())
	}
	name := c.Args().First()
	return name, executor.CheckName(name)
}

func prepareExecutorPing(c *ucli.Context, v *vault.Vault) (txWork, error) {
	name, err := executorName(c)
	if err != nil {
		return txWork{}, err
	}
	e, err := executor.Lookup(v, name)
	if err != nil {
		return txWork{}, err
	}
	rep := ping(e)
	status, reason := executor.StatusActive, ""
	if !rep.OK {
		status, reason = executor.StatusInactive, "ping: "+rep.Error
	} else {
		e.Capabilities = rep.caps
	}
	e.Status, e.Reason = status, reason
	rep.Executor = e
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
		report: func(*vault.Result) error { return printPing(c, "pinged", rep.pingReport) },
	}, nil
}

func prepareExecutorRemove(c *ucli.Context, v *vault.Vault) (txWork, error) {
	name, err := executorName(c)
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
			if c.Bool("json") {
				return printJSON(c.App.Writer, map[string]any{"removed": name})
			}
			fmt.Fprintf(c.App.Writer, "executor %s removed\n", name)
			return nil
		},
	}, nil
}

func runExecutorList(c *ucli.Context, v *vault.Vault) error {
	if c.NArg() > 0 {
		return usagef("executor list: takes no arguments (got %q)", c.Args().First())
	}
	es, err := executor.List(v)
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return printJSON(c.App.Writer, es)
	}
	if len(es) == 0 {
		fmt.Fprintln(c.App.Writer, "no executors: memvault executor add NAME -- COMMAND registers one")
		return nil
	}
	tw := tabwriter.NewWriter(c.App.Writer, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSTATUS\tMODE\tTIMEOUT\tCOMMAND")
	for _, e := range es {
		status := e.Status
		if e.Reason != "" {
			status += " (" + e.Reason + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", e.Name, status, e.Mode, e.TimeoutText, strings.Join(append([]string{e.Command}, e.Args...), " "))
	}
	return tw.Flush()
}

func runExecutorShow(c *ucli.Context, v *vault.Vault) error {
	name, err := executorName(c)
	if err != nil {
		return err
	}
	e, err := executor.Lookup(v, name)
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return printJSON(c.App.Writer, e)
	}
	w := c.App.Writer
	fmt.Fprintf(w, "name:    %s\nstatus:  %s\n", e.Name, e.Status)
	if e.Reason != "" {
		fmt.Fprintf(w, "reason:  %s\n", e.Reason)
	}
	memory := "no limit"
	if e.MemoryLimit > 0 {
		memory = e.MemoryLimitText + " of address space"
	}
	fmt.Fprintf(w, "command: %s\nargs:    %q\nmode:    %s\ntimeout: %s\nping:    %s within %s\nweight:  %d\nmemory:  %s\nenv:     %s\ncan:     %s\n",
		e.Command, e.Args, e.Mode, e.TimeoutText, pingText(e), e.PingTimeout, e.Weight, memory, strings.Join(e.Env, ", "), strings.Join(e.Caps(), ", "))
	return nil
}

// pingText says how e is pinged.
func pingText(e executor.Entry) string {
	if len(e.Ping) > 0 {
		return "the command with " + strings.Join(e.Ping, " ")
	}
	return "a ping request"
}
