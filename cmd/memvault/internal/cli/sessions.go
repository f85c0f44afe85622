package cli

import (
	"context"
	"fmt"

	ucli "github.com/urfave/cli/v2"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/transcript"
)

type sessionsOptions struct {
	limitOptions // the first N; 0 for all
	json         bool
}

func newSessionsCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "sessions",
		Usage: "list stored transcripts, by agent and session",
	}
}

func (o *sessionsOptions) flags() []ucli.Flag {
	return []ucli.Flag{o.limitFlag("sessions, the first by agent and session", 0), newJSONFlag(&o.json)}
}

func runSessions(_ context.Context, opts sessionsOptions, e env, v *vault.Vault) error {
	limit, err := opts.listLimit(e, opts.json)
	if err != nil {
		return err
	}
	all, err := transcript.Sessions(v.Files())
	if err != nil {
		return err
	}
	list := first(all, limit)
	limitNote(e, opts.json, len(list), len(all), "sessions", "first")
	emptyNote(e, opts.json, len(all), "no sessions yet: a harness's hooks record each session (memvault install HARNESS), or memvault transcript import")
	if opts.json {
		if list == nil {
			list = []transcript.SessionInfo{}
		}
		return printJSON(e.stdout, list)
	}
	for _, s := range list {
		fmt.Fprintf(e.stdout, "%-16s %-40s %6d messages  %d parts  %s\n", s.Agent, s.Session, s.Messages, s.Parts, s.Path)
	}
	return nil
}
