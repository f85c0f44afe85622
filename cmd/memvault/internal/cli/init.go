package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	ucli "github.com/urfave/cli/v2"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/gitrepo"
)

type initOptions struct {
	adopt       bool // make a vault of a git repository with history
	noGitignore bool // leave the project's .gitignore alone
	json        bool
}

// initVaultOptions say how initVault creates a vault.
type initVaultOptions struct {
	dir   string // the vault folder: --vault, else .memory/ here
	adopt bool   // make a vault of a git repository with history
	// noGitignore leaves the project's .gitignore alone (--no-gitignore).
	noGitignore bool
	// out is where init says what it did to the project's .gitignore;
	// nil says nothing.
	out io.Writer
	// asUser runs a write to the person's own files under their umask (a
	// new .gitignore is theirs, not the vault's); nil: memvault's own.
	asUser func(func() error) error
}

// initOptionsFor is what a command that creates a vault as a side effect
// (install) passes to initVault: the project's .gitignore handled as
// init's, said on the command's output.
func initOptionsFor(e env, dir string) initVaultOptions {
	return initVaultOptions{dir: dir, out: e.stdout, asUser: e.asUser}
}

func newInitCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "init",
		Usage:     "create a vault (.memory/ here, or --vault DIR); safe to run again",
		ArgsUsage: " ",
	}
}

func (o *initOptions) flags() []ucli.Flag {
	return []ucli.Flag{
		&ucli.BoolFlag{Name: "adopt", Usage: "make a vault of a git repository that already has history (kept)", Destination: &o.adopt},
		&ucli.BoolFlag{Name: "no-gitignore", Usage: "leave the project's .gitignore alone (by default a vault inside the project's git work tree is added to it)", Destination: &o.noGitignore},
		newJSONFlag(&o.json),
	}
}

func runInit(_ context.Context, opts initOptions, e env) error {
	vo := initOptionsFor(e, e.vaultDir)
	vo.adopt, vo.noGitignore = opts.adopt, opts.noGitignore
	if opts.json {
		vo.out = e.stderr // what it did to .gitignore: stdout is the JSON's
	}
	if vo.dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return err
		}
		vo.dir = filepath.Join(wd, vault.DirName)
	}
	v, created, registered, err := initVault(vo)
	if err != nil {
		return err
	}
	if opts.json {
		return printJSON(e.stdout, initReport{Vault: v.Root, Created: created, MergeDriverRegistered: registered})
	}
	if created {
		fmt.Fprintf(e.stdout, "initialised vault at %s\n", v.Root)
	} else {
		fmt.Fprintf(e.stdout, "vault already initialised at %s\n", v.Root)
		if registered {
			fmt.Fprintf(e.stdout, "registered the merge driver in .git/config\n")
		}
	}
	return nil
}

// initReport is `memvault init --json`.
type initReport struct {
	Vault                 string `json:"vault"`                   // the vault's folder
	Created               bool   `json:"created"`                 // false: it was there already
	MergeDriverRegistered bool   `json:"merge_driver_registered"` // this run registered it (a fresh clone)
}

// initVault creates (or completes) the vault opts names and registers the
// merge driver, which lives in .git/config and so is not copied by a
// clone: init registers it in a new vault and in a clone alike. A vault
// inside the git work tree of the project it is made in is then ignored
// by that project's repository (ignoreVault).
func initVault(opts initVaultOptions) (v *vault.Vault, created, registered bool, err error) {
	v, created, err = vault.InitWith(opts.dir, vault.InitOptions{Adopt: opts.adopt, Policy: true})
	if err != nil {
		return nil, false, false, err
	}
	bin, err := selfPath()
	if err != nil {
		return nil, false, false, fmt.Errorf("init: %w", err)
	}
	if registered, err = gitrepo.RegisterMergeDrivers(v.Root, bin); err != nil {
		return v, created, registered, err
	}
	if !opts.noGitignore {
		wd, err := os.Getwd()
		if err != nil {
			return v, created, registered, err
		}
		note, err := ignoreVault(wd, v.Root, opts.asUser)
		if err != nil {
			return v, created, registered, fmt.Errorf("init: the project's .gitignore: %w", err)
		}
		if note != "" && opts.out != nil {
			fmt.Fprintln(opts.out, note)
		}
	}
	return v, created, registered, nil
}
