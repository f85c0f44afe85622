package cli

import (
	"context"

	ucli "github.com/urfave/cli/v2"

	"github.com/memvault/memvault/cmd/memvault/internal/ops"
	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/memory"
)

type rememberOptions struct {
	writeOptions
	rowThreadOptions
	kind  string
	links []string
	data  string   // structured data, a JSON object
	text  []string // the words of the text, or "-" for stdin
}

func newRememberCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "remember",
		Usage:     "record a fact, decision, learning, constraint, blocker, next step, claim or reflection",
		ArgsUsage: "TEXT | -",
	}
}

func (o *rememberOptions) flags() []ucli.Flag {
	return o.writeFlags(
		&ucli.StringFlag{Name: "kind", Aliases: []string{"k"}, Value: "fact", Usage: "kind of memory", Destination: &o.kind},
		newRowThreadFlag(&o.thread), newGlobalFlag(&o.global),
		newLinkFlag(&o.links),
		&ucli.StringFlag{Name: "data", Usage: "structured data as a JSON object", Destination: &o.data},
	)
}

func (o *rememberOptions) setArgs(args []string) { o.text = args }

// newLinkFlag is --link, repeatable, bound to p.
func newLinkFlag(p *[]string) *ucli.StringSliceFlag {
	return &ucli.StringSliceFlag{Name: "link", Usage: "id (or unique prefix) of a related event or node (repeatable)", Action: setSlice(p)}
}

// prepareRemember checks the text and works out the row's thread before
// the vault lock is taken.
func prepareRemember(_ context.Context, opts rememberOptions, e env, v *vault.Vault) (txWork, error) {
	text, err := e.textArg(opts.text, "text")
	if err != nil {
		return txWork{}, err
	}
	if err := needText("remember", "the TEXT to remember", "text", opts.text, text,
		`e.g. memvault remember "the deploy key rotates on Fridays" (--kind decision, fact, …; - reads the text from stdin)`); err != nil {
		return txWork{}, err
	}
	thread, fromDir, err := currentThread(e, v, opts.rowThreadOptions)
	if err != nil {
		return txWork{}, err
	}
	if err := checkChoice("remember", "kind", opts.kind, vault.RememberKinds); err != nil {
		return txWork{}, err
	}
	in := memory.Input{Kind: opts.kind, Thread: thread, Text: text, Links: opts.links}
	if opts.data != "" {
		in.Data = []byte(opts.data)
	}
	return txWork{apply: func(tx *vault.Tx) error {
		_, err := ops.Remember(tx, in)
		return err
	}, thread: derived(thread, fromDir)}, nil
}
