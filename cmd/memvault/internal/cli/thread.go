package cli

import (
	"fmt"
	"os"

	ucli "github.com/urfave/cli/v2"

	"github.com/memvault/memvault/cmd/memvault/internal/ops"
	"github.com/memvault/memvault/vault"
)

// The current thread, one rule for the hooks and the command line
// (docs/RETRIEVAL.md, "The current thread"): --thread or MEMVAULT_THREAD;
// else the thread of the working directory, when scope.WorkThread allows
// it; --global (writers) or --all-threads (recall) opts out.

// rowThreadOptions are --thread (or MEMVAULT_THREAD) and --global of a
// command that files rows under the current thread.
type rowThreadOptions struct {
	thread string
	global bool
}

// newRowThreadFlag is the thread of the rows a command writes, bound to
// p. Unlike newThreadFlag's (a filter or a node's thread), MEMVAULT_THREAD
// sets it, as it sets the thread of the hooks' rows.
func newRowThreadFlag(p *string) *ucli.StringFlag {
	return &ucli.StringFlag{Name: "thread", Aliases: []string{"t"}, EnvVars: []string{"MEMVAULT_THREAD"},
		Usage: "thread key kind:slug (default: the working directory's project, see --global)", Destination: p}
}

// newGlobalFlag is a writer's --global, bound to p.
func newGlobalFlag(p *bool) *ucli.BoolFlag {
	return &ucli.BoolFlag{Name: "global", Usage: "record rows of no thread, whatever the working directory", Destination: p}
}

// typed reports whether --thread was typed, not set by MEMVAULT_THREAD:
// a harness that sets the variable does not clash with an opt-out the
// agent types.
func (o rowThreadOptions) typed() bool {
	return o.thread != "" && os.Getenv("MEMVAULT_THREAD") == ""
}

// currentThread is the thread a command that takes --global works in (the
// writers file new rows under it; context shows its head): none with
// --global; --thread or MEMVAULT_THREAD; else the working directory's
// thread when scope.WorkThread gives one. fromDir reports the last case,
// which the command says on stderr (dirThreadNote). recall has its own
// order (the session's thread comes before the working directory's) and
// leaves it to recall.Recall.
func currentThread(e env, v *vault.Vault, o rowThreadOptions) (thread string, fromDir bool, err error) {
	if o.global {
		if o.typed() {
			return "", false, usagef("%s: --thread and --global do not go together", e.name)
		}
		return "", false, nil
	}
	wd, _ := os.Getwd() // no working directory, no thread of it
	return ops.CurrentThread(v, o.thread, wd)
}

// derived is thread when it came from the working directory, else "".
func derived(thread string, fromDir bool) string {
	if fromDir {
		return thread
	}
	return ""
}

// dirThreadNote says which thread a command used when it came from the
// working directory, and how to opt out, so no scope is silent.
func dirThreadNote(e env, thread, optOut string) {
	fmt.Fprintf(e.stderr, "memvault: thread %s (from the working directory; %s)\n", thread, optOut)
}

const (
	optOutWrite = "--global for none"
	optOutRead  = "--all-threads for every thread"
)
