package cli

import (
	"context"
	"fmt"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/memvault/memvault/vault/gc"
	"github.com/memvault/memvault/vault/units"
)

type gcOptions struct {
	engine string
	expire time.Duration // prune unreachable loose objects older; 0 for any age
	json   bool
}

func newGCCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "gc",
		Usage: "pack the vault's git objects and prune unreachable ones, under the vault lock",
	}
}

func (o *gcOptions) flags() []ucli.Flag {
	return []ucli.Flag{
		&ucli.StringFlag{Name: "engine", Value: gc.EngineAuto, Usage: "auto (git where installed, else go-git), git (runs git gc) or go-git (in-process)", Destination: &o.engine},
		&ucli.DurationFlag{Name: "expire", Value: gc.DefaultExpire, Usage: "prune unreachable loose objects older than this; 0 prunes them all", Destination: &o.expire},
		newJSONFlag(&o.json),
	}
}

// runGC manages its own writes: gc.Run takes the vault lock itself and
// repacks git's objects; it makes no commit.
func runGC(_ context.Context, opts gcOptions, e env) error {
	v, err := e.openVault()
	if err != nil {
		return err
	}
	lib := gc.Options{Engine: opts.engine, Expire: opts.expire}
	if lib.Expire < 0 {
		return usagef("gc: --expire %s: want a duration ≥ 0", lib.Expire)
	}
	if lib.Expire == 0 {
		lib.Expire = -1 // the library's "any age"
	}
	stop := startProgress(e, v, opts.json)
	defer stop()
	rep, err := gc.Run(v, lib)
	stop()
	if err != nil {
		return err
	}
	if opts.json {
		return printJSON(e.stdout, rep)
	}
	w := e.stdout
	// Disk first, as du counts it, since that is what a person compares
	// with; the data (the files' sizes) beside it, which the ratio to the
	// vault's own files uses.
	fmt.Fprintf(w, ".git: %s → %s on disk (du -s), %s → %s of data (content %s: %s → %s), %s with %s\n",
		units.Bytes(rep.Before.DiskBytes), units.Bytes(rep.After.DiskBytes),
		units.Bytes(rep.Before.GitBytes), units.Bytes(rep.After.GitBytes), units.Bytes(rep.ContentBytes),
		gcRatio(rep.Before.GitBytes, rep.ContentBytes), gcRatio(rep.After.GitBytes, rep.ContentBytes),
		rep.Duration.Round(time.Millisecond), rep.Engine)
	fmt.Fprintf(w, "objects: %d loose in %s on disk (%s of data) before, %d after; %d packs before, %d after\n",
		rep.Before.LooseObjects, units.Bytes(rep.Before.LooseDisk), units.Bytes(rep.Before.LooseBytes),
		rep.After.LooseObjects, rep.Before.Packs, rep.After.Packs)
	if rep.Engine == gc.EngineGoGit {
		fmt.Fprintf(w, "packed %d reachable objects; removed %d packed loose objects and %d old packs; pruned %d unreachable; kept %d packs\n",
			rep.Packed, rep.RemovedLoose, rep.RemovedPacks, rep.Pruned, rep.KeptPacks)
	}
	return nil
}

// gcRatio prints a as a multiple of b.
func gcRatio(a, b int64) string {
	if b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f×", float64(a)/float64(b))
}
