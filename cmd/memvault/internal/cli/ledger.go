package cli

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/memvault/memvault/cmd/memvault/internal/ops"
	"github.com/memvault/memvault/vault"
)

type ledgerOptions struct {
	filter vault.Filter
	ids    []string // events to show, by id or unique prefix; none: every event
	limit  int      // the newest N of what matches; 0 for all
	json   bool
}

func newLedgerCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "ledger",
		Usage:     "list ledger events, oldest first",
		ArgsUsage: "[ID…]",
		Description: "Lists the events that pass every filter, oldest first; with IDs (any unique prefix\n" +
			"of an id), only those events. On a terminal it shows the newest " + strconv.Itoa(terminalListLimit) + " and says how many\n" +
			"it left out; piped or with --json it prints them all.\n\n" +
			"Kinds --kind takes, and any other kind this vault holds:\n" + wrapList(vault.LedgerKinds()),
		Flags: []ucli.Flag{
			&ucli.StringFlag{Name: "kind", Aliases: []string{"k"}, Usage: "only this kind (a supersede counts as the kind it replaces; kinds above)"},
			&ucli.StringFlag{Name: "thread", Aliases: []string{"t"}, Usage: "only this thread"},
			&ucli.StringFlag{Name: "session", Usage: "only this session"},
			&ucli.StringFlag{Name: "since", Usage: "only events at or after DATE (2026-11-22, RFC 3339, or 7d / 12h ago)"},
			&ucli.BoolFlag{Name: "current", Usage: "only what holds now: no retracted, superseded, closed, invalidated or archived rows, no corrections"},
			limitFlag("events, the newest", 0),
			jsonFlag,
		},
	}
}

func newLedgerOptions(c *ucli.Context) (ledgerOptions, error) {
	limit, err := listLimit(c)
	if err != nil {
		return ledgerOptions{}, err
	}
	opts := ledgerOptions{json: c.Bool("json"), limit: limit, ids: c.Args().Slice(),
		filter: vault.Filter{Kind: c.String("kind"), Session: c.String("session"), Current: c.Bool("current")}}
	if t := c.String("thread"); t != "" {
		th, err := vault.ParseThread(t)
		if err != nil {
			return opts, err
		}
		opts.filter.Thread = th.String()
	}
	if s := c.String("since"); s != "" {
		t, err := ops.ParseSince(s, time.Now())
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
	// The set of kinds is open: a kind this vault holds is a filter too,
	// whichever memvault wrote it.
	if err := checkChoice("ledger", "kind", opts.filter.Kind, st.KnownKinds()); err != nil {
		return err
	}
	if t := opts.filter.Thread; t != "" {
		// A thread is data, not a fixed set: an unknown one is an empty
		// answer (exit 0), with a note in case it was a typo.
		if threads := st.Threads(); !slices.Contains(threads, t) {
			note := "memvault: note: no event is filed under thread " + t
			if near := nearest(t, threads); near != "" {
				note += "; did you mean " + near + "?"
			}
			fmt.Fprintln(c.App.ErrWriter, note)
		}
	}
	shown, matched, err := ops.Ledger(st, ops.LedgerQuery{Filter: opts.filter, IDs: opts.ids, Limit: opts.limit})
	if err != nil {
		return err
	}
	limitNote(c, len(shown), matched, "events", "newest")
	if opts.json {
		return printJSON(c.App.Writer, shown)
	}
	for _, r := range shown {
		printRow(c.App.Writer, r)
	}
	return nil
}
