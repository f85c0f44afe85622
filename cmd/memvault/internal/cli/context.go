package cli

import (
	"fmt"
	"os"

	ucli "github.com/urfave/cli/v2"

	"github.com/memvault/memvault/hooks"
	"github.com/memvault/memvault/vault"
)

type contextOptions struct {
	agent, thread string
	dir           string // the working folder, which names the default thread
	limit         int
}

func newContextCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "context",
		Usage: "print what a session starts with (for harnesses wired by hand)",
		Description: "Prints what session start injects: the note below, the thread's head, CONTINUITY.md's live\n" +
			"sections, MEMORY.md and the learnings and decisions in scope here, each row once, within\n" +
			"--limit characters (docs/HOOKS.md). The note it starts with:\n\n" + hooks.UsageNote,
		Flags: []ucli.Flag{
			&ucli.StringFlag{Name: "thread", Aliases: []string{"t"}, EnvVars: []string{"MEMVAULT_THREAD"}, Usage: "the session's thread (default: the working directory's)"},
			&ucli.BoolFlag{Name: "global", Usage: "no thread: MEMORY.md, CONTINUITY.md and global rows only"},
			&ucli.IntFlag{Name: "limit", Value: hooks.DefaultContextLimit, Usage: "at most this many characters (200 or more)"},
			jsonFlag,
		},
	}
}

func newContextOptions(c *ucli.Context, v *vault.Vault) (contextOptions, error) {
	agent, err := agentOf(c, v)
	if err != nil {
		return contextOptions{}, err
	}
	opts := contextOptions{agent: agent, thread: c.String("thread"), limit: c.Int("limit")}
	if opts.limit < 200 {
		return opts, usagef("context: --limit must be at least 200")
	}
	opts.dir, _ = os.Getwd()
	var fromDir bool
	if opts.thread, fromDir, err = legacyCurrentThread(c, v); err != nil {
		return opts, err
	}
	if fromDir {
		dirThreadNote(envOf(c), opts.thread, optOutWrite)
	}
	return opts, nil
}

// contextReport is `memvault context --json`: the text session start
// injects, with what chose it.
type contextReport struct {
	Agent   string `json:"agent"`
	Thread  string `json:"thread"` // "" for none (--global)
	Limit   int    `json:"limit"`  // the character budget
	Context string `json:"context"`
}

func runContext(c *ucli.Context, v *vault.Vault) error {
	opts, err := newContextOptions(c, v)
	if err != nil {
		return err
	}
	text := hooks.StartContext(v, opts.agent, opts.thread, opts.dir, opts.limit)
	if c.Bool("json") {
		return printJSON(c.App.Writer, contextReport{Agent: opts.agent, Thread: opts.thread, Limit: opts.limit, Context: text})
	}
	fmt.Fprintln(c.App.Writer, text)
	return nil
}
