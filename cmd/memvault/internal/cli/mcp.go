package cli

import (
	"context"
	"os"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/memvault/memvault/cmd/memvault/internal/mcp"
	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/fileio"
)

type mcpOptions struct {
	thread, session, harness string
	lockWait                 time.Duration // how long a write waits for the vault lock
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
	}
}

func (o *mcpOptions) flags() []ucli.Flag {
	return []ucli.Flag{
		&ucli.StringFlag{Name: "thread", Aliases: []string{"t"}, EnvVars: []string{"MEMVAULT_THREAD"},
			Usage: "the session's thread (default: the client's root's or the working directory's project)", Destination: &o.thread},
		newSessionFlag(&o.session), newHarnessFlag(&o.harness),
		&ucli.DurationFlag{Name: "lock-wait", Value: mcp.DefaultLockWait, Destination: &o.lockWait,
			Usage: "how long a write waits for the vault lock before it answers that the vault is busy"},
	}
}

// server is the MCP server the options and the global flags describe.
func (o mcpOptions) server(e env) (mcp.Options, error) {
	srv := mcp.Options{Vault: e.vaultDir, Agent: e.agent, Session: o.session, Harness: o.harness, LockWait: o.lockWait,
		Version: buildVersion().Version}
	if srv.LockWait <= 0 || srv.LockWait > time.Minute {
		return srv, usagef("mcp: --lock-wait must be more than 0 and at most 1m: a model waits on every call")
	}
	if a := srv.Agent; a != "" {
		if err := fileio.CheckName("agent", a); err != nil {
			return srv, err
		}
	}
	if o.thread != "" {
		th, err := vault.ParseThread(o.thread)
		if err != nil {
			return srv, err
		}
		srv.Thread = th.String()
	}
	srv.Dir, _ = os.Getwd()
	srv.Binary, _ = selfPath()
	k, err := refresher()
	if err != nil {
		return srv, err
	}
	srv.Refresh = k
	// MEMVAULT_MCP_TRACE=1: every message in and out, timed, on stderr
	// (docs/MCP.md, "What a client waits for").
	if os.Getenv("MEMVAULT_MCP_TRACE") != "" {
		srv.Trace = e.stderr
	}
	return srv, nil
}

// runMCP serves one client on the command's streams until it closes
// stdin. The vault is not opened here: each call finds and opens it, so a
// server started before the vault exists, or kept while it is repaired,
// serves it once it is there.
func runMCP(ctx context.Context, opts mcpOptions, e env) error {
	srv, err := opts.server(e)
	if err != nil {
		return err
	}
	return mcp.New(srv).Serve(ctx, e.stdin, e.stdout)
}
