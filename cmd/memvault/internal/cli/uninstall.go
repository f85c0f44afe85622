package cli

import ucli "github.com/urfave/cli/v2"

func newUninstallCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "uninstall",
		Usage:     "remove memvault's hooks and MCP server from a harness, or git's hooks (the rest of the file is kept byte for byte)",
		ArgsUsage: "HARNESS | git",
		Flags:     installFlags(noMCPFlag("remove")),
	}
}

func runUninstall(c *ucli.Context) error { return install(c, true) }
