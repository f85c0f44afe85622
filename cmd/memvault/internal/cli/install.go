package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	ucli "github.com/urfave/cli/v2"

	"github.com/memvault/memvault/hooks"
	"github.com/memvault/memvault/merge"
	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/clones"
	"github.com/memvault/memvault/vault/fault"
	"github.com/memvault/memvault/vault/fileio"
	"github.com/memvault/memvault/vault/gitrepo"
	"github.com/memvault/memvault/vault/scope"
)

// newScopeFlag is install's, uninstall's and doctor's --scope, bound to p.
func newScopeFlag(p *string) *ucli.StringFlag {
	return &ucli.StringFlag{Name: "scope", Value: "project", Usage: "project (the repository around here) or user (your home)", Destination: p}
}

// installer builds the installer for the harness named in the arguments.
func installer(opts installOptions, verb string) (*hooks.Installer, error) {
	targets := append(hooks.Names(), "git")
	if len(opts.args) != 1 {
		return nil, usagef("%s: want one harness, or git: %s", verb, strings.Join(targets, ", "))
	}
	name := opts.args[0]
	if _, ok := hooks.Lookup(name); !ok {
		mean := ""
		if near := nearest(name, targets); near != "" {
			mean = fmt.Sprintf("did you mean %s? ", near)
		}
		return nil, usagef("%s: unknown harness %q: %swant one of %s", verb, name, mean, strings.Join(targets, ", "))
	}
	return newInstaller(opts.scope, name)
}

func newInstaller(scopeName, name string) (*hooks.Installer, error) {
	where := hooks.Scope(scopeName)
	if where != hooks.ScopeProject && where != hooks.ScopeUser {
		return nil, usagef("--scope %q: want project or user", where)
	}
	wd, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	home, err := os.UserHomeDir()
	if err != nil && where == hooks.ScopeUser {
		return nil, fmt.Errorf("install: no home folder: %w", err)
	}
	bin, err := selfPath()
	if err != nil {
		return nil, fmt.Errorf("install: %w", err)
	}
	return &hooks.Installer{Harness: name, Scope: where, Project: scope.ProjectRoot(wd), Home: home, Bin: bin, Env: os.Getenv}, nil
}

// newNoMCPFlag leaves the harness's MCP servers alone (docs/MCP.md,
// "Harnesses"): install registers nothing, uninstall removes nothing.
func newNoMCPFlag(what string, p *bool) ucli.Flag {
	return &ucli.BoolFlag{Name: "no-mcp", Usage: "leave the harness's MCP servers alone: do not " + what + " memvault's MCP server (memvault mcp)", Destination: p}
}

// gitHookChanges plans `memvault install git [--vault] [--project]`: the
// vault's hooks first, the first inVault of the changes, then the
// project's.
func gitHookChanges(e env, opts installOptions, verb string) (changes []hooks.Change, inVault int, err error) {
	if len(opts.args) != 1 {
		return nil, 0, usagef("%s git: takes no other arguments", verb)
	}
	bin, err := selfPath()
	if err != nil {
		return nil, 0, err
	}
	wd, err := os.Getwd()
	if err != nil {
		return nil, 0, err
	}
	var out []hooks.Change
	if root, ok, err := gitVaultTarget(e, opts); err != nil {
		return nil, 0, err
	} else if ok {
		cs, err := hooks.PlanGitHooks(root, hooks.VaultGitHooks(bin, root), bin, opts.remove)
		if err != nil {
			return nil, 0, err
		}
		out = append(out, cs...)
	}
	inVault = len(out)
	if opts.project {
		cs, err := hooks.PlanGitHooks(scope.ProjectRoot(wd), hooks.ProjectGitHooks(bin), bin, opts.remove)
		if err != nil {
			return nil, 0, err
		}
		out = append(out, cs...)
	}
	return out, inVault, nil
}

// gitVaultTarget finds the vault `install git` and `uninstall git` work
// on: --vault, or no --project.
func gitVaultTarget(e env, opts installOptions) (root string, ok bool, err error) {
	if !opts.vault && opts.project {
		return "", false, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", false, err
	}
	root, err = e.findVault(wd)
	return root, err == nil, err
}

