package cli

import (
	"fmt"

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
			{
				Name:        "show",
				Usage:       "list everything linked to a commitment, in order: its opening, claims, reflections, decisions, its closing",
				ArgsUsage:   "ID",
				Description: idHelp,
				Flags:       []ucli.Flag{jsonFlag},
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
	thread, fromDir, err := legacyCurrentThread(c, v)
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

func runCommitmentShow(c *ucli.Context, v *vault.Vault) error {
	id, err := oneID(c, "commitment show")
	if err != nil {
		return err
	}
	st, err := v.LoadState()
	if err != nil {
		return err
	}
	story, err := ops.CommitmentShow(st, id)
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return printJSON(c.App.Writer, story)
	}
	fmt.Fprintf(c.App.Writer, "commitment %s: %s\n", story.ID, story.Status)
	for _, e := range story.Events {
		fmt.Fprintf(c.App.Writer, "%-11s ", e.Role)
		printRow(c.App.Writer, e.Row)
	}
	return nil
}
