package cli

import (
	ucli "github.com/urfave/cli/v2"

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
			threadFlag,
			&ucli.StringSliceFlag{Name: "link", Usage: "id of a related event or node (repeatable)"},
			&ucli.StringFlag{Name: "data", Usage: "structured data as a JSON object"},
		),
	}
}

func runRemember(c *ucli.Context, tx *vault.Tx) error {
	text, err := textArg(c, "text")
	if err != nil {
		return err
	}
	opts := rememberOptions{kind: c.String("kind"), thread: c.String("thread"), text: text,
		links: c.StringSlice("link"), data: c.String("data")}
	in := vault.Input{Kind: opts.kind, Thread: opts.thread, Text: opts.text, Links: opts.links}
	if opts.data != "" {
		in.Data = []byte(opts.data)
	}
	_, err = tx.Remember(in)
	return err
}
