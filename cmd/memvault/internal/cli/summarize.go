package cli

import (
	"github.com/memvault/memvault/vault/lineage"
	ucli "github.com/urfave/cli/v2"

	"github.com/memvault/memvault/vault"
)

type summarizeOptions struct {
	session, thread string
}

func newSummarizeCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "summarize",
		Usage: "write the session-summary node of a session (deterministic)",
		Flags: []ucli.Flag{requiredSession, harnessFlag, forceFlag, jsonFlag, threadFlag},
	}
}

func runSummarize(c *ucli.Context, tx *vault.Tx) (nodesMade, error) {
	opts := summarizeOptions{session: c.String("session"), thread: c.String("thread")}
	if opts.session == "" {
		return nodesMade{}, usagef("summarize: --session is required")
	}
	t := vault.TranscriptRef{Agent: tx.Agent(), Session: opts.session}
	return one(lineage.Summarize(tx, t, lineage.SummaryOptions{Thread: opts.thread}))
}
