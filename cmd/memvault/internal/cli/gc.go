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
	fmt.Fprintln(w, gcDone(rep))
	fmt.Fprintln(w, gcHistory(rep))
	if rep.Engine == gc.EngineGoGit {
		fmt.Fprintf(w, "packed %d reachable objects; removed %d packed loose objects and %d old packs; pruned %d unreachable; kept %d packs\n",
			rep.Packed, rep.RemovedLoose, rep.RemovedPacks, rep.Pruned, rep.KeptPacks)
	}
	return nil
}

// gcDone is gc's first line: whether it did anything, in words, and .git's
// size on disk as du counts it (what a person compares with), before and
// after.
func gcDone(rep *gc.Report) string {
	b, a := rep.Before, rep.After
	took := fmt.Sprintf("%s with %s", rep.Duration.Round(time.Millisecond), rep.Engine)
	disk := fmt.Sprintf(".git takes %s on disk (du -s)", units.Bytes(a.DiskBytes))
	if b.LooseObjects == a.LooseObjects && b.Packs == a.Packs && b.Packs <= 1 && rep.Pruned == 0 {
		what := fmt.Sprintf("already packed (%s, %s)", plural(b.Packs, "pack"), plural(b.LooseObjects, "loose object"))
		if b.LooseObjects > 0 {
			what = fmt.Sprintf("nothing to pack (%s, %s left: unreachable, younger than --expire)", plural(b.Packs, "pack"), plural(b.LooseObjects, "loose object"))
		}
		return fmt.Sprintf("gc: %s; nothing changed; %s; %s", what, disk, took)
	}
	// The loose objects that went were packed, but for those the go-git
	// engine counts as pruned (git's own gc does not say).
	from := plural(max(b.LooseObjects-a.LooseObjects-rep.Pruned, 0), "loose object")
	if b.Packs > 0 {
		from += " and " + plural(b.Packs, "pack")
	}
	left := ""
	if rep.Pruned > 0 {
		left = fmt.Sprintf(", pruned %d unreachable", rep.Pruned)
	}
	if a.LooseObjects > 0 {
		left += fmt.Sprintf(", %s left (unreachable, younger than --expire)", plural(a.LooseObjects, "loose object"))
	}
	return fmt.Sprintf("gc: packed %s into %s%s; %s, was %s; %s", from, plural(a.Packs, "pack"), left, disk, units.Bytes(b.DiskBytes), took)
}

// gcHistory is gc's second line: what git stores for the vault's history,
// next to the size of the vault's own files (the derived folders and .git
// left out), and that as a multiple, before and after.
func gcHistory(rep *gc.Report) string {
	line := fmt.Sprintf("history: .git holds %s of data for the vault's %s of files", units.Bytes(rep.After.GitBytes), units.Bytes(rep.ContentBytes))
	if rep.ContentBytes == 0 {
		return line
	}
	now, was := gcRatio(rep.After.GitBytes, rep.ContentBytes), gcRatio(rep.Before.GitBytes, rep.ContentBytes)
	if now == was {
		return fmt.Sprintf("%s, %s their size (unchanged)", line, now)
	}
	return fmt.Sprintf("%s, %s their size (was %s, %s)", line, now, units.Bytes(rep.Before.GitBytes), was)
}

// gcRatio prints a as a multiple of b.
func gcRatio(a, b int64) string {
	if b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f×", float64(a)/float64(b))
}
