package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/memvault/memvault/vault"
	ucli "github.com/urfave/cli/v2"
)

// access is what a command does to the vault. Every command declares it in
// commandActions, through the constructor that builds its action, and the
// root applies it; TestEveryCommandDeclaresAccess fails on a command that
// has no declaration.
type access int

const (
	// accessNone: the root opens no vault. The command creates one (init),
	// finds its own and fails open (hook), or edits files outside the
	// vault (install, uninstall).
	accessNone access = iota
	// accessRead: the root opens the vault (for capture, when the command
	// reports its health; none, when it may run without one); the command
	// takes no lock and commits nothing.
	accessRead
	// accessTx: the root opens the vault and runs the command's work in one
	// vault.Update, which takes the lock and makes one commit; the root
	// prints the transaction's warnings.
	accessTx
	// accessOwn: the command calls a library function that takes the lock
	// itself and may commit more than once; commandActions says why per
	// command.
	accessOwn
	// accessServe: the command is a server that answers requests for as
	// long as its client stays (mcp, serve). The root opens nothing: the server
	// finds and opens the vault afresh for each request, reads without the
	// lock, and makes each write one transaction of its own, so no lock and
	// no open vault outlive a request.
	accessServe
)

// options are a command's options: flags gives the command's flags, each
// bound to a field of the options (its Destination), the way restic's
// AddFlags binds a command's flags to its options. urfave/cli fills them
// as it parses the line; the command's function gets them as a value.
type options interface {
	flags() []ucli.Flag
}

// optionsOf is what the action constructors ask of a command's options
// type O: its pointer gives the flags.
type optionsOf[O any] interface {
	*O
	options
}

// writerOf is optionsOf for a one-transaction command: its options embed
// writeOptions, whose session, harness and --force the transaction takes.
type writerOf[O any] interface {
	optionsOf[O]
	write() *writeOptions
}

// An action is a command's work with its declared access, and the options
// its flags fill. Exactly one of the functions is set, the one its access
// calls for.
type action struct {
	access access
	// health: the command reports the vault's health, so it opens even a
	// vault whose memvault.toml does not parse (vault.OpenForCapture);
	// optional: it runs without a vault too, and gets nil.
	health, optional bool
	// flags are the command's flags, bound to its options.
	flags []ucli.Flag
	// args gives the options the positional arguments; nil for a command
	// whose options take none.
	args func(args []string)
	// write is a one-transaction command's write flags.
	write *writeOptions

	plain func(ctx context.Context, e env) error                           // accessNone, accessOwn, accessServe
	read  func(ctx context.Context, e env, v *vault.Vault) error           // accessRead
	tx    func(ctx context.Context, e env, v *vault.Vault) (txWork, error) // accessTx
}

// txWork is a one-transaction command's work, prepared once the vault is
// open and before the lock is taken: apply runs inside the transaction;
// report prints the outcome after the commit. Without a report the root
// prints the ids of the events written, or the events with --json.
type txWork struct {
	apply  func(tx *vault.Tx) error
	report func(res *vault.Result) error
	// thread is the thread the rows were filed under when it came from
	// the working directory: the root says so on stderr after the commit.
	thread string
}

// bound makes a command's options, the flags that fill them, and, when
// the options take positional arguments, the function that gives them.
func bound[O any, P optionsOf[O]](a action) (*O, action) {
	o := new(O)
	a.flags = P(o).flags()
	if t, ok := any(o).(interface{ setArgs([]string) }); ok {
		a.args = t.setArgs
	}
	return o, a
}

// noVault declares a command that opens no vault through the root.
func noVault[O any, P optionsOf[O]](fn func(ctx context.Context, opts O, e env) error) action {
	o, a := bound[O, P](action{access: accessNone})
	a.plain = func(ctx context.Context, e env) error { return fn(ctx, *o, e) }
	return a
}

// reads declares a command that only reads the vault.
func reads[O any, P optionsOf[O]](fn func(ctx context.Context, opts O, e env, v *vault.Vault) error) action {
	o, a := bound[O, P](action{access: accessRead})
	a.read = func(ctx context.Context, e env, v *vault.Vault) error { return fn(ctx, *o, e, v) }
	return a
}

// reportsHealth declares a command that only reads the vault and says what
// is wrong with it (status, context): the root opens it for capture, so a
// broken memvault.toml is reported by the command instead of stopping it.
func reportsHealth[O any, P optionsOf[O]](fn func(ctx context.Context, opts O, e env, v *vault.Vault) error) action {
	a := reads[O, P](fn)
	a.health = true
	return a
}

// inspects declares a command that checks things outside the vault and
// the vault's health when there is a vault (doctor): v is nil when none is
// found.
func inspects[O any, P optionsOf[O]](fn func(ctx context.Context, opts O, e env, v *vault.Vault) error) action {
	a := reads[O, P](fn)
	a.health, a.optional = true, true
	return a
}

// inTx declares a command whose whole work is one transaction and whose
// output is the events it wrote.
func inTx[O any, P writerOf[O]](fn func(ctx context.Context, opts O, e env, tx *vault.Tx) error) action {
	return inTxPrepared[O, P](func(ctx context.Context, opts O, e env, _ *vault.Vault) (txWork, error) {
		return txWork{apply: func(tx *vault.Tx) error { return fn(ctx, opts, e, tx) }}, nil
	})
}

// inTxPrepared declares a one-transaction command that checks its input
// before the lock, or prints its own report.
func inTxPrepared[O any, P writerOf[O]](fn func(ctx context.Context, opts O, e env, v *vault.Vault) (txWork, error)) action {
	o, a := bound[O, P](action{access: accessTx})
	a.write = P(o).write()
	a.tx = func(ctx context.Context, e env, v *vault.Vault) (txWork, error) { return fn(ctx, *o, e, v) }
	return a
}

