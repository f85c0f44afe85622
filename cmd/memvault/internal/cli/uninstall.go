package cli

import ucli "github.com/urfave/cli/v2"

func newUninstallCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "uninstall",
		Usage:     "remove memvault's hooks from a harness, or git's (the rest of the file is kept byte for byte)",
		ArgsUsage: "HARNESS | git",
		Flags:     installFlags(),
	}
}

func runUninstall(c *ucli.Context) error { return install(c, true) }
