package cli

import (
	"context"
	"strings"

	ucli "github.com/urfave/cli/v2"

	"github.com/memvault/memvault/cmd/memvault/internal/ops"
	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/memory"
)

type supersedeOptions struct {
	writeOptions
	args []string // ID and the words of the new text
}

func newSupersedeCommand() *ucli.Command {
	return &ucli.Command{
		Name:        "supersede",
		Usage:       "replace an event with a new version of its text",
		ArgsUsage:   "ID TEXT",
		Description: idHelp,
	}
}

func (o *supersedeOptions) flags() []ucli.Flag { return o.writeFlags() }

func (o *supersedeOptions) setArgs(args []string) { o.args = args }

func runSupersede(_ context.Context, opts supersedeOptions, _ env, tx *vault.Tx) error {
	if len(opts.args) < 2 {
		return usagef("supersede: want an event id and the new text")
	}
	id, err := ops.EventID(tx, "supersede", opts.args[0])
	if err != nil {
		return err
	}
	_, err = memory.Supersede(tx, id, strings.Join(opts.args[1:], " "))
	return err
}
