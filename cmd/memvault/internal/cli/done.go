package cli

import (
	ucli "github.com/urfave/cli/v2"

	"github.com/memvault/memvault/cmd/memvault/internal/ops"
	"github.com/memvault/memvault/vault/continuity"
)

func newDoneCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "done",
		Usage:     "record an accomplishment; a next action's number, text or id (any unique prefix) takes it off the queue",
		ArgsUsage: "TEXT | N",
		Flags:     writeFlags(rowThreadFlag, globalFlag, nowFlag),
	}
}

func runDone(c *ucli.Context, ct *continuity.ContinuityTx) error {
	text, err := textArg(c, "done")
	if err != nil {
		return err
	}
	return ops.Done(ct, text)
}
