package cli

import (
	"context"
	"fmt"
	"strings"

	ucli "github.com/urfave/cli/v2"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/lineage"
)

type claimOptions struct {
	writeOptions
	rowThreadOptions
	args []string // TYPE and JSON (or "-" for stdin)
}

func newClaimCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "claim",
		Usage:     "record a claim about the vault's state, checked against it; a claim the state contradicts is recorded as rejected",
		ArgsUsage: "TYPE JSON | TYPE -",
		Description: "Checked types (JSON {\"id\": EVENT_ID}): " + strings.Join(lineage.ClaimTypes(), ", ") +
			". Another type is recorded unchecked. See docs/POLICY.md.",
	}
}

func (o *claimOptions) flags() []ucli.Flag {
	return o.writeFlags(newRowThreadFlag(&o.thread), newGlobalFlag(&o.global))
}

func (o *claimOptions) setArgs(args []string) { o.args = args }

// prepareClaim reads the type and the value and works out the thread
// before the lock; the check against the state is made inside the
// transaction, by the function a CLAIM: line goes through.
func prepareClaim(_ context.Context, opts claimOptions, e env, v *vault.Vault) (txWork, error) {
	if len(opts.args) != 2 {
		return txWork{}, usagef("claim: want a TYPE and a JSON value")
	}
	typ, raw := opts.args[0], opts.args[1]
	if raw == "-" {
		data, err := e.readStdin("claim")
		if err != nil {
			return txWork{}, err
		}
		raw = data
	}
	thread, fromDir, err := currentThread(e, v, opts.rowThreadOptions)
	if err != nil {
		return txWork{}, err
	}
	var ev *vault.Event
	return txWork{apply: func(tx *vault.Tx) error {
		ev, err = lineage.RecordClaim(tx, thread, typ, raw)
		return err
	}, report: func(res *vault.Result) error {
		if note := lineage.ClaimNote(&vault.Row{Event: ev}); note != "" && !opts.json {
			fmt.Fprintf(e.stderr, "memvault: %s: %s\n", ev.ID, note)
		}
		return printEvents(e, opts.json, res)
	}, thread: derived(thread, fromDir)}, nil
}

// printEvents prints what a transaction prints without a report: the ids
// of the events written, or the events with --json.
func printEvents(e env, json bool, res *vault.Result) error {
	if json {
		return printJSON(e.stdout, res.Events)
	}
	for _, ev := range res.Events {
		fmt.Fprintln(e.stdout, ev.ID)
	}
	return nil
}