// ownWrites declares a command whose library call takes the vault lock
// itself, perhaps more than once; the command opens the vault.
func ownWrites[O any, P optionsOf[O]](fn func(ctx context.Context, opts O, e env) error) action {
	o, a := bound[O, P](action{access: accessOwn})
	a.plain = func(ctx context.Context, e env) error { return fn(ctx, *o, e) }
	return a
}

// serves declares a server: its requests open the vault and take the lock
// each for itself.
func serves[O any, P optionsOf[O]](fn func(ctx context.Context, opts O, e env) error) action {
	o, a := bound[O, P](action{access: accessServe})
	a.plain = func(ctx context.Context, e env) error { return fn(ctx, *o, e) }
	return a
}

// actionFunc is the root applying an action's access: the one place,
// with envOf, where urfave/cli's context is read. By the time it runs,
// urfave/cli has filled the options through the flags.
func (a action) actionFunc() ucli.ActionFunc {
	return func(c *ucli.Context) error {
		if a.args != nil {
			a.args(c.Args().Slice())
		}
		e := envOf(c)
		switch a.access {
		case accessRead:
			v, err := a.openFor(e)
			if err != nil {
				return err
			}
			return a.read(c.Context, e, v)
		case accessTx:
			return runTx(c.Context, e, a)
		}
		return a.plain(c.Context, e)
	}
}

// openFor opens the vault for a command that reads it: for capture when
// it reports the vault's health; nil, and no error, when it runs without
// a vault and none is found.
func (a action) openFor(e env) (*vault.Vault, error) {
	open := vault.Open
	if a.health {
		open = vault.OpenForCapture
	}
	v, err := e.openVaultWith(open)
	if a.optional && errors.Is(err, vault.ErrNotFound) {
		return nil, nil
	}
	return v, err
}

// envOf is what a command takes from the process and the global flags.
func envOf(c *ucli.Context) env {
	e := env{stdin: c.App.Reader, stdout: c.App.Writer, stderr: c.App.ErrWriter, name: c.Command.FullName(),
		vaultDir: globalVault(c), agent: agentFlag(c), userUmask: -1}
	if mask, ok := c.App.Metadata[userUmaskKey].(int); ok {
		e.userUmask = mask
	}
	app := c.App
	e.help = func(path []string, opts helpOptions) error { return printHelp(e.stdout, app, path, opts) }
	return e
}

// agentFlag is the innermost --agent that is set: a command may have its
// own (expand names the agent whose node it reads), which then wins over
// the global one (or MEMVAULT_AGENT).
func agentFlag(c *ucli.Context) string {
	for _, cc := range c.Lineage() {
		if cc.IsSet("agent") {
			return cc.String("agent")
		}
	}
	return ""
}

// globalVault is the global --vault (or MEMVAULT_DIR), which install's own
// --vault flag (a bool, for git) hides from c.String. The root command's
// context is the outermost one that has a command: urfave/cli puts an empty
// context above it.
func globalVault(c *ucli.Context) string {
	lineage := c.Lineage()
	for i := len(lineage) - 1; i >= 0; i-- {
		if lineage[i].Command != nil {
			return lineage[i].String("vault")
		}
	}
	return ""
}

// runTx opens the vault, prepares the command's work and commits it.
func runTx(ctx context.Context, e env, a action) error {
	v, err := e.openVault()
	if err != nil {
		return err
	}
	work, err := a.tx(ctx, e, v)
	if err != nil {
		return err
	}
	return commitWork(e, v, *a.write, work)
}

// commitWork runs a command's prepared work in one transaction (one lock,
// one commit), prints the warnings and the report, and has the heads
// brought up to date.
func commitWork(e env, v *vault.Vault, w writeOptions, work txWork) error {
	opts, err := e.txOptions(v, w)
	if err != nil {
		return err
	}
	k, err := refresher()
	if err != nil {
		return err
	}
	res, err := v.Update(opts, work.apply)
	if err != nil {
		return err
	}
	// The heads whose rows changed, brought up to date off this path
	// once the report is out (afterwrite.go).
	defer k.After(v, res.Commit)
	for _, w := range res.Warnings {
		fmt.Fprintf(e.stderr, "memvault: warning: %s\n", w)
	}
	gcAdvice(e, v) // progress.go: on a terminal, when loose objects call for a gc
	if work.thread != "" {
		dirThreadNote(e, work.thread, optOutWrite)
	}
	if work.report != nil {
		return work.report(res)
	}
	return printEvents(e, w.json, res)
}

// setActions gives every command in cs the action commandActions declares
// for it, by its path ("commitment open").
func setActions(cs []*ucli.Command, prefix string, actions map[string]action) {
	for _, c := range cs {
		path := prefix + c.Name
		if a, ok := actions[path]; ok {
			c.Action = a.actionFunc()
			c.Flags = a.flags
			if strings.TrimSpace(c.ArgsUsage) == "" {
				c.Action = withoutArgs(path, c.Action)
			}
		}
		setActions(c.Subcommands, path+" ", actions)
	}
}

// withoutArgs refuses the positional arguments of a command whose usage
// names none, before its action opens anything: a stray word (`memvault
// status extra`) is a mistake to say, not to ignore.
func withoutArgs(path string, next ucli.ActionFunc) ucli.ActionFunc {
	return func(c *ucli.Context) error {
		if c.NArg() > 0 {
			return &usageError{msg: fmt.Sprintf("%s: takes no arguments (got %q)", path, shortValue(c.Args().First())),
				hint: noArgsHint(path)}
		}
		return next(c)
	}
}
