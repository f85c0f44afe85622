package cli

import (
	"context"

	ucli "github.com/urfave/cli/v2"

	"github.com/memvault/memvault/cmd/memvault/internal/ops"
	"github.com/memvault/memvault/vault/continuity"
)

type doneOptions struct {
	protocolOptions
	rowThreadOptions
	text []string // what was done, or a next action's number, text or id
}

func newDoneCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "done",
		Usage:     "record an accomplishment; a next action's number, text or id (any unique prefix) takes it off the queue",
		ArgsUsage: "TEXT | N",
	}
}

func (o *doneOptions) flags() []ucli.Flag {
	return o.writeFlags(newRowThreadFlag(&o.thread), newGlobalFlag(&o.global), newNowFlag(&o.now))
}

func (o *doneOptions) setArgs(args []string) { o.text = args }

func runDone(_ context.Context, opts doneOptions, e env, ct *continuity.ContinuityTx) error {
	text, err := e.textArg(opts.text, "done")
	if err != nil {
		return err
	}
	return ops.Done(ct, text)
}
