package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/clones"

	ucli "github.com/urfave/cli/v2"
)

type syncOptions struct {
	noPush, dryRun bool
	engine         string
	timeout        time.Duration // of a fetch or a push
	json           bool
	args           []string // REMOTE
}

func newSyncCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "sync",
		Usage:     "fetch a remote's vault, merge it with the merge drivers, verify, re-render the heads, push",
		ArgsUsage: "[REMOTE]",
		Description: "REMOTE is a configured remote, a URL or a path; without it, the branch's upstream remote,\n" +
			"else origin. The remote's branch of the same name is fetched and merged (a fast-forward\n" +
			"when possible), the ledger's open tips are joined, the heads re-rendered, and the result\n" +
			"pushed. A push the remote rejects because it moved meanwhile is retried twice.",
	}
}

func (o *syncOptions) flags() []ucli.Flag {
	return []ucli.Flag{
		&ucli.BoolFlag{Name: "no-push", Usage: "fetch and merge only", Destination: &o.noPush},
		&ucli.BoolFlag{Name: "dry-run", Usage: "fetch, then say what would be merged and pushed; change nothing", Destination: &o.dryRun},
		&ucli.StringFlag{Name: "engine", Value: clones.SyncEngineAuto, Usage: "auto (git where installed, else go-git), git or go-git", Destination: &o.engine},
		&ucli.DurationFlag{Name: "timeout", Value: clones.DefaultSyncTimeout, Usage: "the longest a fetch or a push may take", Destination: &o.timeout},
		newJSONFlag(&o.json),
	}
}

func (o *syncOptions) setArgs(args []string) { o.args = args }

// runSync manages its own writes: clones.Sync takes the vault lock for the
// merge, and the join and the render take it again for their commits.
func runSync(_ context.Context, opts syncOptions, e env) error {
	v, err := e.openVault()
	if err != nil {
		return err
	}
	if len(opts.args) > 1 {
		return usagef("sync: takes one remote at most")
	}
	agent, err := e.agentOf(v)
	if err != nil {
		return err
	}
	lib := clones.SyncOptions{Remote: firstArg(opts.args), Engine: opts.engine,
		NoPush: opts.noPush, DryRun: opts.dryRun, Timeout: opts.timeout, Agent: agent}
	if lib.Timeout <= 0 {
		return usagef("sync: --timeout %s: want a duration above 0", lib.Timeout)
	}
	stop := startProgress(e, v, opts.json)
	defer stop()
	rep, err := clones.Sync(v, lib)
	stop()
	if err != nil {
		return err
	}
	for _, w := range rep.Warnings {
		fmt.Fprintf(e.stderr, "memvault: warning: %s\n", w)
	}
	if opts.json {
		return printJSON(e.stdout, rep)
	}
	printSync(e.stdout, rep)
	return nil
}

// printSync prints one line per step that did something.
func printSync(w io.Writer, rep *clones.SyncReport) {
	would := ""
	if rep.DryRun {
		would = "would be "
	}
	rm := rep.Remote.String()
	if rep.Fetched > 0 {
		fmt.Fprintf(w, "fetched %s from %s\n", plural(rep.Fetched, "commit"), rm)
	}
	switch rep.Merge {
	case "fast-forward":
		fmt.Fprintf(w, "%sfast-forwarded to %s's %s%s\n", would, rm, rep.Branch, files(rep.Files))
	case "merged":
		fmt.Fprintf(w, "%smerged %s's %s%s\n", would, rm, rep.Branch, files(rep.Files))
	}
	if rep.Joined != "" {
		fmt.Fprintf(w, "joined the ledger's open tips: commit %s\n", vault.ShortHash(rep.Joined))
	}
	if len(rep.Rendered) > 0 {
		fmt.Fprintf(w, "rendered %s: %s\n", plural(len(rep.Rendered), "head"), strings.Join(rep.Rendered, ", "))
	}
	if rep.Reindexed {
		fmt.Fprintln(w, "rebuilt the search index: the merge changed what it is built from")
	}
	if rep.Pushed > 0 {
		verb := "pushed"
		if rep.DryRun {
			verb = "would push"
		}
		fmt.Fprintf(w, "%s %s to %s\n", verb, plural(rep.Pushed, "commit"), rm)
	}
	if rep.Fetched == 0 && rep.Pushed == 0 && rep.Joined == "" && len(rep.Rendered) == 0 &&
		(rep.Merge == "up-to-date" || rep.Merge == "none") {
		fmt.Fprintf(w, "up to date with %s\n", rm)
	}
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// files says how many files a merge changed.
func files(paths []string) string {
	if len(paths) == 0 {
		return ""
	}
	return " (" + plural(len(paths), "file") + ")"
}