// mergeSetup registers (or, with remove, unregisters) the vault's merge
// driver after its git hooks, and makes sure .gitattributes names it; it
// prints what it changed the way install prints hook files.
func mergeSetup(e env, w io.Writer, opts installOptions) error {
	root, ok, err := gitVaultTarget(e, opts)
	if err != nil || !ok {
		return err
	}
	config := filepath.Join(root, ".git", "config")
	switch {
	case opts.remove && opts.dryRun:
		fmt.Fprintf(w, "would unregister the merge driver in %s\n", config)
		return nil
	case opts.remove:
		changed, err := gitrepo.UnregisterMergeDrivers(root)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "%s %s\n", map[bool]string{true: "wrote", false: "unchanged"}[changed], config)
		return nil
	}
	bin, err := selfPath()
	if err != nil {
		return err
	}
	if opts.dryRun {
		pending, err := gitrepo.MergeSetupPending(root, bin)
		for _, p := range pending {
			fmt.Fprintf(w, "would write %s\n", filepath.Join(root, p))
		}
		return err
	}
	v, err := vault.Open(root)
	if err != nil {
		return err
	}
	changed, err := clones.EnsureMergeSetup(v, bin)
	if err != nil {
		return err
	}
	for _, p := range []string{".git/config", ".gitattributes"} {
		done := "unchanged"
		if slices.Contains(changed, p) {
			done = "wrote"
		}
		fmt.Fprintf(w, "%s %s\n", done, filepath.Join(root, filepath.FromSlash(p)))
	}
	return nil
}

type installOptions struct {
	scope   string // project or user
	dryRun  bool
	json    bool
	yes     bool     // create the project's vault without asking
	noMCP   bool     // leave the harness's MCP servers alone
	vault   bool     // with git: the vault repository's hooks
	project bool     // with git: the project repository's post-commit hook
	remove  bool     // uninstall: set by the command, not a flag
	args    []string // HARNESS or git
}

// installFlags are install's and uninstall's own flags, bound to o.
func (o *installOptions) installFlags(extra ...ucli.Flag) []ucli.Flag {
	flags := []ucli.Flag{newScopeFlag(&o.scope),
		&ucli.BoolFlag{Name: "dry-run", Usage: "print a unified diff of each file that would change, and change nothing", Destination: &o.dryRun},
		&ucli.BoolFlag{Name: "json", Usage: "print the changes (with their diffs) as JSON", Destination: &o.json}}
	return append(append(flags, extra...),
		&ucli.BoolFlag{Name: "vault", Usage: "with git: the vault repository's hooks (default when --project is not given)", Destination: &o.vault},
		&ucli.BoolFlag{Name: "project", Usage: "with git: the project repository's post-commit hook", Destination: &o.project})
}

func (o *installOptions) flags() []ucli.Flag {
	return o.installFlags(&ucli.BoolFlag{Name: "yes", Usage: "create the project's vault without asking when there is none", Destination: &o.yes},
		newNoMCPFlag("register", &o.noMCP))
}

func (o *installOptions) setArgs(args []string) { o.args = args }

func newInstallCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "install",
		Usage:     "wire memvault into a harness's hooks and register its MCP server there, or wire git's hooks (edits in place, keeps the rest of the file byte for byte; safe to repeat)",
		ArgsUsage: "HARNESS | git",
	}
}

func runInstall(_ context.Context, opts installOptions, e env) error { return install(e, opts) }

// installReport is what --json prints.
type installReport struct {
	Command string         `json:"command"`
	Target  string         `json:"target"`
	Scope   string         `json:"scope,omitempty"`
	DryRun  bool           `json:"dry_run"`
	Changes []changeReport `json:"changes"`
}

type changeReport struct {
	hooks.Change
	Diff string `json:"diff,omitempty"`
}

// changeDiff is the unified diff of a harness config change.
func changeDiff(ch hooks.Change) string {
	from, to := ch.Path, ch.Path
	if ch.Old == nil {
		from = "/dev/null"
	}
	switch ch.Action {
	case "write":
		return string(merge.Unified(from, to, ch.Old, ch.Content, 3))
	case "remove":
		return string(merge.Unified(from, "/dev/null", ch.Old, nil, 3))
	}
	return ""
}

