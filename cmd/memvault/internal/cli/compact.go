package cli

import (
	"context"
	"io"
	"os"
	"strings"

	"github.com/memvault/memvault/vault/fileio"
	"github.com/memvault/memvault/vault/lineage"
	"github.com/memvault/memvault/vault/transcript"

	ucli "github.com/urfave/cli/v2"

	"github.com/memvault/memvault/vault"
)

type compactOptions struct {
	writeOptions        // the session (required), the harness, --force, --json
	file         string // holds the harness's summary; "-" for stdin
	thread       string // "" lets the session's THREAD: lines and rows decide
}

func newCompactCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "compact",
		Usage: "record a compaction as a node, with the harness's summary (--file, stdin, or the transcript's own)",
	}
}

func (o *compactOptions) flags() []ucli.Flag {
	return []ucli.Flag{newRequiredSessionFlag(&o.session), newHarnessFlag(&o.harness), newForceFlag(&o.force), newJSONFlag(&o.json),
		&ucli.StringFlag{Name: "file", Usage: "file holding the compaction summary (- for stdin)", Destination: &o.file},
		&ucli.StringFlag{Name: "thread", Aliases: []string{"t"}, Destination: &o.thread,
			Usage: "thread key kind:slug of the node when no THREAD: line of the session names one (default: the threads of the session's rows)"},
	}
}

// prepareCompact reads the summary given; without one, it asks
// [summarise]'s executor, if there is one, before the lock.
func prepareCompact(ctx context.Context, opts compactOptions, e env, v *vault.Vault) (distillStep, error) {
	if opts.session == "" {
		return nil, usagef("compact: --session is required")
	}
	summary, err := summaryInput(e, opts.file)
	if err != nil {
		return nil, err
	}
	var model *lineage.Model
	if strings.TrimSpace(summary) == "" {
		agent, err := e.agentOf(v)
		if err != nil {
			return nil, err
		}
		t := transcript.Ref{Agent: agent, Session: opts.session}
		if err := t.Check(); err != nil {
			return nil, err
		}
		if model, err = lineage.CompactionModel(ctx, v, t, lineage.ModelOptions{}); err != nil {
			return nil, err
		}
	}
	return func(tx *vault.Tx) (nodesMade, error) {
		t := transcript.Ref{Agent: tx.Agent(), Session: opts.session}
		return one(lineage.Compact(tx, t, lineage.CompactOptions{Summary: summary, Thread: opts.thread, Model: model}))
	}, nil
}

// summaryInput reads file ("-": stdin), or stdin when it is not a terminal.
func summaryInput(e env, f string) (string, error) {
	var r io.Reader
	switch {
	case f == "-":
		r = e.stdin
	case f != "":
		data, err := fileio.ReadInput(f, "compact: --file "+f, vault.MaxTextBytes)
		if err != nil {
			return "", usageIfMissing(err)
		}
		return string(data), nil
	default:
		if file, ok := e.stdin.(*os.File); ok {
			if info, err := file.Stat(); err == nil && info.Mode()&os.ModeCharDevice != 0 {
				return "", nil // a terminal: no summary piped in
			}
		}
		r = e.stdin
	}
	data, err := fileio.ReadBounded(r, "compact: stdin", vault.MaxTextBytes)
	if err != nil {
		return "", err
	}
	return string(data), nil
}
