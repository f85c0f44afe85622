package cli

import (
	ucli "github.com/urfave/cli/v2"

	"github.com/memvault/memvault/cmd/memvault/internal/ops"
	"github.com/memvault/memvault/vault"
)

type retractOptions struct {
	id, why string
}

func newRetractCommand() *ucli.Command {
	return &ucli.Command{
		Name:        "retract",
		Usage:       "withdraw an event (a correction event; nothing is rewritten)",
		ArgsUsage:   "ID",
		Description: idHelp,
		Flags:       writeFlags(&ucli.StringFlag{Name: "why", Usage: "the reason (required)"}),
	}
}

func runRetract(c *ucli.Context, tx *vault.Tx) error {
	id, err := oneID(c, "retract")
	if err != nil {
		return err
	}
	opts := retractOptions{id: id, why: c.String("why")}
	if opts.why == "" {
		return usagef("retract: --why is required: say why the event no longer holds")
	}
	if opts.id, err = ops.EventID(tx, "retract", opts.id); err != nil {
		return err
	}
	_, err = tx.Retract(opts.id, opts.why)
	return err
}
