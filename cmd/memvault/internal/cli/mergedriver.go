package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/memvault/memvault/vault/clones"
	"github.com/memvault/memvault/vault/fileio"

	ucli "github.com/urfave/cli/v2"
)

type mergeDriverOptions struct {
	args []string // KIND BASE OURS THEIRS PATH, as git passes them
}

func newMergeDriverCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "merge-driver",
		Usage:     "git's merge driver for the vault's files (registered by init and install git)",
		ArgsUsage: "KIND BASE OURS THEIRS PATH",
		// Git runs it; people do not.
		Hidden: true,
	}
}

func (o *mergeDriverOptions) flags() []ucli.Flag { return nil }

func (o *mergeDriverOptions) setArgs(args []string) { o.args = args }

// runMergeDriver is what git runs for a file both sides of a merge
// changed: it merges the three versions into OURS, where git takes the
// result from. It opens no vault and takes no lock: git holds the
// repository while it merges, and the files are git's temporary copies.
// Exit 0 is clean, 1 a conflict (OURS then holds the text to resolve), 2
// a usage mistake; any other failure leaves OURS untouched and exits as
// its class says. Git takes every non-zero status for a conflict.
func runMergeDriver(_ context.Context, opts mergeDriverOptions, e env) error {
	if len(opts.args) != 5 {
		return usagef("merge-driver: want KIND BASE OURS THEIRS PATH, as git passes them (auto %%O %%A %%B %%P)")
	}
	kind, base, ours, theirs, path := clones.MergeKind(opts.args[0]), opts.args[1], opts.args[2], opts.args[3], opts.args[4]
	if kind == "auto" {
		kind = clones.MergeKindOf(filepath.ToSlash(path))
	} else if !slices.Contains(clones.MergeKinds(), kind) {
		var names []string
		for _, k := range clones.MergeKinds() {
			names = append(names, string(k))
		}
		return usagef("merge-driver: kind %q: want auto or one of %s", kind, strings.Join(names, ", "))
	}
	wd, err := os.Getwd()
	if err != nil {
		return fmt.Errorf("merge-driver: %w", err)
	}
	versions, err := clones.ReadMergeVersions(wd, filepath.ToSlash(path), [3]string{base, ours, theirs})
	if err != nil {
		return fmt.Errorf("merge-driver: %w", err)
	}
	merged, conflict, err := clones.MergeAs(kind, filepath.ToSlash(path), versions[0], versions[1], versions[2])
	if err != nil {
		return fmt.Errorf("merge-driver: %s: %w", path, err)
	}
	if err := fileio.WriteKeepMode(ours, merged, fileio.FilePerm); err != nil {
		return fmt.Errorf("merge-driver: write %s: %w", ours, err)
	}
	if conflict {
		fmt.Fprintf(e.stderr, "memvault: %s: conflict (%s merge); resolve it, then git add it\n", path, kind)
		return &silentError{code: 1}
	}
	return nil
}

// selfPath is the absolute path of the running binary, which the hooks and
// the merge driver git runs call back.
func selfPath() (string, error) {
	bin, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("where is memvault? %w", err)
	}
	if resolved, err := filepath.EvalSymlinks(bin); err == nil {
		bin = resolved
	}
	return bin, nil
}