// install plans the changes to the harness's config or git's hooks and
// makes them (install and uninstall); no vault file changes.
func install(e env, opts installOptions) error {
	target := firstArg(opts.args)
	verb := map[bool]string{false: "install", true: "uninstall"}[opts.remove]
	var changes []hooks.Change
	var err error
	inVault := 0 // the first inVault changes are the vault's files, the rest the person's
	apply := hooks.Apply
	var in *hooks.Installer
	if target == "git" {
		changes, inVault, err = gitHookChanges(e, opts, verb)
		apply = hooks.ApplyGitHooks
	} else if in, err = installer(opts, verb); err == nil {
		in.NoMCP = opts.noMCP
		changes, err = in.Plan(opts.remove)
	}
	if err != nil {
		return err
	}
	w := e.stdout
	if opts.json {
		w = e.stderr // what is said besides the changes, so stdout stays one JSON value
	}
	if in != nil && !opts.remove {
		if err := ensureProjectVault(e, opts, w, in); err != nil {
			return err
		}
	}
	if !opts.dryRun {
		// The vault's hooks are created private, under memvault's umask; a
		// harness's settings and a project's hook with the person's own.
		err = apply(changes[:inVault])
		if err == nil {
			err = e.asUser(func() error { return apply(changes[inVault:]) })
		}
		if err != nil {
			return fmt.Errorf("%s %s: %w", verb, target, err)
		}
	}
	if opts.json {
		rep := installReport{Command: verb, Target: target, DryRun: opts.dryRun, Changes: []changeReport{}}
		if in != nil {
			rep.Scope = string(in.Scope)
		}
		for _, ch := range changes {
			cr := changeReport{Change: ch}
			if in != nil {
				cr.Diff = changeDiff(ch)
			}
			rep.Changes = append(rep.Changes, cr)
		}
		if err := printJSON(e.stdout, rep); err != nil {
			return err
		}
	} else {
		printChanges(w, changes, opts, in != nil)
	}
	if target == "git" {
		if err := mergeSetup(e, w, opts); err != nil {
			return fmt.Errorf("%s git: merge driver: %w", verb, err)
		}
	}
	return nil
}

// printChanges says what was (or, with --dry-run, would be) done to each
// file; a dry run of a harness shows each change as a unified diff.
func printChanges(w io.Writer, changes []hooks.Change, opts installOptions, harness bool) {
	for _, ch := range changes {
		switch {
		case ch.Action == "unchanged":
			fmt.Fprintf(w, "unchanged %s\n", ch.Path)
		case opts.dryRun:
			fmt.Fprintf(w, "would %s %s\n", ch.Action, ch.Path)
			if harness {
				fmt.Fprint(w, changeDiff(ch))
			}
		default:
			fmt.Fprintf(w, "%s %s\n", map[string]string{"write": "wrote", "remove": "removed"}[ch.Action], ch.Path)
		}
		if ch.Note != "" && ch.Action != "unchanged" {
			fmt.Fprintf(w, "note: %s\n", ch.Note)
		}
		if ch.Warning != "" {
			fmt.Fprintf(w, "warning: %s\n", ch.Warning)
		}
	}
}

// ensureProjectVault makes sure hooks installed for a project have a vault
// to write to: without one they would run and store nothing. When none is
// found from the working folder, it creates the project's .memory/ with
// --yes, asks at a terminal, and without one refuses before anything is
// written (exit 3, naming --yes). User
// scope wires every project, so there it only says what is missing here.
func ensureProjectVault(e env, opts installOptions, w io.Writer, in *hooks.Installer) error {
	wd, err := os.Getwd()
	if err != nil {
		return err
	}
	named := e.vaultDir
	if _, err := vault.Find(named, wd); err == nil {
		return nil
	} else if named != "" || !errors.Is(err, vault.ErrNotFound) {
		return err // --vault or MEMVAULT_DIR names the vault: never one made elsewhere
	}
	dir := filepath.Join(in.Project, vault.DirName)
	if in.Scope == hooks.ScopeUser {
		fmt.Fprintf(w, "note: no vault from here; the hooks store nothing in a project until memvault init creates its vault\n")
		return nil
	}
	if opts.dryRun {
		if !opts.yes && !isTerminal(e.stdin) {
			fmt.Fprintf(w, "would refuse: no vault from here and no terminal to ask (--yes creates %s)\n", dir)
			return nil
		}
		fmt.Fprintf(w, "would create the vault %s (none found from here)\n", dir)
		return nil
	}
	switch {
	case opts.yes:
	case isTerminal(e.stdin):
		fmt.Fprintf(w, "No vault found from here: the hooks would store nothing. Create %s? [Y/n] ", dir)
		answer, _ := bufio.NewReader(e.stdin).ReadString('\n')
		if a := strings.ToLower(strings.TrimSpace(answer)); a != "" && a != "y" && a != "yes" {
			fmt.Fprintf(e.stderr, "memvault: warning: no vault: the hooks store nothing until memvault init creates one\n")
			return nil
		}
	default:
		// Nobody to ask (a script, an agent's shell, < /dev/null): no
		// prompt, and no vault made without a yes. Nothing is written.
		refusal := fault.New(vault.ErrNotFound, "install: no vault from here and no terminal to ask: --yes creates %s, or run memvault init first", dir)
		return refusal.WithHint("memvault install %s --yes", firstArg(opts.args))
	}
	v, _, _, err := initVault(initOptionsFor(e, dir))
	if err != nil {
		return fmt.Errorf("install: create the vault: %w", err)
	}
	fmt.Fprintf(w, "initialised vault at %s\n", v.Root)
	return nil
}

// isTerminal reports whether r is a terminal a person types into: not
// merely a character device, which /dev/null is too.
func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && fileio.IsTerminal(f.Fd())
}
