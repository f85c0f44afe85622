package cli

import (
	"fmt"
	"os"
	"path/filepath"

	ucli "github.com/urfave/cli/v2"

	"github.com/memvault/memvault/vault"
)

func initCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "init",
		Usage:     "create a vault (.memory/ here, or --vault DIR); safe to run again",
		ArgsUsage: " ",
		Action: func(c *ucli.Context) error {
			if c.NArg() > 0 {
				return usagef("init: takes no arguments; use --vault DIR to choose the folder")
			}
			dir := c.String("vault")
			if dir == "" {
				wd, err := os.Getwd()
				if err != nil {
					return err
				}
				dir = filepath.Join(wd, vault.DirName)
			}
			v, created, err := vault.Init(dir)
			if err != nil {
				return err
			}
			if created {
				fmt.Fprintf(c.App.Writer, "initialised vault at %s\n", v.Root)
			} else {
				fmt.Fprintf(c.App.Writer, "vault already initialised at %s\n", v.Root)
			}
			return nil
		},
	}
}

func rememberCommand() *ucli.Command {
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
		Action: writeAction(func(c *ucli.Context, tx *vault.Tx) error {
			text, err := textArg(c, "text")
			if err != nil {
				return err
			}
			in := vault.Input{Kind: c.String("kind"), Thread: c.String("thread"), Text: text,
				Links: c.StringSlice("link")}
			if d := c.String("data"); d != "" {
				in.Data = []byte(d)
			}
			_, err = tx.Remember(in)
			return err
		}),
	}
}

func commitmentCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "commitment",
		Usage: "open and close commitments",
		Subcommands: []*ucli.Command{
			{
				Name:      "open",
				Usage:     "record a commitment; prints its id",
				ArgsUsage: "TEXT | -",
				Flags:     writeFlags(threadFlag, &ucli.StringSliceFlag{Name: "link", Usage: "id of a related event or node"}),
				Action: writeAction(func(c *ucli.Context, tx *vault.Tx) error {
					text, err := textArg(c, "text")
					if err != nil {
						return err
					}
					_, err = tx.OpenCommitment(vault.Input{Thread: c.String("thread"), Text: text, Links: c.StringSlice("link")})
					return err
				}),
			},
			{
				Name:      "close",
				Usage:     "close an open commitment",
				ArgsUsage: "ID",
				Flags:     writeFlags(&ucli.StringFlag{Name: "note", Usage: "how it was closed"}),
				Action: writeAction(func(c *ucli.Context, tx *vault.Tx) error {
					id, err := oneID(c, "commitment close")
					if err != nil {
						return err
					}
					_, err = tx.CloseCommitment(id, c.String("note"))
					return err
				}),
			},
		},
	}
}

func retractCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "retract",
		Usage:     "withdraw an event (a correction event; nothing is rewritten)",
		ArgsUsage: "ID",
		Flags:     writeFlags(&ucli.StringFlag{Name: "why", Usage: "the reason (required)"}),
		Action: writeAction(func(c *ucli.Context, tx *vault.Tx) error {
			id, err := oneID(c, "retract")
			if err != nil {
				return err
			}
			if c.String("why") == "" {
				return usagef("retract: --why is required: say why the event no longer holds")
			}
			_, err = tx.Retract(id, c.String("why"))
			return err
		}),
	}
}

func supersedeCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "supersede",
		Usage:     "replace an event with a new version of its text",
		ArgsUsage: "ID TEXT",
		Flags:     writeFlags(),
		Action: writeAction(func(c *ucli.Context, tx *vault.Tx) error {
			if c.NArg() < 2 {
				return usagef("supersede: want an event id and the new text")
			}
			text := c.Args().Tail()
			joined := text[0]
			for _, t := range text[1:] {
				joined += " " + t
			}
			_, err := tx.Supersede(c.Args().First(), joined)
			return err
		}),
	}
}

func oneID(c *ucli.Context, cmd string) (string, error) {
	if c.NArg() != 1 {
		return "", usagef("%s: want exactly one event id", cmd)
	}
	return c.Args().First(), nil
}
