package cli

import (
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

// An action is a command's work with its declared access. Exactly one of
// the functions is set, the one its access calls for.
type action struct {
	access access
	// health: the command reports the vault's health, so it opens even a
	// vault whose memvault.toml does not parse (vault.OpenForCapture);
	// optional: it runs without a vault too, and gets nil.
	health, optional bool
	plain            func(c *ucli.Context) error                           // accessNone, accessOwn, accessServe
	read             func(c *ucli.Context, v *vault.Vault) error           // accessRead
	tx               func(c *ucli.Context, v *vault.Vault) (txWork, error) // accessTx
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

// noVault declares a command that opens no vault through the root.
func noVault(fn func(c *ucli.Context) error) action { return action{access: accessNone, plain: fn} }

// reads declares a command that only reads the vault.
func reads(fn func(c *ucli.Context, v *vault.Vault) error) action {
	return action{access: accessRead, read: fn}
}

// reportsHealth declares a command that only reads the vault and says what
// is wrong with it (status, context): the root opens it for capture, so a
// broken memvault.toml is reported by the command instead of stopping it.
func reportsHealth(fn func(c *ucli.Context, v *vault.Vault) error) action {
	return action{access: accessRead, read: fn, health: true}
}

// inspects declares a command that checks things outside the vault and
// the vault's health when there is a vault (doctor): v is nil when none is
// found.
func inspects(fn func(c *ucli.Context, v *vault.Vault) error) action {
	return action{access: accessRead, read: fn, health: true, optional: true}
}

// inTx declares a command whose whole work is one transaction and whose
// output is the events it wrote.
func inTx(fn func(c *ucli.Context, tx *vault.Tx) error) action {
	return inTxPrepared(func(c *ucli.Context, _ *vault.Vault) (txWork, error) {
		return txWork{apply: func(tx *vault.Tx) error { return fn(c, tx) }}, nil
	})
}

// inTxPrepared declares a one-transaction command that checks its input
// before the lock, or prints its own report.
func inTxPrepared(fn func(c *ucli.Context, v *vault.Vault) (txWork, error)) action {
	return action{access: accessTx, tx: fn}
}

// ownWrites declares a command whose library call takes the vault lock
// itself, perhaps more than once; the command opens the vault.
func ownWrites(fn func(c *ucli.Context) error) action { return action{access: accessOwn, plain: fn} }

// serves declares a server: its requests open the vault and take the lock
// each for itself.
func serves(fn func(c *ucli.Context) error) action { return action{access: accessServe, plain: fn} }

// actionFunc is the root applying an action's access.
func (a action) actionFunc() ucli.ActionFunc {
	switch a.access {
	case accessRead:
		return func(c *ucli.Context) error {
			open := vault.Open
			if a.health {
				open = vault.OpenForCapture
			}
			v, err := openVaultWith(c, open)
			if a.optional && errors.Is(err, vault.ErrNotFound) {
				return a.read(c, nil)
			}
			if err != nil {
				return err
			}
			return a.read(c, v)
		}
	case accessTx:
		return func(c *ucli.Context) error { return runTx(c, a.tx) }
	}
	return a.plain
}

// runTx opens the vault, prepares the command's work, runs it in one
// transaction (one lock, one commit) and prints the warnings and the report.
func runTx(c *ucli.Context, prepare func(c *ucli.Context, v *vault.Vault) (txWork, error)) error {
	v, err := openVault(c)
	if err != nil {
		return err
	}
	work, err := prepare(c, v)
	if err != nil {
		return err
	}
	opts, err := txOptions(c, v)
	if err != nil {
		return err
	}
	res, err := v.Update(opts, work.apply)
	if err != nil {
		return err
	}
	for _, w := range res.Warnings {
		fmt.Fprintf(c.App.ErrWriter, "memvault: warning: %s\n", w)
	}
	gcAdvice(c, v) // progress.go: on a terminal, when loose objects call for a gc
	if work.thread != "" {
		dirThreadNote(c, work.thread, optOutWrite)
	}
	if work.report != nil {
		return work.report(res)
	}
	if c.Bool("json") {
		return printJSON(c.App.Writer, res.Events)
	}
	for _, ev := range res.Events {
		fmt.Fprintln(c.App.Writer, ev.ID)
	}
	return nil
}

// setActions gives every command in cs the action commandActions declares
// for it, by its path ("commitment open").
func setActions(cs []*ucli.Command, prefix string, actions map[string]action) {
	for _, c := range cs {
		path := prefix + c.Name
		if a, ok := actions[path]; ok {
			c.Action = a.actionFunc()
			if strings.TrimSpace(c.ArgsUsage) == "" {
				c.Action = withoutArgs(path, c.Action)
			}
		}
		setActions(c.Subcommands, path+" ", actions)
	}
}
