package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/memvault/memvault/vault/continuity"

	"github.com/memvault/memvault/vault"

	ucli "github.com/urfave/cli/v2"
)

// The working-memory protocol (docs/CONTINUITY.md): continuity, learn,
// decide, goal, next, done.

// protocolOptions are the flags of a protocol write: the write flags and
// --now, the day it counts as (YYYY-MM-DD; "" for today).
type protocolOptions struct {
	writeOptions
	now string
}

// protocol is a protocol write's shared flags (protocolOf).
func (o *protocolOptions) protocol() *protocolOptions { return o }

// protocolOf is optionsOf for a protocol write.
type protocolOf[O any] interface {
	optionsOf[O]
	protocol() *protocolOptions
}

// rowFiler is the options of a protocol command that files new rows
// (learn, decide, goal, next, done), which it declares by taking --thread
// and --global: they go to the current thread. The others write only
// CONTINUITY.md.
type rowFiler interface{ rowThread() rowThreadOptions }

func (o rowThreadOptions) rowThread() rowThreadOptions { return o }

func newNowFlag(p *string) *ucli.StringFlag {
	return &ucli.StringFlag{Name: "now", Usage: "the day this counts as (YYYY-MM-DD); default today", Destination: p}
}

func newLearnScopeFlag(p *string) *ucli.StringFlag {
	return &ucli.StringFlag{Name: "scope", Usage: "global, module:NAME or file:PATH", Destination: p}
}

func parseNow(now string) (time.Time, error) {
	if now != "" {
		return continuity.ParseDate(now)
	}
	return time.Time{}, nil
}

// continuityWrite wraps a command that changes the protocol's state: one
// transaction, CONTINUITY.md refreshed in the same commit, the messages of
// what was done printed (or the whole result with --json).
func continuityWrite[O any, P protocolOf[O]](fn func(ctx context.Context, opts O, e env, ct *continuity.ContinuityTx) error) func(ctx context.Context, opts O, e env) error {
	return func(ctx context.Context, opts O, e env) error {
		p := *P(&opts).protocol()
		var rows *rowThreadOptions
		if r, ok := any(opts).(rowFiler); ok {
			t := r.rowThread()
			rows = &t
		}
		res, err := runContinuityWrite(e, p, rows, func(ct *continuity.ContinuityTx) error { return fn(ctx, opts, e, ct) })
		if err != nil {
			return err
		}
		if p.json {
			return printJSON(e.stdout, res)
		}
		for _, m := range res.Messages {
			fmt.Fprintln(e.stdout, m)
		}
		printHeadOutcome(e.stdout, res)
		return nil
	}
}

// runContinuityWrite runs fn in one protocol transaction and prints its
// warnings; the caller prints the rest. rows, when the command files rows,
// are its --thread and --global.
func runContinuityWrite(e env, p protocolOptions, rows *rowThreadOptions, fn func(ct *continuity.ContinuityTx) error) (*continuity.ContinuityResult, error) {
	now, err := parseNow(p.now)
	if err != nil {
		return nil, err
	}
	v, err := e.openVault()
	if err != nil {
		return nil, err
	}
	txo, err := e.txOptions(v, p.writeOptions)
	if err != nil {
		return nil, err
	}
	opts := continuity.ContinuityOptions{Now: now, Trigger: e.name, TxOptions: txo}
	fromDir := false
	if rows != nil {
		if opts.Thread, fromDir, err = currentThread(e, v, *rows); err != nil {
			return nil, err
		}
	}
	k, err := refresher()
	if err != nil {
		return nil, err
	}
	res, err := continuity.UpdateContinuity(v, opts, fn)
	if err != nil {
		return nil, err
	}
	// CONTINUITY.md was refreshed in the write's commit; MEMORY.md and the
	// thread heads follow off this path (afterwrite.go).
	defer k.After(v, res.Commit)
	for _, w := range res.Warnings {
		fmt.Fprintf(e.stderr, "memvault: warning: %s\n", w)
	}
	// A done or supersede takes the thread of the row it closes: say
	// which thread was used only when a row went there.
	if fromDir && slices.ContainsFunc(res.Events, func(ev *vault.Event) bool { return ev.Thread == opts.Thread }) {
		dirThreadNote(e, opts.Thread, optOutWrite)
	}
	return res, nil
}

