package cli

import (
	"context"
	"fmt"

	ucli "github.com/urfave/cli/v2"

	"github.com/memvault/memvault/cmd/memvault/internal/ops"
	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/memory"
)

type commitmentOpenOptions struct {
	writeOptions
	rowThreadOptions
	links []string
	text  []string // the words of the text, or "-" for stdin
}

type commitmentCloseOptions struct {
	writeOptions
	note string
	args []string // ID
}

type commitmentShowOptions struct {
	json bool
	args []string // ID
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
			},
			{
				Name:        "close",
				Usage:       "close an open commitment",
				ArgsUsage:   "ID",
				Description: idHelp,
			},
			{
				Name:        "show",
				Usage:       "list everything linked to a commitment, in order: its opening, claims, reflections, decisions, its closing",
				ArgsUsage:   "ID",
				Description: idHelp,
			},
		},
	}
}

func (o *commitmentOpenOptions) flags() []ucli.Flag {
	return o.writeFlags(newRowThreadFlag(&o.thread), newGlobalFlag(&o.global), newLinkFlag(&o.links))
}

func (o *commitmentOpenOptions) setArgs(args []string) { o.text = args }

func (o *commitmentCloseOptions) flags() []ucli.Flag {
	return o.writeFlags(&ucli.StringFlag{Name: "note", Usage: "how it was closed", Destination: &o.note})
}

func (o *commitmentCloseOptions) setArgs(args []string) { o.args = args }

func (o *commitmentShowOptions) flags() []ucli.Flag { return []ucli.Flag{newJSONFlag(&o.json)} }

func (o *commitmentShowOptions) setArgs(args []string) { o.args = args }

// prepareCommitmentOpen checks the text and works out the commitment's
// thread before the vault lock is taken.
func prepareCommitmentOpen(_ context.Context, opts commitmentOpenOptions, e env, v *vault.Vault) (txWork, error) {
	text, err := e.textArg(opts.text, "text")
	if err != nil {
		return txWork{}, err
	}
	if err := needText("commitment open", "the TEXT of the promise", "text", opts.text, text,
		`e.g. memvault commitment open "ship the installer" (memvault commitment close ID closes it)`); err != nil {
		return txWork{}, err
	}
	thread, fromDir, err := currentThread(e, v, opts.rowThreadOptions)
	if err != nil {
		return txWork{}, err
	}
	return txWork{apply: func(tx *vault.Tx) error {
		_, err := ops.OpenCommitment(tx, memory.Input{Thread: thread, Text: text, Links: opts.links})
		return err
	}, thread: derived(thread, fromDir)}, nil
}

func runCommitmentClose(_ context.Context, opts commitmentCloseOptions, _ env, tx *vault.Tx) error {
	id, err := oneID(opts.args, "commitment close")
	if err != nil {
		return err
	}
	_, err = ops.CloseCommitment(tx, id, opts.note)
	return err
}

func runCommitmentShow(_ context.Context, opts commitmentShowOptions, e env, v *vault.Vault) error {
	id, err := oneID(opts.args, "commitment show")
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
	if opts.json {
		return printJSON(e.stdout, story)
	}
	fmt.Fprintf(e.stdout, "commitment %s: %s\n", story.ID, story.Status)
	for _, ev := range story.Events {
		fmt.Fprintf(e.stdout, "%-11s ", ev.Role)
		printRow(e.stdout, ev.Row)
	}
	return nil
}
