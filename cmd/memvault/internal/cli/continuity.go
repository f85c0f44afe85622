package cli

import (
	"fmt"
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

var (
	nowFlag        = &ucli.StringFlag{Name: "now", Usage: "the day this counts as (YYYY-MM-DD); default today"}
	learnScopeFlag = &ucli.StringFlag{Name: "scope", Usage: "global, module:NAME or file:PATH"}
)

func parseNow(c *ucli.Context) (time.Time, error) {
	if s := c.String("now"); s != "" {
		return continuity.ParseDate(s)
	}
	return time.Time{}, nil
}

// continuityWrite wraps a command that changes the protocol's state: one
// transaction, CONTINUITY.md refreshed in the same commit, the messages of
// what was done printed (or the whole result with --json).
func continuityWrite(fn func(c *ucli.Context, ct *continuity.ContinuityTx) error) func(c *ucli.Context) error {
	return func(c *ucli.Context) error {
		res, err := runContinuityWrite(c, fn)
		if err != nil {
			return err
		}
		if c.Bool("json") {
			return printJSON(c.App.Writer, res)
		}
		for _, m := range res.Messages {
			fmt.Fprintln(c.App.Writer, m)
		}
		printHeadOutcome(c, res)
		return nil
	}
}

// runContinuityWrite runs fn in one protocol transaction and prints its
// warnings; the caller prints the rest.
func runContinuityWrite(c *ucli.Context, fn func(c *ucli.Context, ct *continuity.ContinuityTx) error) (*continuity.ContinuityResult, error) {
	now, err := parseNow(c)
	if err != nil {
		return nil, err
	}
	v, err := openVault(c)
	if err != nil {
		return nil, err
	}
	agent, err := agentOf(c, v)
	if err != nil {
		return nil, err
	}
	opts := continuity.ContinuityOptions{Now: now, Trigger: c.Command.FullName(), TxOptions: vault.TxOptions{
		Command: c.Command.FullName(), Agent: agent, Session: c.String("session"),
		Harness: c.String("harness"), Force: c.Bool("force")}}
	fromDir := false
	if filesRows(c) {
		if opts.Thread, fromDir, err = legacyCurrentThread(c, v); err != nil {
			return nil, err
		}
	}
	res, err := continuity.UpdateContinuity(v, opts, func(ct *continuity.ContinuityTx) error { return fn(c, ct) })
	if err != nil {
		return nil, err
	}
	for _, w := range res.Warnings {
		fmt.Fprintf(c.App.ErrWriter, "memvault: warning: %s\n", w)
	}
	// A done or supersede takes the thread of the row it closes: say
	// which thread was used only when a row went there.
	if fromDir && slices.ContainsFunc(res.Events, func(ev *vault.Event) bool { return ev.Thread == opts.Thread }) {
		dirThreadNote(envOf(c), opts.Thread, optOutWrite)
	}
	return res, nil
}

// filesRows reports whether a protocol command files new rows (learn,
// decide, goal, next, done), which it declares by taking --global: they
// go to the current thread. The others write only CONTINUITY.md.
func filesRows(c *ucli.Context) bool {
	return slices.ContainsFunc(c.Command.Flags, func(f ucli.Flag) bool { return f == globalFlag })
}

func printHeadOutcome(c *ucli.Context, res *continuity.ContinuityResult) {
	switch res.Head {
	case "", "unchanged":
	case "deferred":
		fmt.Fprintf(c.App.Writer, "CONTINUITY.md: deferred, lease held by %s; the next update retries\n", res.Holder)
	case "conflict":
		fmt.Fprintf(c.App.Writer, "CONTINUITY.md: conflict in %s: your text was kept; see memvault status, settle with memvault resolve\n",
			strings.Join(res.Conflicts, "; "))
	default:
		fmt.Fprintf(c.App.Writer, "CONTINUITY.md: %s\n", res.Head)
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
				Flags: writeFlags(),
			},
			{
				Name:  "status",
				Usage: "active goal, current task, next actions, blockers, budget use",
				Flags: []ucli.Flag{jsonFlag},
			},
			{
				Name:  "learnings",
				Usage: "learnings in scope, smallest scope first (active and corrected; --all for every status)",
				Flags: []ucli.Flag{learnScopeFlag, &ucli.BoolFlag{Name: "all", Usage: "include archived and invalidated learnings"},
					limitFlag("learnings, the first", 0), jsonFlag},
			},
			{
				Name:  "decisions",
				Usage: "decisions in scope (active; --all includes superseded ones)",
				Flags: []ucli.Flag{learnScopeFlag, &ucli.BoolFlag{Name: "all", Usage: "include superseded decisions"},
					limitFlag("decisions, the first", 0), jsonFlag},
			},
			{
				Name:  "audit",
				Usage: "decay, reinforcement ladder, conflicts, integrity flags, as of --now",
				Flags: writeFlags(nowFlag, &ucli.BoolFlag{Name: "dry-run", Usage: "report without writing"}),
			},
			{
				Name:  "index",
				Usage: "write learnings-index.md, the cheapest summary of the learnings, and print it",
				Flags: writeFlags(),
			},
			{
				Name:  "budget",
				Usage: "token use per category against the budgets in memvault.toml",
				Flags: []ucli.Flag{jsonFlag},
			},
		},
	}
}