func printHeadOutcome(w io.Writer, res *continuity.ContinuityResult) {
	switch res.Head {
	case "", "unchanged":
	case "deferred":
		fmt.Fprintf(w, "CONTINUITY.md: deferred, lease held by %s; the next update retries\n", res.Holder)
	case "conflict":
		fmt.Fprintf(w, "CONTINUITY.md: conflict in %s: your text was kept; see memvault status, settle with memvault resolve\n",
			strings.Join(res.Conflicts, "; "))
	default:
		fmt.Fprintf(w, "CONTINUITY.md: %s\n", res.Head)
	}
}

func newContinuityCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "continuity",
		Usage: "the working-memory protocol: CONTINUITY.md, learnings, decisions",
		Subcommands: []*ucli.Command{
			{
				Name:  "init",
				Usage: "render CONTINUITY.md from the ledger (merged with hand edits); safe to run again",
			},
			{
				Name:  "status",
				Usage: "active goal, current task, next actions, blockers, budget use",
			},
			{
				Name:  "learnings",
				Usage: "learnings in scope, smallest scope first (active and corrected; --all for every status)",
			},
			{
				Name:  "decisions",
				Usage: "decisions in scope (active; --all includes superseded ones)",
			},
			{
				Name:  "audit",
				Usage: "decay, reinforcement ladder, conflicts, integrity flags, as of --now",
			},
			{
				Name:  "index",
				Usage: "write learnings-index.md, the cheapest summary of the learnings, and print it",
			},
			{
				Name:  "budget",
				Usage: "token use per category against the budgets in memvault.toml",
			},
		},
	}
}

// continuityInitOptions are continuity init's and continuity index's: the
// write flags (no --now).
type continuityInitOptions struct{ protocolOptions }

func (o *continuityInitOptions) flags() []ucli.Flag { return o.writeFlags() }

type continuityStatusOptions struct{ jsonOnly }

type continuityBudgetOptions struct{ jsonOnly }

// scopeListOptions are continuity learnings' and decisions': the scope
// (default: the working directory's), --all, --limit and --json.
type scopeListOptions struct {
	scope        string
	all          bool
	limitOptions // the first N; 0 for all
	json         bool
}

type continuityLearningsOptions struct{ scopeListOptions }

func (o *continuityLearningsOptions) flags() []ucli.Flag {
	return []ucli.Flag{newLearnScopeFlag(&o.scope), &ucli.BoolFlag{Name: "all", Usage: "include archived and invalidated learnings", Destination: &o.all},
		o.limitFlag("learnings, the first", 0), newJSONFlag(&o.json)}
}

type continuityDecisionsOptions struct{ scopeListOptions }

func (o *continuityDecisionsOptions) flags() []ucli.Flag {
	return []ucli.Flag{newLearnScopeFlag(&o.scope), &ucli.BoolFlag{Name: "all", Usage: "include superseded decisions", Destination: &o.all},
		o.limitFlag("decisions, the first", 0), newJSONFlag(&o.json)}
}

type continuityAuditOptions struct {
	protocolOptions
	dryRun bool
}

func (o *continuityAuditOptions) flags() []ucli.Flag {
	return o.writeFlags(newNowFlag(&o.now), &ucli.BoolFlag{Name: "dry-run", Usage: "report without writing", Destination: &o.dryRun})
}

// runContinuityInit refreshes CONTINUITY.md, which every protocol write does.
func runContinuityInit(context.Context, continuityInitOptions, env, *continuity.ContinuityTx) error {
	return nil
}

