package cli

import (
	"context"
	"os"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/memvault/memvault/cmd/memvault/internal/mcp"
	"github.com/memvault/memvault/vault"
)

type mcpOptions struct {
	server mcp.Options
}

func newMCPCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "mcp",
		Usage: "serve the memory to an agent over MCP on stdin and stdout (what harnesses start; one process per session)",
		Description: "Speaks the Model Context Protocol on stdin and stdout until the client closes stdin: the tools\n" +
			"recall, expand, remember, commitment_open, commitment_close, decide, learn, next, done, context,\n" +
			"status, ledger and timeline; the resources memvault://MEMORY.md, memvault://CONTINUITY.md,\n" +
			"memvault://threads/KIND/SLUG and memvault://nodes/ID; the prompt catch_up (docs/MCP.md).\n" +
			"The vault (--vault, else the nearest .memory/ upward from the client's root or the working\n" +
			"directory) is opened afresh for every call; a write waits --lock-wait for the vault lock,\n" +
			"then answers that the vault is busy. Nothing is printed but the protocol.",
		Flags: []ucli.Flag{
			&ucli.StringFlag{Name: "thread", Aliases: []string{"t"}, EnvVars: []string{"MEMVAULT_THREAD"},
				Usage: "the session's thread (default: the client's root's or the working directory's project)"},
			sessionFlag, harnessFlag,
			&ucli.DurationFlag{Name: "lock-wait", Value: mcp.DefaultLockWait,
				Usage: "how long a write waits for the vault lock before it answers that the vault is busy"},
		},
	}
}

func newMCPOptions(c *ucli.Context) (mcpOptions, error) {
	opts := mcpOptions{server: mcp.Options{Vault: c.String("vault"), Agent: c.String("agent"),
		Session: c.String("session"), Harness: c.String("harness"), LockWait: c.Duration("lock-wait"),
		Version: buildVersion().Version}}
	if opts.server.LockWait <= 0 || opts.server.LockWait > time.Minute {
		return opts, usagef("mcp: --lock-wait must be more than 0 and at most 1m: a model waits on every call")
	}
	if a := opts.server.Agent; a != "" {
		if err := vault.CheckName("agent", a); err != nil {
			return opts, err
		}
	}
	if t := c.String("thread"); t != "" {
		th, err := vault.ParseThread(t)
		if err != nil {
			return opts, err
		}
		opts.server.Thread = th.String()
	}
	opts.server.Dir, _ = os.Getwd()
	opts.server.Binary, _ = selfPath()
	return opts, nil
}

// runMCP serves one client on the command's streams until it closes
// stdin. The vault is not opened here: each call finds and opens it, so a
// server started before the vault exists, or kept while it is repaired,
// serves it once it is there.
func runMCP(c *ucli.Context) error {
	opts, err := newMCPOptions(c)
	if err != nil {
		return err
	}
	return mcp.New(opts.server).Serve(context.Background(), c.App.Reader, c.App.Writer)
}
