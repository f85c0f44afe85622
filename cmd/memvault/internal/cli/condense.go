package cli

import (
	"context"
	"time"

	"github.com/memvault/memvault/vault/lineage"
	ucli "github.com/urfave/cli/v2"

	"github.com/memvault/memvault/vault"
)

type condenseOptions struct {
	writeOptions   // the harness, --force, --json
	thread, period string
	current        bool // also the period still under way
}

func newCondenseCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "condense",
		Usage: "write condensed nodes over session summaries and compaction nodes, per day or week",
	}
}

func (o *condenseOptions) flags() []ucli.Flag {
	return []ucli.Flag{newHarnessFlag(&o.harness), newForceFlag(&o.force), newJSONFlag(&o.json), newThreadFlag(&o.thread),
		&ucli.StringFlag{Name: "period", Value: vault.CondensePeriods[0], Usage: "the span of time each condensed node covers", Destination: &o.period},
		&ucli.BoolFlag{Name: "current", Usage: "also condense the period still under way", Destination: &o.current},
	}
}

// prepareCondense asks [summarise]'s executor, if there is one, for the
// summary of each condensed node before the lock; the library's options
// are the command's options.
func prepareCondense(ctx context.Context, opts condenseOptions, e env, v *vault.Vault) (distillStep, error) {
	if err := checkChoice("condense", "period", opts.period, vault.CondensePeriods); err != nil {
		return nil, err
	}
	lib := lineage.CondenseOptions{Period: opts.period, Thread: opts.thread, Current: opts.current}
	agent, err := e.agentOf(v)
	if err != nil {
		return nil, err
	}
	if lib.Models, err = lineage.CondenseModels(ctx, v, agent, lib, time.Now(), lineage.ModelOptions{}); err != nil {
		return nil, err
	}
	return func(tx *vault.Tx) (nodesMade, error) {
		nodes, err := lineage.Condense(tx, lib)
		fresh := make([]bool, len(nodes))
		for i := range fresh {
			fresh[i] = true
		}
		return nodesMade{nodes: nodes, fresh: fresh}, err
	}, nil
}
