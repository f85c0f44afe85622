package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/memvault/memvault/hooks"
	"github.com/memvault/memvault/vault"
)

type hookOptions struct {
	args []string // HARNESS EVENT
}

func newHookCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "hook",
		Usage:     "run a harness lifecycle event (what installed hooks call); always exits 0",
		ArgsUsage: "HARNESS EVENT",
	}
}

func (o *hookOptions) flags() []ucli.Flag { return nil }

func (o *hookOptions) setArgs(args []string) { o.args = args }

func runHook(_ context.Context, opts hookOptions, e env) error {
	hook(e, opts.args)
	return nil // a hook never fails the harness's turn
}

// hook is fail-open from top to bottom: any problem is logged to the
// vault's .logs/hooks.log (when there is a vault) and the harness gets no
// output it could reject.
func hook(e env, args []string) {
	start := time.Now()
	var root string
	defer func() {
		if p := recover(); p != nil && root != "" {
			hooks.LogTo(root, fmt.Sprintf("panic: %v", p))
		}
	}()
	if len(args) != 2 {
		fmt.Fprintf(e.stderr, "memvault: hook: want HARNESS EVENT\n")
		return
	}
	if args[0] == "git" {
		runGitHook(e, args[1])
		return
	}
	h, known := hooks.Lookup(args[0])
	data, err := io.ReadAll(io.LimitReader(e.stdin, hooks.MaxPayload+1))
	var ev hooks.Event
	var p hooks.Payload
	switch {
	case !known:
		err = fmt.Errorf("unknown harness %q", args[0])
	case err != nil:
	case len(data) > hooks.MaxPayload:
		err = fmt.Errorf("payload over %d bytes: ignored", hooks.MaxPayload)
	case len(bytes.TrimSpace(data)) == 0:
		err = fmt.Errorf("empty payload")
	default:
		ev, p, err = hooks.Parse(h, args[1], data)
	}
	// The vault: --vault / MEMVAULT_DIR, else upward from where the harness
	// runs, else from here.
	start2 := p.CWD
	if start2 == "" {
		start2, _ = os.Getwd()
	}
	root, ferr := vault.Find(e.vaultDir, start2)
	if ferr != nil {
		return // no vault: memory is simply not set up here
	}
	if err != nil {
		hooks.LogTo(root, fmt.Sprintf("%s %s: %v", args[0], args[1], err))
		if h != nil && h.JSONOnly {
			fmt.Fprint(e.stdout, "{}\n")
		}
		return
	}
	// Opened for capture: a memvault.toml that does not parse stops
	// structured writes, not the prompts and transcript lines (hooks/health.go).
	v, err := vault.OpenForCapture(root)
	if err == nil {
		v.Binary, _ = selfPath() // a fresh clone's first hook registers git's merge driver
		// A hook prints nothing: the spool's problems go to its log.
		v.Warn = func(line string) { hooks.LogTo(root, line) }
		agent, aerr := e.agentOf(v)
		if aerr != nil {
			err = aerr
		} else {
			r := &hooks.Runner{V: v, Harness: h, Agent: agent, Thread: os.Getenv("MEMVAULT_THREAD"), Start: start}
			// A summary for a model, and the heads after a stop that
			// recorded memory, are left to the detached worker
			// (MEMVAULT_REFRESH: afterwrite.go).
			if k, kerr := refresher(); kerr != nil {
				hooks.LogTo(root, kerr.Error())
			} else {
				r.Refresh = k.Mode
			}
			if self, err := selfPath(); err == nil {
				r.Worker = hooks.WorkerCommand(self, root)
			}
			// Queued jobs (a session end's summary, refresh and commit)
			// are the worker's, or run in the hook (MEMVAULT_JOBS=inline).
			if mode, jerr := hooks.ParseJobsMode(os.Getenv("MEMVAULT_JOBS")); jerr != nil {
				hooks.LogTo(root, jerr.Error())
			} else {
				r.Jobs = mode
			}
			var context string
			context, err = r.Run(ev, p)
			e.stdout.Write(hooks.Render(h, ev, context))
		}
	}
	if err != nil {
		hooks.LogTo(root, fmt.Sprintf("%s %s %s: %v", h.Name, ev, p.SessionID, err))
		if h.JSONOnly && ev != hooks.SessionStart && ev != hooks.PromptSubmit {
			return // Render already printed {}
		}
	}
}

// runGitHook handles `memvault hook git post-commit`, run by the project
// repository's post-commit hook. Like every hook it fails open.
func runGitHook(e env, event string) {
	wd, _ := os.Getwd()
	root, err := vault.Find(e.vaultDir, wd)
	if err != nil {
		return
	}
	if event != "post-commit" {
		hooks.LogTo(root, fmt.Sprintf("git %s: unknown event", event))
		return
	}
	v, err := vault.OpenForCapture(root)
	if err == nil {
		// A hook prints nothing: the spool's problems go to its log.
		v.Warn = func(line string) { hooks.LogTo(root, line) }
		var agent string
		if agent, err = e.agentOf(v); err == nil {
			err = hooks.RecordCommit(v, wd, agent)
		}
	}
	if err != nil {
		hooks.LogTo(root, fmt.Sprintf("git post-commit: %v", err))
	}
}
