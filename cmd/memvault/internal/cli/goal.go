package cli

import (
	"context"

	"github.com/memvault/memvault/vault/continuity"
	ucli "github.com/urfave/cli/v2"
)

type goalOptions struct {
	protocolOptions
	rowThreadOptions
	phase string
	text  []string // the words of the goal, or "-" for stdin
}

func newGoalCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "goal",
		Usage:     "set the active goal of CONTINUITY.md (and/or the phase)",
		ArgsUsage: "TEXT",
	}
}

func (o *goalOptions) flags() []ucli.Flag {
	return o.writeFlags(&ucli.StringFlag{Name: "phase", Usage: "the phase of the work", Destination: &o.phase},
		newRowThreadFlag(&o.thread), newGlobalFlag(&o.global), newNowFlag(&o.now))
}

func (o *goalOptions) setArgs(args []string) { o.text = args }

func runGoal(_ context.Context, opts goalOptions, e env, ct *continuity.ContinuityTx) error {
	text, err := e.textArg(opts.text, "goal")
	if err != nil {
		return err
	}
	if err := checkChoice("goal", "phase", opts.phase, continuity.Phases); err != nil {
		return err
	}
	return ct.Goal(text, opts.phase)
}