func runContinuityLearnings(_ context.Context, opts continuityLearningsOptions, e env, v *vault.Vault) error {
	return listAction("continuity learnings", "no learnings", "%-11s %s\n",
		(*continuity.Continuity).ActiveLearnings, func(l *continuity.Learning) (string, string) { return l.Status, l.Line() })(opts.scopeListOptions, e, v)
}

func runContinuityDecisions(_ context.Context, opts continuityDecisionsOptions, e env, v *vault.Vault) error {
	return listAction("continuity decisions", "no decisions", "%-10s %s\n",
		(*continuity.Continuity).ActiveDecisions, func(d *continuity.Decision) (string, string) { return d.Status, d.Line() })(opts.scopeListOptions, e, v)
}

// runContinuityIndex writes learnings-index.md in a protocol transaction,
// then prints the file it wrote.
func runContinuityIndex(_ context.Context, opts continuityInitOptions, e env) error {
	_, err := runContinuityWrite(e, opts.protocolOptions, nil, func(ct *continuity.ContinuityTx) error {
		ct.WriteIndex()
		return nil
	})
	if err != nil {
		return err
	}
	v, err := e.openVault()
	if err != nil {
		return err
	}
	out, err := v.ReadFile(continuity.LearningsIndexFile)
	if err != nil {
		return err
	}
	if opts.json {
		return printJSON(e.stdout, map[string]any{"file": continuity.LearningsIndexFile, "text": string(out)})
	}
	_, err = e.stdout.Write(out)
	return err
}

func runContinuityBudget(_ context.Context, opts continuityBudgetOptions, e env, v *vault.Vault) error {
	b, err := continuity.ContinuityBudget(v)
	if err != nil {
		return err
	}
	if opts.json {
		return printJSON(e.stdout, b)
	}
	printBudget(e.stdout, b)
	return nil
}

func printBudget(w io.Writer, b []continuity.BudgetLine) {
	for _, l := range b {
		mark := ""
		if l.Over {
			mark = "  OVER"
		}
		fmt.Fprintf(w, "%-11s %6d / %d tokens%s\n", l.Category, l.Tokens, l.Budget, mark)
	}
}

// listAction prints the learnings or decisions in scope: one line each, or
// JSON.
func listAction[T any](cmd, none, format string, list func(*continuity.Continuity, continuity.ScopeFilter, bool) []T,
	show func(T) (status, line string)) func(opts scopeListOptions, e env, v *vault.Vault) error {
	return func(opts scopeListOptions, e env, v *vault.Vault) error {
		limit, err := opts.listLimit(e, opts.json)
		if err != nil {
			return err
		}
		f, err := scopeFilter(opts.scope, v)
		if err != nil {
			return err
		}
		st, err := continuity.LoadContinuity(v)
		if err != nil {
			return err
		}
		all := list(st, f, opts.all)
		items := first(all, limit)
		limitNote(e, opts.json, len(items), len(all), strings.Fields(cmd)[1], "first")
		if opts.json {
			if items == nil {
				items = []T{}
			}
			return printJSON(e.stdout, items)
		}
		if len(items) == 0 {
			fmt.Fprintln(e.stdout, none)
		}
		for _, it := range items {
			status, line := show(it)
			fmt.Fprintf(e.stdout, format, status, line)
		}
		return nil
	}
}

func scopeFilter(scope string, v *vault.Vault) (continuity.ScopeFilter, error) {
	if scope != "" {
		sc, err := continuity.ParseScope(scope)
		if err != nil {
			return continuity.ScopeFilter{}, err
		}
		return continuity.FilterFor(sc), nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return continuity.ScopeFilter{}, err
	}
	return continuity.FilterForDir(continuity.ProjectDir(v, wd)), nil
}

