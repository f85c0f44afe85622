package cli

import (
	"fmt"
	"os"
	"path/filepath"

	ucli "github.com/urfave/cli/v2"

	"github.com/memvault/memvault/vault"
)

type initOptions struct {
	dir   string // the vault folder: --vault, else .memory/ here
	adopt bool   // make a vault of a git repository with history
}

func newInitCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "init",
		Usage:     "create a vault (.memory/ here, or --vault DIR); safe to run again",
		ArgsUsage: " ",
		Flags: []ucli.Flag{
			&ucli.BoolFlag{Name: "adopt", Usage: "make a vault of a git repository that already has history (kept)"},
		},
	}
}

func runInit(c *ucli.Context) error {
	if c.NArg() > 0 {
		return usagef("init: takes no arguments; use --vault DIR to choose the folder")
	}
	opts := initOptions{dir: c.String("vault"), adopt: c.Bool("adopt")}
	if opts.dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return err
		}
		opts.dir = filepath.Join(wd, vault.DirName)
	}
	v, created, registered, err := initVault(opts)
	if err != nil {
		return err
	}
	if created {
		fmt.Fprintf(c.App.Writer, "initialised vault at %s\n", v.Root)
	} else {
		fmt.Fprintf(c.App.Writer, "vault already initialised at %s\n", v.Root)
		if registered {
			fmt.Fprintf(c.App.Writer, "registered the merge driver in .git/config\n")
		}
	}
	return nil
}

// initVault creates (or completes) the vault opts names and registers the
// merge driver, which lives in .git/config and so is not copied by a
// clone: init registers it in a new vault and in a clone alike.
func initVault(opts initOptions) (v *vault.Vault, created, registered bool, err error) {
	v, created, err = vault.InitWith(opts.dir, vault.InitOptions{Adopt: opts.adopt})
	if err != nil {
		return nil, false, false, err
	}
	bin, err := selfPath()
	if err != nil {
		return nil, false, false, fmt.Errorf("init: %w", err)
	}
	registered, err = vault.RegisterMergeDrivers(v.Root, bin)
	return v, created, registered, err
}
