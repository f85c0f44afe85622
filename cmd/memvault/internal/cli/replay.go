package cli

import (
	"fmt"
	"strconv"

	ucli "github.com/urfave/cli/v2"

	"github.com/memvault/memvault/cmd/memvault/internal/ops"
	"github.com/memvault/memvault/vault"
)

type replayOptions struct {
	query ops.ReplayQuery
	json  bool
}

func newReplayCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "replay",
		Usage: "show the last events of the ledger as a table: time, id, kind, source, thread, text",
		Description: "A pure fold of the ledger: the same ledger prints the same table, in any clone.\n" +
			"Each cell is one line: control characters are escaped (\\n, \\t, \\x1b, \\u202e) and the\n" +
			"text is cut to " + strconv.Itoa(ops.ReplayTextWidth) + " columns; --json prints the whole text.\n\n" +
			"Kinds --kind takes, and any other kind this vault holds:\n" + wrapList(vault.LedgerKinds()),
		Flags: []ucli.Flag{
			&ucli.IntFlag{Name: "last", Value: ops.DefaultReplayLast, Usage: "the last N events that match (0: all)"},
			&ucli.StringFlag{Name: "thread", Aliases: []string{"t"}, Usage: "only this thread"},
			&ucli.StringFlag{Name: "kind", Aliases: []string{"k"}, Usage: "only this kind (a supersede counts as the kind it replaces; kinds above)"},
			jsonFlag,
		},
	}
}

func newReplayOptions(c *ucli.Context) (replayOptions, error) {
	opts := replayOptions{json: c.Bool("json"), query: ops.ReplayQuery{Last: c.Int("last"), Kind: c.String("kind")}}
	if opts.query.Last < 0 {
		return opts, usagef("replay: --last must be 0 (all) or more")
	}
	if t := c.String("thread"); t != "" {
		th, err := vault.ParseThread(t)
		if err != nil {
			return opts, err
		}
		opts.query.Thread = th.String()
	}
	return opts, nil
}

func runReplay(c *ucli.Context, v *vault.Vault) error {
	opts, err := newReplayOptions(c)
	if err != nil {
		return err
	}
	st, err := v.LoadState()
	if err != nil {
		return err
	}
	if err := checkChoice("replay", "kind", opts.query.Kind, st.KnownKinds()); err != nil {
		return err
	}
	events, matched, err := ops.Replay(st, opts.query)
	if err != nil {
		return err
	}
	if opts.json {
		return printJSON(c.App.Writer, events)
	}
	fmt.Fprint(c.App.Writer, ops.ReplayTable(events))
	if len(events) < matched && outputIsTerminal(c.App.Writer) {
		fmt.Fprintf(c.App.ErrWriter, "memvault: note: showing the last %d of %d events; --last 0 shows all\n", len(events), matched)
	}
	return nil
}
