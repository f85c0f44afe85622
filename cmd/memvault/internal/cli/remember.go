package cli

import (
	ucli "github.com/urfave/cli/v2"

	"github.com/memvault/memvault/cmd/memvault/internal/ops"
	"github.com/memvault/memvault/vault"
)

type rememberOptions struct {
	kind, thread, text string
	links              []string
	data               string
}

func newRememberCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "remember",
		Usage:     "record a fact, decision, learning, constraint, blocker, next step, claim or reflection",
		ArgsUsage: "TEXT | -",
		Flags: writeFlags(
			&ucli.StringFlag{Name: "kind", Aliases: []string{"k"}, Value: "fact", Usage: "kind of memory"},
			rowThreadFlag, globalFlag,
			&ucli.StringSliceFlag{Name: "link", Usage: "id (or unique prefix) of a related event or node (repeatable)"},
			&ucli.StringFlag{Name: "data", Usage: "structured data as a JSON object"},
		),
	}
}

// prepareRemember checks the text and works out the row's thread before
// the vault lock is taken.
func prepareRemember(c *ucli.Context, v *vault.Vault) (txWork, error) {
	text, err := textArg(c, "text")
	if err != nil {
		return txWork{}, err
	}
	thread, fromDir, err := currentThread(c, v)
	if err != nil {
		return txWork{}, err
	}
	if err := checkChoice("remember", "kind", c.String("kind"), vault.RememberKinds); err != nil {
		return txWork{}, err
	}
	opts := rememberOptions{kind: c.String("kind"), thread: thread, text: text,
		links: c.StringSlice("link"), data: c.String("data")}
	return txWork{apply: func(tx *vault.Tx) error {
		in := vault.Input{Kind: opts.kind, Thread: opts.thread, Text: opts.text, Links: opts.links}
		if opts.data != "" {
			in.Data = []byte(opts.data)
		}
		_, err := ops.Remember(tx, in)
		return err
	}, thread: derived(thread, fromDir)}, nil
}
