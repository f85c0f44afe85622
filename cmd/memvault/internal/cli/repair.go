package cli

import (
	"context"
	"fmt"
	"strings"

	ucli "github.com/urfave/cli/v2"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/repair"
)

type repairOptions struct {
	dryRun bool
	json   bool
}

func newRepairCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "repair",
		Usage: "re-chain a ledger broken by a merge or a hand edit, restoring committed events; the old segments stay under .logs/",
	}
}

func (o *repairOptions) flags() []ucli.Flag {
	return []ucli.Flag{
		&ucli.BoolFlag{Name: "dry-run", Usage: "say what would be done, change nothing", Destination: &o.dryRun},
		newJSONFlag(&o.json),
	}
}

// runRepair manages its own writes: repair.Run takes the lock, plans
// under it, and commits through a transaction (or, in the middle of a git
// merge, stages the segments for the merge's commit).
func runRepair(_ context.Context, opts repairOptions, e env) error {
	v, err := e.openVault()
	if err != nil {
		return err
	}
	rep, err := repair.Run(v, opts.dryRun)
	if err != nil {
		return err
	}
	if opts.json {
		return printJSON(e.stdout, rep)
	}
	w := e.stdout
	if len(rep.StaleLocks) > 0 {
		fmt.Fprintf(w, "removed git lock files a killed gc left: %s\n", strings.Join(rep.StaleLocks, " "))
	}
	if rep.Nothing {
		fmt.Fprintln(w, "nothing to repair: the ledger verifies and has one tip")
		return nil
	}
	verb := "repaired"
	if opts.dryRun {
		verb = "would repair"
	}
	fmt.Fprintf(w, "%s %s: %s\n", verb, strings.Join(rep.Segments, ", "), rep.Summary())
	if len(rep.Restored) > 0 {
		fmt.Fprintf(w, "restored from HEAD: %s\n", strings.Join(rep.Restored, " "))
	}
	if len(rep.Replaced) > 0 {
		fmt.Fprintf(w, "given HEAD's line back: %s\n", strings.Join(rep.Replaced, " "))
	}
	if len(rep.Uncommitted) > 0 {
		fmt.Fprintf(w, "kept, though HEAD does not hold them (retract any you did not write): %s\n", strings.Join(rep.Uncommitted, " "))
	}
	if len(rep.Changed) > 0 {
		fmt.Fprintf(w, "re-sealed (did not hash or chain): %s\n", strings.Join(rep.Changed, " "))
	}
	if opts.dryRun {
		return nil
	}
	fmt.Fprintf(w, "old segments kept in %s\n", rep.Kept)
	if rep.Staged {
		fmt.Fprintln(w, "a git merge is in progress: the segments are staged; conclude it with git commit")
	} else {
		fmt.Fprintf(w, "recorded as %s in commit %s\n", rep.Event, vault.ShortHash(rep.Commit))
	}
	return nil
}
