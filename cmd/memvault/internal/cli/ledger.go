package cli

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/memvault/memvault/cmd/memvault/internal/ops"
	"github.com/memvault/memvault/vault"
)

type ledgerOptions struct {
	limitOptions                               // the newest N of what matches; 0 for all
	kind, thread, session, since, until string // filters; "" for any
	current                             bool
	json                                bool
	ids                                 []string // events to show, by id or unique prefix; none: every event
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
	}
}

func (o *ledgerOptions) flags() []ucli.Flag {
	return []ucli.Flag{
		&ucli.StringFlag{Name: "kind", Aliases: []string{"k"}, Usage: "only this kind (a supersede counts as the kind it replaces; kinds above)", Destination: &o.kind},
		&ucli.StringFlag{Name: "thread", Aliases: []string{"t"}, Usage: "only this thread", Destination: &o.thread},
		&ucli.StringFlag{Name: "session", Usage: "only this session", Destination: &o.session},
		&ucli.StringFlag{Name: "since", Usage: "only events at or after DATE (2026-11-22, RFC 3339, or 7d / 12h ago)", Destination: &o.since},
		&ucli.StringFlag{Name: "until", Usage: "only events before DATE (same forms as --since; a date is its local midnight, so the day itself is left out)", Destination: &o.until},
		&ucli.BoolFlag{Name: "current", Usage: "only what holds now: no retracted, superseded, closed, invalidated or archived rows, no corrections", Destination: &o.current},
		o.limitFlag("events, the newest", 0),
		newJSONFlag(&o.json),
	}
}

func (o *ledgerOptions) setArgs(args []string) { o.ids = args }

// query is the ledger query the options make.
func (o ledgerOptions) query(e env) (ops.LedgerQuery, error) {
	limit, err := o.listLimit(e, o.json)
	if err != nil {
		return ops.LedgerQuery{}, err
	}
	q := ops.LedgerQuery{IDs: o.ids, Limit: limit,
		Filter: vault.Filter{Kind: o.kind, Session: o.session, Current: o.current}}
	if o.thread != "" {
		th, err := vault.ParseThread(o.thread)
		if err != nil {
			return q, err
		}
		q.Filter.Thread = th.String()
	}
	if o.since != "" {
		t, err := ops.ParseSince(o.since, time.Now())
		if err != nil {
			return q, err
		}
		q.Filter.Since = t
	}
	if o.until != "" {
		t, err := ops.ParseSince(o.until, time.Now())
		if err != nil {
			return q, err
		}
		q.Until = t
	}
	return q, nil
}

func runLedger(_ context.Context, opts ledgerOptions, e env, v *vault.Vault) error {
	q, err := opts.query(e)
	if err != nil {
		return err
	}
	st, err := v.LoadState()
	if err != nil {
		return err
	}
	// The set of kinds is open: a kind this vault holds is a filter too,
	// whichever memvault wrote it.
	if err := checkChoice("ledger", "kind", q.Filter.Kind, st.KnownKinds()); err != nil {
		return err
	}
	if t := q.Filter.Thread; t != "" {
		// A thread is data, not a fixed set: an unknown one is an empty
		// answer (exit 0), with a note in case it was a typo.
		if threads := st.Threads(); !slices.Contains(threads, t) {
			note := "memvault: note: no event is filed under thread " + t
			if near := nearest(t, threads); near != "" {
				note += "; did you mean " + near + "?"
			}
			fmt.Fprintln(e.stderr, note)
		}
	}
	shown, matched, err := ops.Ledger(st, q)
	if err != nil {
		return err
	}
	limitNote(e, opts.json, len(shown), matched, "events", "newest")
	if opts.json {
		return printJSON(e.stdout, shown)
	}
	for _, r := range shown {
		printRow(e.stdout, r)
	}
	return nil
}
