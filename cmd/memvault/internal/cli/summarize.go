package cli

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	ucli "github.com/urfave/cli/v2"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/lineage"
	"github.com/memvault/memvault/vault/transcript"
)

type summarizeOptions struct {
	writeOptions        // the session (required), the harness, --force, --json
	thread       string // the node's thread
}

func newSummarizeCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "summarize",
		Usage: "write the session-summary node of a session (an executor's summary with [summarise], else deterministic)",
	}
}

func (o *summarizeOptions) flags() []ucli.Flag {
	return []ucli.Flag{newRequiredSessionFlag(&o.session), newHarnessFlag(&o.harness), newForceFlag(&o.force), newJSONFlag(&o.json), newThreadFlag(&o.thread)}
}

// prepareSummarize asks [summarise]'s executor, if there is one, for the
// session's summary before the lock; the transaction then writes it.
func prepareSummarize(ctx context.Context, opts summarizeOptions, e env, v *vault.Vault) (distillStep, error) {
	if opts.session == "" {
		return nil, usagef("summarize: --session is required")
	}
	agent, err := e.agentOf(v)
	if err != nil {
		return nil, err
	}
	t := transcript.Ref{Agent: agent, Session: opts.session}
	if err := t.Check(); err != nil {
		return nil, err
	}
	model, err := lineage.SessionModel(ctx, v, t, lineage.ModelOptions{})
	if err != nil {
		return nil, err
	}
	return func(tx *vault.Tx) (nodesMade, error) {
		t := transcript.Ref{Agent: tx.Agent(), Session: opts.session}
		return one(lineage.Summarize(tx, t, lineage.SummaryOptions{Thread: opts.thread, Model: model}))
	}, nil
}

// distillStep is a distillation's work in its transaction.
type distillStep func(tx *vault.Tx) (nodesMade, error)

// distillModel declares a distillation command whose summaries an
// executor may write ([summarise], docs/EXECUTORS.md): prepare asks it
// before the vault lock is taken (an interrupt stops the executor's
// process group and the command, which then writes nothing), and the
// step it returns runs in one transaction. A node whose summary fell
// back to the deterministic one is said on stderr.
func distillModel[O any, P writerOf[O]](prepare func(ctx context.Context, opts O, e env, v *vault.Vault) (distillStep, error)) action {
	return inTxPrepared[O, P](func(ctx context.Context, opts O, e env, v *vault.Vault) (txWork, error) {
		ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
		step, err := prepare(ctx, opts, e, v)
		if err == nil && ctx.Err() != nil {
			err = fmt.Errorf("%s: interrupted", e.name)
		}
		stop()
		if err != nil {
			return txWork{}, err
		}
		var made nodesMade
		apply := func(tx *vault.Tx) error {
			var err error
			made, err = step(tx)
			return err
		}
		report := func(*vault.Result) error {
			for i, n := range made.nodes {
				if made.fresh[i] && n.SummaryFallback != "" {
					fmt.Fprintf(e.stderr, "memvault: node %s: deterministic summary: %s\n", n.ID, n.SummaryFallback)
				}
			}
			return made.print(e.stdout, P(&opts).write().json)
		}
		return txWork{apply: apply, report: report}, nil
	})
}
