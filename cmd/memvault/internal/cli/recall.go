package cli

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/memvault/memvault/cmd/memvault/internal/ops"
	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/recall"

	ucli "github.com/urfave/cli/v2"
)

type recallOptions struct {
	lib  recall.RecallOptions
	json bool
}

func newRecallCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "recall",
		Usage:     "search memory: structured rows, then heads and nodes, then transcripts",
		ArgsUsage: "QUERY | -",
		Flags: []ucli.Flag{jsonFlag,
			&ucli.StringFlag{Name: "thread", Aliases: []string{"t"}, EnvVars: []string{"MEMVAULT_THREAD"}, Usage: "the current thread (default: the session's, else the working directory's)"},
			&ucli.BoolFlag{Name: "all-threads", Usage: "search every thread"},
			&ucli.StringFlag{Name: "session", EnvVars: []string{"MEMVAULT_SESSION"}, Usage: "the current session, whose thread is the default"},
			&ucli.StringFlag{Name: "tier", Usage: "only one tier"},
			&ucli.StringFlag{Name: "since", Usage: "only what was written at or after DATE"},
			&ucli.StringFlag{Name: "until", Usage: "only what was written before DATE"},
			&ucli.IntFlag{Name: "limit", Aliases: []string{"n"}, Value: 5, Usage: "at most N hits per tier (1 or more)"},
			&ucli.BoolFlag{Name: "history", Usage: "include rows that no longer hold (superseded, retracted, closed, invalidated, archived), marked"},
			&ucli.BoolFlag{Name: "explain", Usage: "say why each hit ranked where it did: matched terms and their weights, speaker, day, lifts"},
		},
	}
}

func newRecallOptions(c *ucli.Context, v *vault.Vault) (recallOptions, error) {
	agent, err := agentOf(c, v)
	if err != nil {
		return recallOptions{}, err
	}
	// MEMVAULT_THREAD set by a harness does not clash with --all-threads.
	if c.Bool("all-threads") && c.IsSet("thread") && c.String("thread") != "" && os.Getenv("MEMVAULT_THREAD") == "" {
		return recallOptions{}, usagef("recall: --thread and --all-threads do not go together")
	}
	if c.Int("limit") < 1 {
		return recallOptions{}, usagef("recall: --limit must be 1 or more: a search returns its best hits per tier")
	}
	if err := checkChoice("recall", "tier", c.String("tier"), recall.Tiers); err != nil {
		return recallOptions{}, err
	}
	query, err := textArg(c, "recall")
	if err != nil {
		return recallOptions{}, err
	}
	opts := recallOptions{json: c.Bool("json"), lib: recall.RecallOptions{Query: query, Agent: agent,
		Thread: c.String("thread"), Session: c.String("session"), AllThreads: c.Bool("all-threads"),
		Tier: c.String("tier"), Limit: c.Int("limit"), History: c.Bool("history"), Explain: c.Bool("explain")}}
	if c.Bool("all-threads") {
		opts.lib.Thread = ""
	} else if wd, err := os.Getwd(); err == nil {
		opts.lib.Dir = wd
	}
	now := time.Now()
	if s := c.String("since"); s != "" {
		if opts.lib.Since, err = ops.ParseSince(s, now); err != nil {
			return opts, err
		}
	}
	if s := c.String("until"); s != "" {
		if opts.lib.Until, err = ops.ParseSince(s, now); err != nil {
			return opts, err
		}
	}
	return opts, nil
}

func runRecall(c *ucli.Context, v *vault.Vault) error {
	opts, err := newRecallOptions(c, v)
	if err != nil {
		return err
	}
	res, err := recall.Recall(v, opts.lib)
	if err != nil {
		return err
	}
	for _, n := range res.Notes {
		fmt.Fprintf(c.App.ErrWriter, "memvault: note: %s\n", n)
	}
	if res.DirThread != "" {
		dirThreadNote(envOf(c), res.DirThread, optOutRead)
	}
	if res.Excluded > 0 {
		fmt.Fprintf(c.App.ErrWriter, "memvault: note: %d hits in other threads left out (scope: %s); --all-threads or --thread T includes them\n",
			res.Excluded, scopeText(res.Scope))
	}
	if opts.json {
		return printJSON(c.App.Writer, res.Hits)
	}
	printHits(c.App.Writer, res.Hits)
	if len(res.Hits) == 0 {
		fmt.Fprintln(c.App.ErrWriter, "memvault: nothing found")
	}
	return nil
}

// printHits writes the hits under a line per tier.
func printHits(w io.Writer, hits []recall.Hit) {
	tier := ""
	for _, h := range hits {
		if h.Tier != tier {
			tier = h.Tier
			fmt.Fprintf(w, "%s\n", tier)
		}
		where := h.Source.File
		if h.Source.Line > 0 {
			where += fmt.Sprintf(":%d", h.Source.Line)
		}
		thread := h.Thread
		if thread == "" {
			thread = "-"
		}
		kind := h.Kind
		if h.Status != "" && h.Status != vault.StatusActive {
			kind += " [" + h.Status + " by " + h.RetractedBy + h.SupersededBy + h.ClosedBy + "]"
		}
		fmt.Fprintf(w, "  %s  %s  %s  %s\n      %s\n", h.ID, kind, thread, where, h.Text)
		if h.Why != nil {
			fmt.Fprintf(w, "      why: %s\n", explainHit(h))
		}
	}
}

// explainHit says in one line what a hit's score is made of.
func explainHit(h recall.Hit) string {
	var b strings.Builder
	fmt.Fprintf(&b, "score %.3f = text %.3f", h.Score, h.Why.Text)
	if len(h.Why.Terms) > 0 {
		parts := make([]string, 0, len(h.Why.Terms))
		for _, t := range h.Why.Terms {
			parts = append(parts, fmt.Sprintf("%s:%s %.3f", t.Field, t.Term, t.Score))
		}
		fmt.Fprintf(&b, " (%s)", strings.Join(parts, ", "))
	}
	if h.Why.Neighbour > 0 {
		fmt.Fprintf(&b, " + neighbour of %s %.3f", h.Why.NeighbourOf, h.Why.Neighbour)
	}
	if h.Why.Session > 0 {
		fmt.Fprintf(&b, " + session %.3f", h.Why.Session)
	}
	if h.Why.Held {
		b.WriteString(", held below the hit that lifted it")
	}
	return b.String()
}

func scopeText(scope []string) string {
	parts := make([]string, 0, len(scope))
	for _, s := range scope {
		if s == "" {
			s = "global"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}
