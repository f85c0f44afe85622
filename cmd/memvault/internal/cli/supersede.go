package cli

import (
	"strings"

	ucli "github.com/urfave/cli/v2"

	"github.com/memvault/memvault/cmd/memvault/internal/ops"
	"github.com/memvault/memvault/vault"
)

type supersedeOptions struct {
	id, text string
}

func newSupersedeCommand() *ucli.Command {
	return &ucli.Command{
		Name:        "supersede",
		Usage:       "replace an event with a new version of its text",
		ArgsUsage:   "ID TEXT",
		Description: idHelp,
		Flags:       writeFlags(),
	}
}

func runSupersede(c *ucli.Context, tx *vault.Tx) error {
	if c.NArg() < 2 {
		return usagef("supersede: want an event id and the new text")
	}
	opts := supersedeOptions{id: c.Args().First(), text: strings.Join(c.Args().Tail(), " ")}
	id, err := ops.EventID(tx, "supersede", opts.id)
	if err != nil {
		return err
	}
	_, err = tx.Supersede(id, opts.text)
	return err
}
