package cli

import (
	"context"
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

type auditOptions struct {
	executor, since, task string // filters; "" for any
	limitOptions                 // the newest N; 0 for all
	json                  bool
}

type auditReplayOptions struct {
	since string
	json  bool
	args  []string // RANGE
}

func newAuditCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "audit",
		Usage: "list the delegations recorded: executor, mode, tries, checksum",
		Subcommands: []*ucli.Command{{
			Name:      "replay",
			Usage:     "verify the chain, hash every recorded result again and fold the state again from the ledger alone",
			ArgsUsage: "[RANGE]",
			Description: "RANGE narrows the results hashed and the rows compared to the events FROM..TO (ids or unique prefixes,\n" +
				"either end left out for the ledger's first or last; one ID alone is that event); the chain is verified whole.",
		}},
	}
}

func (o *auditOptions) flags() []ucli.Flag {
	return []ucli.Flag{
		&ucli.StringFlag{Name: "executor", Usage: "only this executor's", Destination: &o.executor},
		&ucli.StringFlag{Name: "since", Usage: "only delegations at or after DATE (2026-11-22, RFC 3339, or 7d / 12h ago)", Destination: &o.since},
		&ucli.StringFlag{Name: "task", Usage: "only the delegations of the task with this id (its \"id\" in delegate's JSON lines, else t1, t2, …)", Destination: &o.task},
		o.limitFlag("delegations, the newest", 0), newJSONFlag(&o.json),
	}
}

func (o *auditReplayOptions) flags() []ucli.Flag {
	return []ucli.Flag{
		&ucli.StringFlag{Name: "since", Usage: "only the events at or after DATE (2026-11-22, RFC 3339, or 7d / 12h ago)", Destination: &o.since},
		newJSONFlag(&o.json),
	}
}

func (o *auditReplayOptions) setArgs(args []string) { o.args = args }

func runAudit(_ context.Context, opts auditOptions, e env, v *vault.Vault) error {
	limit, err := opts.listLimit(e, opts.json)
	if err != nil {
		return err
	}
	q := executor.AuditQuery{Executor: opts.executor, Task: strings.TrimSpace(opts.task), Limit: limit}
	if opts.task != "" && q.Task == "" {
		return usagef("audit: --task: want a task id, not blanks")
	}
	if opts.since != "" {
		if q.Since, err = ops.ParseSince(opts.since, time.Now()); err != nil {
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
	if opts.json {
		return printJSON(e.stdout, rows)
	}
	if len(rows) == 0 {
		fmt.Fprintln(e.stdout, "no delegations")
		return nil
	}
	for _, r := range rows {
		status := "ok " + r.ChecksumBy + " " + clipChecksum(r.Checksum)
		if r.Kind == executor.KindDelegationFailed {
			status = "failed " + r.Code
		}
		first, _, _ := strings.Cut(r.Text, "\n")
		fmt.Fprintf(e.stdout, "%s  %s  %s  %s  tries %d  %s  task %s: %s\n", r.TS, r.ID, r.Executor, r.Arbitration, len(r.Attempts), status, r.TaskID, first)
	}
	return nil
}

func clipChecksum(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}

// replayRange is the range audit replay's arguments and --since name.
func (o auditReplayOptions) replayRange() (executor.ReplayRange, error) {
	var rng executor.ReplayRange
	switch len(o.args) {
	case 0:
	case 1:
		arg := strings.TrimSpace(o.args[0])
		from, to, isRange := strings.Cut(arg, "..")
		if !isRange {
			to = from
		}
		rng.From, rng.To = strings.TrimSpace(from), strings.TrimSpace(to)
		if rng.From == "" && rng.To == "" {
			return rng, usagef("audit replay: range %q: want FROM..TO, FROM.., ..TO or one ID", arg)
		}
	default:
		return rng, usagef("audit replay: want at most one RANGE (got %d arguments)", len(o.args))
	}
	if o.since != "" {
		var err error
		if rng.Since, err = ops.ParseSince(o.since, time.Now()); err != nil {
			return rng, err
		}
	}
	return rng, nil
}

func runAuditReplay(_ context.Context, opts auditReplayOptions, e env, v *vault.Vault) error {
	rng, err := opts.replayRange()
	if err != nil {
		return err
	}
	rep, err := executor.Replay(v, rng)
	if err != nil {
		return err
	}
	if opts.json {
		if err := printJSON(e.stdout, rep); err != nil {
			return err
		}
	} else {
		w := e.stdout
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
