package cli

import (
	"context"
	"fmt"
	"os"

	ucli "github.com/urfave/cli/v2"

	"github.com/memvault/memvault/hooks"
	"github.com/memvault/memvault/vault"
)

type contextOptions struct {
	rowThreadOptions
	limit int // characters
	json  bool
}

func newContextCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "context",
		Usage: "print what a session starts with (for harnesses wired by hand)",
		Description: "Prints what session start injects: the note below, the thread's head, CONTINUITY.md's live\n" +
			"sections, MEMORY.md and the learnings and decisions in scope here, each row once, within\n" +
			"--limit characters; of CONTINUITY.md and MEMORY.md only the rows of the thread and of no\n" +
			"thread, and of each other thread one line (docs/HOOKS.md, \"Per scope\"). The note it\n" +
			"starts with:\n\n" + hooks.UsageNote,
	}
}

func (o *contextOptions) flags() []ucli.Flag {
	return []ucli.Flag{
		&ucli.StringFlag{Name: "thread", Aliases: []string{"t"}, EnvVars: []string{"MEMVAULT_THREAD"}, Usage: "the session's thread (default: the working directory's)", Destination: &o.thread},
		&ucli.BoolFlag{Name: "global", Usage: "no thread: MEMORY.md, CONTINUITY.md and global rows only", Destination: &o.global},
		&ucli.IntFlag{Name: "limit", Value: hooks.DefaultContextLimit, Usage: "at most this many characters (200 or more)", Destination: &o.limit},
		newJSONFlag(&o.json),
	}
}

// contextReport is `memvault context --json`: the text session start
// injects, with what chose it.
type contextReport struct {
	Agent   string `json:"agent"`
	Thread  string `json:"thread"` // "" for none (--global)
	Limit   int    `json:"limit"`  // the character budget
	Context string `json:"context"`
}

func runContext(_ context.Context, opts contextOptions, e env, v *vault.Vault) error {
	agent, err := e.agentOf(v)
	if err != nil {
		return err
	}
	if opts.limit < 200 {
		return usagef("context: --limit must be at least 200")
	}
	dir, _ := os.Getwd()
	thread, fromDir, err := currentThread(e, v, opts.rowThreadOptions)
	if err != nil {
		return err
	}
	if fromDir {
		dirThreadNote(e, thread, optOutWrite)
	}
	text := hooks.StartContext(v, agent, thread, dir, opts.limit)
	if opts.json {
		return printJSON(e.stdout, contextReport{Agent: agent, Thread: thread, Limit: opts.limit, Context: text})
	}
	fmt.Fprintln(e.stdout, text)
	return nil
}
