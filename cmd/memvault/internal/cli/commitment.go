package cli

import (
	ucli "github.com/urfave/cli/v2"

	"github.com/memvault/memvault/cmd/memvault/internal/ops"
	"github.com/memvault/memvault/vault"
)

type commitmentOpenOptions struct {
	thread, text string
	links        []string
}

type commitmentCloseOptions struct {
	id, note string
}

func newCommitmentCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "commitment",
		Usage: "open and close commitments",
		Subcommands: []*ucli.Command{
			{
				Name:      "open",
				Usage:     "record a commitment; prints its id",
				ArgsUsage: "TEXT | -",
				Flags:     writeFlags(rowThreadFlag, globalFlag, &ucli.StringSliceFlag{Name: "link", Usage: "id (or unique prefix) of a related event or node (repeatable)"}),
			},
			{
				Name:        "close",
				Usage:       "close an open commitment",
				ArgsUsage:   "ID",
				Description: idHelp,
				Flags:       writeFlags(&ucli.StringFlag{Name: "note", Usage: "how it was closed"}),
			},
		},
	}
}

// prepareCommitmentOpen checks the text and works out the commitment's
// thread before the vault lock is taken.
func prepareCommitmentOpen(c *ucli.Context, v *vault.Vault) (txWork, error) {
	text, err := textArg(c, "text")
	if err != nil {
		return txWork{}, err
	}
	thread, fromDir, err := currentThread(c, v)
	if err != nil {
		return txWork{}, err
	}
	opts := commitmentOpenOptions{thread: thread, text: text, links: c.StringSlice("link")}
	return txWork{apply: func(tx *vault.Tx) error {
		_, err := ops.OpenCommitment(tx, vault.Input{Thread: opts.thread, Text: opts.text, Links: opts.links})
		return err
	}, thread: derived(thread, fromDir)}, nil
}

func runCommitmentClose(c *ucli.Context, tx *vault.Tx) error {
	id, err := oneID(c, "commitment close")
	if err != nil {
		return err
	}
	opts := commitmentCloseOptions{id: id, note: c.String("note")}
	_, err = ops.CloseCommitment(tx, opts.id, opts.note)
	return err
}
