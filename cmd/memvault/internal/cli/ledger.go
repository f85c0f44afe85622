package cli

import (
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/memvault/memvault/vault"
)

type ledgerOptions struct {
	filter vault.Filter
	json   bool
}

func newLedgerCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "ledger",
		Usage: "list ledger events, oldest first",
		Flags: []ucli.Flag{
			&ucli.StringFlag{Name: "kind", Aliases: []string{"k"}, Usage: "only this kind (a supersede counts as the kind it replaces)"},
			&ucli.StringFlag{Name: "thread", Aliases: []string{"t"}, Usage: "only this thread"},
			&ucli.StringFlag{Name: "session", Usage: "only this session"},
			&ucli.StringFlag{Name: "since", Usage: "only events at or after DATE (2026-11-22, RFC 3339, or 7d / 12h ago)"},
			&ucli.BoolFlag{Name: "current", Usage: "only what holds now: no retracted, superseded, closed, invalidated or archived rows, no corrections"},
			jsonFlag,
		},
	}
}

func newLedgerOptions(c *ucli.Context) (ledgerOptions, error) {
	opts := ledgerOptions{json: c.Bool("json"),
		filter: vault.Filter{Kind: c.String("kind"), Session: c.String("session"), Current: c.Bool("current")}}
	if t := c.String("thread"); t != "" {
		th, err := vault.ParseThread(t)
		if err != nil {
			return opts, err
		}
		opts.filter.Thread = th.String()
	}
	if s := c.String("since"); s != "" {
		t, err := parseSince(s, time.Now())
		if err != nil {
			return opts, err
		}
		opts.filter.Since = t
	}
	return opts, nil
}

func runLedger(c *ucli.Context, v *vault.Vault) error {
	opts, err := newLedgerOptions(c)
	if err != nil {
		return err
	}
	st, err := v.LoadState()
	if err != nil {
		return err
	}
	rows := st.Select(opts.filter)
	for _, r := range rows {
		r.Status = st.Status(r)
	}
	if opts.json {
		if rows == nil {
			rows = []*vault.Row{}
		}
		return printJSON(c.App.Writer, rows)
	}
	for _, r := range rows {
		printRow(c.App.Writer, r)
	}
	return nil
}