func runContinuityStatus(_ context.Context, opts continuityStatusOptions, e env, v *vault.Vault) error {
	s, err := continuity.LoadContinuityStatus(v)
	if err != nil {
		return err
	}
	for _, w := range s.Warnings {
		fmt.Fprintf(e.stderr, "memvault: warning: %s\n", w)
	}
	if opts.json {
		return printJSON(e.stdout, s)
	}
	w := e.stdout
	none := func(s string) string {
		if s == "" {
			return "none"
		}
		return s
	}
	fmt.Fprintf(w, "goal:       %s\n", none(s.Goal))
	fmt.Fprintf(w, "phase:      %s (iteration %s)\n", none(s.Phase), none(s.Iteration))
	fmt.Fprintf(w, "updated:    %s\n", none(s.Updated))
	fmt.Fprintf(w, "task:       %s\n", none(s.CurrentTask))
	if len(s.Next) == 0 {
		fmt.Fprintf(w, "next:       none\n")
	}
	for i, n := range s.Next {
		fmt.Fprintf(w, "next:       %d. %s\n", i+1, n)
	}
	if len(s.Blockers) == 0 {
		fmt.Fprintf(w, "blockers:   none\n")
	}
	for _, b := range s.Blockers {
		fmt.Fprintf(w, "blocker:    %s\n", b)
	}
	fmt.Fprintf(w, "words:      %d of %d\n", s.Words, s.Cap)
	fmt.Fprintf(w, "learnings:  %d active\n", s.Learnings)
	fmt.Fprintf(w, "decisions:  %d active\n", s.Decisions)
	fmt.Fprintf(w, "last audit: %s\n", none(s.LastAudit))
	if s.Deferred > 0 || s.Conflicts > 0 {
		fmt.Fprintf(w, "head:       %d deferred refresh(es), %d unresolved conflict(s)\n", s.Deferred, s.Conflicts)
	}
	for _, b := range s.Budget {
		mark := ""
		if b.Over {
			mark = " OVER"
		}
		fmt.Fprintf(w, "budget:     %s %d/%d%s\n", b.Category, b.Tokens, b.Budget, mark)
	}
	return nil
}

func runContinuityAudit(_ context.Context, opts continuityAuditOptions, e env) error {
	if opts.dryRun {
		now, err := parseNow(opts.now)
		if err != nil {
			return err
		}
		v, err := e.openVault()
		if err != nil {
			return err
		}
		st, err := continuity.LoadContinuity(v)
		if err != nil {
			return err
		}
		if now.IsZero() {
			now = time.Now()
		}
		rep := st.Audit(now.UTC().Format("2006-01-02"), v)
		rep.DryRun = true
		return printAudit(e.stdout, opts.json, rep)
	}
	var rep *continuity.AuditReport
	res, err := runContinuityWrite(e, opts.protocolOptions, nil, func(ct *continuity.ContinuityTx) error {
		rep = ct.Audit(false)
		return nil
	})
	if err != nil {
		return err
	}
	rep.Commit = res.Commit
	return printAudit(e.stdout, opts.json, rep)
}

func printAudit(w io.Writer, json bool, rep *continuity.AuditReport) error {
	if json {
		return printJSON(w, rep)
	}
	fmt.Fprintf(w, "audit as of %s\n", rep.Now)
	for _, a := range rep.Actions {
		by := ""
		if a.By != "" {
			by = " (by " + a.By + ")"
		}
		fmt.Fprintf(w, "%s %s%s: %s\n", a.Action, a.ID, by, a.Reason)
	}
	for _, f := range rep.Flags {
		fmt.Fprintf(w, "flag %s %s: %s\n", f.ID, f.Flag, f.Reason)
	}
	for _, l := range rep.Ladder {
		fmt.Fprintf(w, "ttl %s: %s\n", l.ID, l.Reason)
	}
	for _, b := range rep.Blockers {
		fmt.Fprintf(w, "blocker: %s\n", b)
	}
	switch {
	case rep.DryRun:
		fmt.Fprintln(w, "dry run: nothing written")
	case !rep.Written:
		fmt.Fprintln(w, "nothing new since the last audit: nothing written")
	}
	return nil
}
