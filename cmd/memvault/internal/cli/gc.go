package cli

import (
	"fmt"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/memvault/memvault/vault"
)

func gcCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "gc",
		Usage: "pack the vault's git objects and prune unreachable ones, under the vault lock",
		Flags: []ucli.Flag{
			&ucli.StringFlag{Name: "engine", Value: vault.GCEngineAuto, Usage: "auto (git where installed, else go-git), git (runs git gc) or go-git (in-process)"},
			&ucli.DurationFlag{Name: "expire", Value: vault.DefaultGCExpire, Usage: "prune unreachable loose objects older than this; 0 prunes them all"},
			jsonFlag,
		},
		Action: readAction(func(c *ucli.Context, v *vault.Vault) error {
			expire := c.Duration("expire")
			if expire < 0 {
				return usagef("gc: --expire %s: want a duration ≥ 0", expire)
			}
			if expire == 0 {
				expire = -1 // the library's "any age"
			}
			rep, err := v.GC(vault.GCOptions{Engine: c.String("engine"), Expire: expire})
			if err != nil {
				return err
			}
			if c.Bool("json") {
				return printJSON(c.App.Writer, rep)
			}
			w := c.App.Writer
			fmt.Fprintf(w, ".git: %s → %s (content %s: %s → %s), %s with %s\n",
				vault.FormatBytes(rep.Before.GitBytes), vault.FormatBytes(rep.After.GitBytes), vault.FormatBytes(rep.ContentBytes),
				gcRatio(rep.Before.GitBytes, rep.ContentBytes), gcRatio(rep.After.GitBytes, rep.ContentBytes),
				rep.Duration.Round(time.Millisecond), rep.Engine)
			fmt.Fprintf(w, "objects: %d loose in %s before, %d after; %d packs before, %d after\n",
				rep.Before.LooseObjects, vault.FormatBytes(rep.Before.LooseBytes), rep.After.LooseObjects, rep.Before.Packs, rep.After.Packs)
			if rep.Engine == vault.GCEngineGoGit {
				fmt.Fprintf(w, "packed %d reachable objects; removed %d packed loose objects and %d old packs; pruned %d unreachable; kept %d packs\n",
					rep.Packed, rep.RemovedLoose, rep.RemovedPacks, rep.Pruned, rep.KeptPacks)
			}
			return nil
		}),
	}
}

// gcRatio prints a as a multiple of b.
func gcRatio(a, b int64) string {
	if b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f×", float64(a)/float64(b))
}
