package cli

import (
	ucli "github.com/urfave/cli/v2"

	"github.com/memvault/memvault/vault"
)

func newDoneCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "done",
		Usage:     "record an accomplishment; a next action's number or text takes it off the queue",
		ArgsUsage: "TEXT | N",
		Flags:     writeFlags(rowThreadFlag, globalFlag, nowFlag),
	}
}

func runDone(c *ucli.Context, ct *vault.ContinuityTx) error {
	text, err := textArg(c, "done")
	if err != nil {
		return err
	}
	return ct.Done(text)
}
