package cli

import (
	"context"
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
	json             bool
	thread           string // the current thread (or MEMVAULT_THREAD)
	allThreads       bool
	session          string
	tier             string
	since, until     string
	limit            int // hits per tier
	history, explain bool
	query            []string // the words of the query, or "-" for stdin
}

func newRecallCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "recall",
		Usage:     "search memory: structured rows, then heads and nodes, then transcripts",
		ArgsUsage: "QUERY | -",
	}
}

func (o *recallOptions) flags() []ucli.Flag {
	return []ucli.Flag{newJSONFlag(&o.json),
		&ucli.StringFlag{Name: "thread", Aliases: []string{"t"}, EnvVars: []string{"MEMVAULT_THREAD"}, Usage: "the current thread (default: the session's, else the working directory's)", Destination: &o.thread},
		&ucli.BoolFlag{Name: "all-threads", Usage: "search every thread", Destination: &o.allThreads},
		&ucli.StringFlag{Name: "session", EnvVars: []string{"MEMVAULT_SESSION"}, Usage: "the current session, whose thread is the default", Destination: &o.session},
		&ucli.StringFlag{Name: "tier", Usage: "only one tier", Destination: &o.tier},
		&ucli.StringFlag{Name: "since", Usage: "only what was written at or after DATE", Destination: &o.since},
		&ucli.StringFlag{Name: "until", Usage: "only what was written before DATE", Destination: &o.until},
		&ucli.IntFlag{Name: "limit", Aliases: []string{"n"}, Value: 5, Usage: "at most N hits per tier (1 or more)", Destination: &o.limit},
		&ucli.BoolFlag{Name: "history", Usage: "include rows that no longer hold (superseded, retracted, closed, invalidated, archived), marked", Destination: &o.history},
		&ucli.BoolFlag{Name: "explain", Usage: "say why each hit ranked where it did: matched terms and their weights, speaker, day, lifts", Destination: &o.explain},
	}
}

func (o *recallOptions) setArgs(args []string) { o.query = args }

// search is the library's search the options ask for.
func (o recallOptions) search(e env, v *vault.Vault) (recall.RecallOptions, error) {
	agent, err := e.agentOf(v)
	if err != nil {
		return recall.RecallOptions{}, err
	}
	// MEMVAULT_THREAD set by a harness does not clash with --all-threads.
	if o.allThreads && (rowThreadOptions{thread: o.thread}).typed() {
		return recall.RecallOptions{}, usagef("recall: --thread and --all-threads do not go together")
	}
	if o.limit < 1 {
		return recall.RecallOptions{}, usagef("recall: --limit must be 1 or more: a search returns its best hits per tier")
	}
	if err := checkChoice("recall", "tier", o.tier, recall.Tiers); err != nil {
		return recall.RecallOptions{}, err
	}
	query, err := e.textArg(o.query, "recall")
	if err != nil {
		return recall.RecallOptions{}, err
	}
	if err := needText("recall", "a QUERY", "query", o.query, query, `e.g. memvault recall "deploy key" (words to search for; --all-threads searches every thread)`); err != nil {
		return recall.RecallOptions{}, err
	}
	lib := recall.RecallOptions{Query: query, Agent: agent, Thread: o.thread, Session: o.session, AllThreads: o.allThreads,
		Tier: o.tier, Limit: o.limit, History: o.history, Explain: o.explain}
	if o.allThreads {
		lib.Thread = ""
	} else if wd, err := os.Getwd(); err == nil {
		lib.Dir = wd
	}
	now := time.Now()
	if o.since != "" {
		if lib.Since, err = ops.ParseSince(o.since, now); err != nil {
			return lib, err
		}
	}
	if o.until != "" {
		if lib.Until, err = ops.ParseSince(o.until, now); err != nil {
			return lib, err
		}
	}
	return lib, nil
}

func runRecall(_ context.Context, opts recallOptions, e env, v *vault.Vault) error {
	lib, err := opts.search(e, v)
	if err != nil {
		return err
	}
	res, err := recall.Recall(v, lib)
	if err != nil {
		return err
	}
	for _, n := range res.Notes {
		fmt.Fprintf(e.stderr, "memvault: note: %s\n", n)
	}
	if res.DirThread != "" {
		dirThreadNote(e, res.DirThread, optOutRead)
	}
	if res.Excluded > 0 {
		fmt.Fprintf(e.stderr, "memvault: note: %d hits in other threads left out (scope: %s); --all-threads or --thread T includes them\n",
			res.Excluded, scopeText(res.Scope))
	}
	if opts.json {
		return printJSON(e.stdout, res.Hits)
	}
	printHits(e.stdout, res.Hits)
	if len(res.Hits) == 0 {
		fmt.Fprintln(e.stderr, "memvault: nothing found")
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
	if h.Why.Fusion != nil {
		fmt.Fprintf(&b, "score %.4f by rank fusion; text %.3f", h.Score, h.Why.Text)
	} else {
		fmt.Fprintf(&b, "score %.3f = text %.3f", h.Score, h.Why.Text)
	}
	if len(h.Why.Terms) > 0 {
		parts := make([]string, 0, len(h.Why.Terms))
		for _, t := range h.Why.Terms {
			parts = append(parts, fmt.Sprintf("%s:%s %.3f", t.Field, t.Term, t.Score))
		}
		fmt.Fprintf(&b, " (%s)", strings.Join(parts, ", "))
	}
	if h.Why.Asks {
		b.WriteString(", a question: its text counts 0.4")
	}
	switch {
	case h.Why.Neighbour > 0 && h.Why.Named != "":
		fmt.Fprintf(&b, " + next turn of %s after %s %.3f", h.Why.Named, h.Why.NeighbourOf, h.Why.Neighbour)
	case h.Why.Neighbour > 0:
		fmt.Fprintf(&b, " + neighbour of %s %.3f", h.Why.NeighbourOf, h.Why.Neighbour)
	}
	if h.Why.Session > 0 {
		fmt.Fprintf(&b, " + session %.3f", h.Why.Session)
	}
	if h.Why.Held {
		b.WriteString(", held below the hit that lifted it")
	}
	if f := h.Why.Fusion; f != nil {
		fmt.Fprintf(&b, "; fused from %s", strings.Join(f.Rankings, " and "))
		if f.TextRank > 0 {
			fmt.Fprintf(&b, ", text rank %d", f.TextRank)
		}
		if f.VectorRank > 0 {
			fmt.Fprintf(&b, ", vector rank %d (similarity %.3f)", f.VectorRank, f.Similarity)
		}
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
