package cli

import (
	"context"

	ucli "github.com/urfave/cli/v2"
)

// uninstallOptions are install's, without --yes.
type uninstallOptions struct{ installOptions }

func newUninstallCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "uninstall",
		Usage:     "remove memvault's hooks and MCP server from a harness, or git's hooks (the rest of the file is kept byte for byte)",
		ArgsUsage: "HARNESS | git",
	}
}

func (o *uninstallOptions) flags() []ucli.Flag {
	return o.installFlags(newNoMCPFlag("remove", &o.noMCP))
}

func runUninstall(_ context.Context, opts uninstallOptions, e env) error {
	o := opts.installOptions
	o.remove = true
	return install(e, o)
}
