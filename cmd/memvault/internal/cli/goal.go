package cli

import (
	"github.com/memvault/memvault/vault/continuity"
	ucli "github.com/urfave/cli/v2"
)

func newGoalCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "goal",
		Usage:     "set the active goal of CONTINUITY.md (and/or the phase)",
		ArgsUsage: "TEXT",
		Flags:     writeFlags(&ucli.StringFlag{Name: "phase", Usage: "the phase of the work"}, rowThreadFlag, globalFlag, nowFlag),
	}
}

func runGoal(c *ucli.Context, ct *continuity.ContinuityTx) error {
	text, err := textArg(c, "goal")
	if err != nil {
		return err
	}
	if err := checkChoice("goal", "phase", c.String("phase"), continuity.Phases); err != nil {
		return err
	}
	return ct.Goal(text, c.String("phase"))
}