// runContinuityInit refreshes CONTINUITY.md, which every protocol write does.
func runContinuityInit(c *ucli.Context, _ *continuity.ContinuityTx) error {
	return nil
}

func runContinuityLearnings(c *ucli.Context, v *vault.Vault) error {
	return listAction("continuity learnings", "no learnings", "%-11s %s\n",
		(*continuity.Continuity).ActiveLearnings, func(l *continuity.Learning) (string, string) { return l.Status, l.Line() })(c, v)
}

func runContinuityDecisions(c *ucli.Context, v *vault.Vault) error {
	return listAction("continuity decisions", "no decisions", "%-10s %s\n",
		(*continuity.Continuity).ActiveDecisions, func(d *continuity.Decision) (string, string) { return d.Status, d.Line() })(c, v)
}

// runContinuityIndex writes learnings-index.md in a protocol transaction,
// then prints the file it wrote.
func runContinuityIndex(c *ucli.Context) error {
	_, err := runContinuityWrite(c, func(c *ucli.Context, ct *continuity.ContinuityTx) error {
		ct.WriteIndex()
		return nil
	})
	if err != nil {
		return err
	}
	v, err := openVault(c)
	if err != nil {
		return err
	}
	out, err := v.ReadFile(continuity.LearningsIndexFile)
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return printJSON(c.App.Writer, map[string]any{"file": continuity.LearningsIndexFile, "text": string(out)})
	}
	_, err = c.App.Writer.Write(out)
	return err
}

func runContinuityBudget(c *ucli.Context, v *vault.Vault) error {
	b, err := continuity.ContinuityBudget(v)
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return printJSON(c.App.Writer, b)
	}
	printBudget(c, b)
	return nil
}

func printBudget(c *ucli.Context, b []continuity.BudgetLine) {
	for _, l := range b {
		mark := ""
		if l.Over {
			mark = "  OVER"
		}
		fmt.Fprintf(c.App.Writer, "%-11s %6d / %d tokens%s\n", l.Category, l.Tokens, l.Budget, mark)
	}
}

// listAction prints the learnings or decisions in scope: one line each, or
// JSON.
func listAction[T any](cmd, none, format string, list func(*continuity.Continuity, continuity.ScopeFilter, bool) []T,
	show func(T) (status, line string)) func(c *ucli.Context, v *vault.Vault) error {
	return func(c *ucli.Context, v *vault.Vault) error {
		limit, err := legacyListLimit(c)
		if err != nil {
			return err
		}
		f, err := scopeFilter(c, v)
		if err != nil {
			return err
		}
		st, err := continuity.LoadContinuity(v)
		if err != nil {
			return err
		}
		all := list(st, f, c.Bool("all"))
		items := first(all, limit)
		limitNote(envOf(c), c.Bool("json"), len(items), len(all), strings.Fields(cmd)[1], "first")
		if c.Bool("json") {
			if items == nil {
				items = []T{}
			}
			return printJSON(c.App.Writer, items)
		}
		if len(items) == 0 {
			fmt.Fprintln(c.App.Writer, none)
		}
		for _, it := range items {
			status, line := show(it)
			fmt.Fprintf(c.App.Writer, format, status, line)
		}
		return nil
	}
}

func scopeFilter(c *ucli.Context, v *vault.Vault) (continuity.ScopeFilter, error) {
	if s := c.String("scope"); s != "" {
		sc, err := continuity.ParseScope(s)
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

func runContinuityStatus(c *ucli.Context, v *vault.Vault) error {
	s, err := continuity.LoadContinuityStatus(v)
	if err != nil {
		return err
	}
	for _, w := range s.Warnings {
		fmt.Fprintf(c.App.ErrWriter, "memvault: warning: %s\n", w)
	}
	if c.Bool("json") {
		return printJSON(c.App.Writer, s)
	}
	w := c.App.Writer
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

func runContinuityAudit(c *ucli.Context) error {
	if c.Bool("dry-run") {
		now, err := parseNow(c)
		if err != nil {
			return err
		}
		v, err := openVault(c)
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
		rep := st.Audit(now.UTC().Format("2006-01-02"))
		rep.DryRun = true
		return printAudit(c, rep)
	}
	var rep *continuity.AuditReport
	res, err := runContinuityWrite(c, func(c *ucli.Context, ct *continuity.ContinuityTx) error {
		rep = ct.Audit(false)
		return nil
	})
	if err != nil {
		return err
	}
	rep.Commit = res.Commit
	return printAudit(c, rep)
}

func printAudit(c *ucli.Context, rep *continuity.AuditReport) error {
	if c.Bool("json") {
		return printJSON(c.App.Writer, rep)
	}
	w := c.App.Writer
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
