package cli

import (
	"github.com/memvault/memvault/vault/continuity"
	ucli "github.com/urfave/cli/v2"
)

func newNextCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "next",
		Usage:     "add a next action (the first one is the current task)",
		ArgsUsage: "TEXT",
		Flags:     writeFlags(&ucli.BoolFlag{Name: "first", Usage: "put it on top: it becomes the current task"}, rowThreadFlag, globalFlag, nowFlag),
	}
}

func runNext(c *ucli.Context, ct *continuity.ContinuityTx) error {
	text, err := textArg(c, "next")
	if err != nil {
		return err
	}
	return ct.Next(text, c.Bool("first"))
}
