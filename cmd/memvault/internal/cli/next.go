package cli

import (
	"context"

	"github.com/memvault/memvault/vault/continuity"
	ucli "github.com/urfave/cli/v2"
)

type nextOptions struct {
	protocolOptions
	rowThreadOptions
	first bool     // on top: the current task
	text  []string // the words of the action, or "-" for stdin
}

func newNextCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "next",
		Usage:     "add a next action (the first one is the current task)",
		ArgsUsage: "TEXT",
	}
}

func (o *nextOptions) flags() []ucli.Flag {
	return o.writeFlags(&ucli.BoolFlag{Name: "first", Usage: "put it on top: it becomes the current task", Destination: &o.first},
		newRowThreadFlag(&o.thread), newGlobalFlag(&o.global), newNowFlag(&o.now))
}

func (o *nextOptions) setArgs(args []string) { o.text = args }

func runNext(_ context.Context, opts nextOptions, e env, ct *continuity.ContinuityTx) error {
	text, err := e.textArg(opts.text, "next")
	if err != nil {
		return err
	}
	return ct.Next(text, opts.first)
}
