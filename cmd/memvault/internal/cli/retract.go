package cli

import (
	"context"

	ucli "github.com/urfave/cli/v2"

	"github.com/memvault/memvault/cmd/memvault/internal/ops"
	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/memory"
)

type retractOptions struct {
	writeOptions
	why  string
	args []string // ID
}

func newRetractCommand() *ucli.Command {
	return &ucli.Command{
		Name:        "retract",
		Usage:       "withdraw an event (a correction event; nothing is rewritten)",
		ArgsUsage:   "ID",
		Description: idHelp,
	}
}

func (o *retractOptions) flags() []ucli.Flag {
	return o.writeFlags(&ucli.StringFlag{Name: "why", Usage: "the reason (required)", Destination: &o.why})
}

func (o *retractOptions) setArgs(args []string) { o.args = args }

func runRetract(_ context.Context, opts retractOptions, _ env, tx *vault.Tx) error {
	id, err := oneID(opts.args, "retract")
	if err != nil {
		return err
	}
	if opts.why == "" {
		return usagef("retract: --why is required: say why the event no longer holds")
	}
	if id, err = ops.EventID(tx, "retract", id); err != nil {
		return err
	}
	_, err = memory.Retract(tx, id, opts.why)
	return err
}
