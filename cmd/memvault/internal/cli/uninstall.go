package cli

import ucli "github.com/urfave/cli/v2"

func newUninstallCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "uninstall",
		Usage:     "remove memvault's hooks from a harness, or git's (others are kept)",
		ArgsUsage: "HARNESS | git",
		Flags:     append([]ucli.Flag{scopeFlag, &ucli.BoolFlag{Name: "dry-run", Usage: "show what would change"}}, gitFlags...),
	}
}

func runUninstall(c *ucli.Context) error { return install(c, true) }
