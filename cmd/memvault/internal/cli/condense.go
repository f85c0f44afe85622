package cli

import (
	"context"
	"time"

	"github.com/memvault/memvault/vault/lineage"
	ucli "github.com/urfave/cli/v2"

	"github.com/memvault/memvault/vault"
)

func newCondenseCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "condense",
		Usage: "write condensed nodes over session summaries and compaction nodes, per day or week",
		Flags: []ucli.Flag{harnessFlag, forceFlag, jsonFlag, threadFlag,
			&ucli.StringFlag{Name: "period", Value: vault.CondensePeriods[0], Usage: "the span of time each condensed node covers"},
			&ucli.BoolFlag{Name: "current", Usage: "also condense the period still under way"},
		},
	}
}

// prepareCondense asks [summarise]'s executor, if there is one, for the
// summary of each condensed node before the lock; the library's options
// are the command's options.
func prepareCondense(c *ucli.Context, v *vault.Vault, ctx context.Context) (distillStep, error) {
	if err := checkChoice("condense", "period", c.String("period"), vault.CondensePeriods); err != nil {
		return nil, err
	}
	opts := lineage.CondenseOptions{Period: c.String("period"), Thread: c.String("thread"), Current: c.Bool("current")}
	agent, err := agentOf(c, v)
	if err != nil {
		return nil, err
	}
	if opts.Models, err = lineage.CondenseModels(ctx, v, agent, opts, time.Now(), lineage.ModelOptions{}); err != nil {
		return nil, err
	}
	return func(tx *vault.Tx) (nodesMade, error) {
		nodes, err := lineage.Condense(tx, opts)
		fresh := make([]bool, len(nodes))
		for i := range fresh {
			fresh[i] = true
		}
		return nodesMade{nodes: nodes, fresh: fresh}, err
	}, nil
}
