package cli

import (
	"context"
	"fmt"
	"strconv"

	ucli "github.com/urfave/cli/v2"

	"github.com/memvault/memvault/cmd/memvault/internal/ops"
	"github.com/memvault/memvault/vault"
)

type replayOptions struct {
	last         int // the last N events; 0 for all
	thread, kind string
	json         bool
	all          bool
}

func newReplayCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "replay",
		Usage: "show the last events of the ledger as a table: time, id, kind, source, thread, text",
		Description: "A pure fold of the ledger: the same ledger prints the same table, in any clone.\n" +
			"Each cell is one line: control characters are escaped (\\n, \\t, \\x1b, \\u202e) and the\n" +
			"text is cut to " + strconv.Itoa(ops.ReplayTextWidth) + " columns; --json prints the whole text.\n\n" +
			"Memory first: memvault's bookkeeping (session.started, continuity.session, head.rendered,\n" +
			"transcript.imported, …) is left out unless --all is given or --kind names it.\n\n" +
			"Kinds --kind takes, and any other kind this vault holds:\n" + wrapList(vault.LedgerKinds()),
	}
}

func (o *replayOptions) flags() []ucli.Flag {
	return []ucli.Flag{
		&ucli.IntFlag{Name: "last", Value: ops.DefaultReplayLast, Usage: "the last N events that match (0: all)", Destination: &o.last},
		&ucli.StringFlag{Name: "thread", Aliases: []string{"t"}, Usage: "only this thread", Destination: &o.thread},
		&ucli.StringFlag{Name: "kind", Aliases: []string{"k"}, Usage: "only this kind (a supersede counts as the kind it replaces; kinds above)", Destination: &o.kind},
		&ucli.BoolFlag{Name: "all", Usage: "show memvault's bookkeeping too (session starts and ends, transcript imports, head renders)", Destination: &o.all},
		newJSONFlag(&o.json),
	}
}

// query is the replay the options ask for.
func (o replayOptions) query() (ops.ReplayQuery, error) {
	q := ops.ReplayQuery{Last: o.last, Kind: o.kind, All: o.all}
	if q.Last < 0 {
		return q, usagef("replay: --last must be 0 (all) or more")
	}
	if o.thread != "" {
		th, err := vault.ParseThread(o.thread)
		if err != nil {
			return q, err
		}
		q.Thread = th.String()
	}
	return q, nil
}

func runReplay(_ context.Context, opts replayOptions, e env, v *vault.Vault) error {
	q, err := opts.query()
	if err != nil {
		return err
	}
	st, err := v.LoadState()
	if err != nil {
		return err
	}
	if err := checkChoice("replay", "kind", q.Kind, st.KnownKinds()); err != nil {
		return err
	}
	events, matched, hidden, err := ops.Replay(st, q)
	if err != nil {
		return err
	}
	if opts.json {
		return printJSON(e.stdout, events)
	}
	fmt.Fprint(e.stdout, ops.ReplayTable(events))
	if outputIsTerminal(e.stdout) {
		if len(events) < matched {
			fmt.Fprintf(e.stderr, "memvault: note: showing the last %d of %d events; --last 0 shows all\n", len(events), matched)
		}
		if hidden > 0 {
			fmt.Fprintf(e.stderr, "memvault: note: %d bookkeeping events left out; --all shows them\n", hidden)
		}
	}
	return nil
}
