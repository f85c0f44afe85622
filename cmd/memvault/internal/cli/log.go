package cli

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	ucli "github.com/urfave/cli/v2"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/gitrepo"
)

type logOptions struct {
	limitOptions        // 0 for all
	thread       string // "" for every commit
	json         bool
}

func newLogCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "log",
		Usage: "show the vault's lineage of commits, newest first",
	}
}

func (o *logOptions) flags() []ucli.Flag {
	return []ucli.Flag{
		&ucli.StringFlag{Name: "thread", Aliases: []string{"t"}, Usage: "only commits that touch this thread", Destination: &o.thread},
		o.limitFlag("commits, the newest", 20),
		newJSONFlag(&o.json),
	}
}

func runLog(_ context.Context, opts logOptions, e env, v *vault.Vault) error {
	limit, err := opts.listLimit(e, opts.json)
	if err != nil {
		return err
	}
	thread := ""
	if opts.thread != "" {
		th, err := vault.ParseThread(opts.thread)
		if err != nil {
			return err
		}
		thread = th.String()
	}
	commits := []gitrepo.CommitInfo{}
	err = v.Log(func(ci gitrepo.CommitInfo) bool {
		if thread != "" && !slices.Contains(ci.Trailers["Memvault-Thread"], thread) {
			return true
		}
		commits = append(commits, ci)
		return limit == 0 || len(commits) < limit
	})
	if err != nil {
		return err
	}
	if opts.json {
		return printJSON(e.stdout, commits)
	}
	for _, ci := range commits {
		printCommit(e.stdout, ci)
	}
	return nil
}

func printCommit(w io.Writer, ci gitrepo.CommitInfo) {
	var who []string
	if a := ci.Trailers["Memvault-Agent"]; len(a) > 0 {
		who = append(who, "agent "+a[0])
	}
	if s := ci.Trailers["Memvault-Session"]; len(s) > 0 {
		who = append(who, "session "+s[0])
	}
	line := fmt.Sprintf("%s %s %s", vault.ShortHash(ci.Hash), ci.Time.Local().Format("2006-01-02 15:04"), ci.Subject)
	if len(who) > 0 {
		line += "  (" + strings.Join(who, ", ") + ")"
	}
	fmt.Fprintln(w, line)
}
