package cli

import (
	"fmt"
	"io"
	"strings"

	ucli "github.com/urfave/cli/v2"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/lineage"
)

func newClaimCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "claim",
		Usage:     "record a claim about the vault's state, checked against it; a claim the state contradicts is recorded as rejected",
		ArgsUsage: "TYPE JSON | TYPE -",
		Description: "Checked types (JSON {\"id\": EVENT_ID}): " + strings.Join(lineage.ClaimTypes(), ", ") +
			". Another type is recorded unchecked. See docs/POLICY.md.",
		Flags: writeFlags(rowThreadFlag, globalFlag),
	}
}

// prepareClaim reads the type and the value and works out the thread
// before the lock; the check against the state is made inside the
// transaction, by the function a CLAIM: line goes through.
func prepareClaim(c *ucli.Context, v *vault.Vault) (txWork, error) {
	if c.NArg() != 2 {
		return txWork{}, usagef("claim: want a TYPE and a JSON value")
	}
	typ, raw := c.Args().Get(0), c.Args().Get(1)
	if raw == "-" {
		data, err := readStdin(c, "claim")
		if err != nil {
			return txWork{}, err
		}
		raw = data
	}
	thread, fromDir, err := legacyCurrentThread(c, v)
	if err != nil {
		return txWork{}, err
	}
	var ev *vault.Event
	return txWork{apply: func(tx *vault.Tx) error {
		ev, err = lineage.RecordClaim(tx, thread, typ, raw)
		return err
	}, report: func(res *vault.Result) error {
		if note := lineage.ClaimNote(&vault.Row{Event: ev}); note != "" && !c.Bool("json") {
			fmt.Fprintf(c.App.ErrWriter, "memvault: %s: %s\n", ev.ID, note)
		}
		return printEvents(envOf(c), c.Bool("json"), res)
	}, thread: derived(thread, fromDir)}, nil
}

// readStdin reads a value given as "-" from stdin, up to the text limit.
func readStdin(c *ucli.Context, what string) (string, error) {
	data, err := io.ReadAll(io.LimitReader(c.App.Reader, vault.MaxTextBytes+1))
	if err != nil {
		return "", fmt.Errorf("%s: read stdin: %w", what, err)
	}
	return strings.TrimSuffix(string(data), "\n"), nil
}

// printEvents prints what runTx prints without a report: the ids of the
// events written, or the events with --json.
func printEvents(e env, json bool, res *vault.Result) error {
	if json {
		return printJSON(e.stdout, res.Events)
	}
	for _, ev := range res.Events {
		fmt.Fprintln(e.stdout, ev.ID)
	}
	return nil
}
