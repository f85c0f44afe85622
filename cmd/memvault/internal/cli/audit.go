package cli

import (
	"fmt"
	"strings"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/memvault/memvault/cmd/memvault/internal/ops"
	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/executor"
)

// memvault audit: the delegations the ledger holds, and audit replay,
// which verifies them again from the ledger alone (docs/EXECUTORS.md,
// "Audit and replay"). Both only read.

func newAuditCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "audit",
		Usage: "list the delegations recorded: executor, mode, tries, checksum",
		Flags: []ucli.Flag{
			&ucli.StringFlag{Name: "executor", Usage: "only this executor's"},
			&ucli.StringFlag{Name: "since", Usage: "only delegations at or after DATE (2026-11-22, RFC 3339, or 7d / 12h ago)"},
			limitFlag("delegations, the newest", 0), jsonFlag,
		},
		Subcommands: []*ucli.Command{{
			Name:      "replay",
			Usage:     "verify the chain, hash every recorded result again and fold the state again from the ledger alone",
			ArgsUsage: "[RANGE]",
			Description: "RANGE narrows the results hashed and the rows compared to the events FROM..TO (ids or unique prefixes,\n" +
				"either end left out for the ledger's first or last; one ID alone is that event); the chain is verified whole.",
			Flags: []ucli.Flag{
				&ucli.StringFlag{Name: "since", Usage: "only the events at or after DATE (2026-11-22, RFC 3339, or 7d / 12h ago)"},
				jsonFlag,
			},
		}},
	}
}

func runAudit(c *ucli.Context, v *vault.Vault) error {
	if c.NArg() > 0 {
		return usagef("audit: takes no arguments (got %q)", c.Args().First())
	}
	limit, err := legacyListLimit(c)
	if err != nil {
		return err
	}
	q := executor.AuditQuery{Executor: c.String("executor"), Limit: limit}
	if s := c.String("since"); s != "" {
		if q.Since, err = ops.ParseSince(s, time.Now()); err != nil {
			return err
		}
	}
	rows, err := executor.Audit(v, q)
	if err != nil {
		return err
	}
	if rows == nil {
		rows = []executor.AuditRow{}
	}
	if c.Bool("json") {
		return printJSON(c.App.Writer, rows)
	}
	if len(rows) == 0 {
		fmt.Fprintln(c.App.Writer, "no delegations")
		return nil
	}
	for _, r := range rows {
		status := "ok " + r.ChecksumBy + " " + clipChecksum(r.Checksum)
		if r.Kind == executor.KindDelegationFailed {
			status = "failed " + r.Code
		}
		first, _, _ := strings.Cut(r.Text, "\n")
		fmt.Fprintf(c.App.Writer, "%s  %s  %s  %s  tries %d  %s  %s\n", r.TS, r.ID, r.Executor, r.Arbitration, len(r.Attempts), status, first)
	}
	return nil
}

func clipChecksum(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}

func runAuditReplay(c *ucli.Context, v *vault.Vault) error {
	var rng executor.ReplayRange
	switch c.NArg() {
	case 0:
	case 1:
		arg := strings.TrimSpace(c.Args().First())
		from, to, isRange := strings.Cut(arg, "..")
		if !isRange {
			to = from
		}
		rng.From, rng.To = strings.TrimSpace(from), strings.TrimSpace(to)
		if rng.From == "" && rng.To == "" {
			return usagef("audit replay: range %q: want FROM..TO, FROM.., ..TO or one ID", arg)
		}
	default:
		return usagef("audit replay: want at most one RANGE (got %d arguments)", c.NArg())
	}
	if s := c.String("since"); s != "" {
		var err error
		if rng.Since, err = ops.ParseSince(s, time.Now()); err != nil {
			return err
		}
	}
	rep, err := executor.Replay(v, rng)
	if err != nil {
		return err
	}
	if c.Bool("json") {
		if err := printJSON(c.App.Writer, rep); err != nil {
			return err
		}
	} else {
		w := c.App.Writer
		fmt.Fprintf(w, "ledger: %d events, %d problems\n", rep.Events, len(rep.Problems))
		if r := rep.Range; r != nil {
			if r.Events == 0 {
				fmt.Fprintln(w, "range: no events")
			} else {
				fmt.Fprintf(w, "range: %s..%s, %d events (the chain is verified whole)\n", r.First, r.Last, r.Events)
			}
		}
		for _, p := range rep.Problems {
			fmt.Fprintf(w, "  %s\n", p)
		}
		fmt.Fprintf(w, "delegations: %d, %d results verified, %d redacted, %d mismatches\n", rep.Delegations, rep.Verified, len(rep.Redacted), len(rep.Mismatches))
		for _, m := range rep.Mismatches {
			fmt.Fprintf(w, "  %s: %s\n", m.ID, m.Reason)
		}
		fmt.Fprintf(w, "state: %s (folded twice from the ledger; the cached fold: %s)\n", rep.StateDigest, rep.CachedDigest)
		for _, d := range rep.Differences {
			fmt.Fprintf(w, "  %s %s\n", d.ID, d.Reason)
		}
		if rep.OK {
			fmt.Fprintln(w, "ok: replay matches the ledger")
		}
	}
	if !rep.OK {
		return &silentError{code: ExitCorrupt}
	}
	return nil
}
