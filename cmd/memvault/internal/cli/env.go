package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/memvault/memvault/hooks/hookstate"
	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/fault"
	"github.com/memvault/memvault/vault/fileio"
)

// env is what a command takes from the process and from the global flags:
// its streams, where the vault is, who the agent is. The root builds it
// from urfave/cli's context (envOf, actions.go), so that no command reads
// that context and a test runs a command with an env it made by hand.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	// name is the command's name as urfave/cli's FullName gives it, its
	// last word ("open" for commitment open): what its messages and its
	// transaction's Command say.
	name string
	// vaultDir is the global --vault (or MEMVAULT_DIR); "" looks for the
	// nearest .memory/ upward.
	vaultDir string
	// agent is the innermost --agent given (expand has one of its own),
	// or MEMVAULT_AGENT; "" for the vault's configured agent (agentOf).
	agent string
	// userUmask is the umask the person started memvault with, or -1 when
	// the process's umask was left as it is (Run, the tests).
	userUmask int
	// help prints the help of the command at path: the help command's
	// view of the command tree.
	help func(path []string, opts helpOptions) error
}

// openVault finds and opens the vault the global flags point at.
func (e env) openVault() (*vault.Vault, error) { return e.openVaultWith(vault.Open) }

// openVaultWith finds the vault the global flags point at and opens it
// with open.
func (e env) openVaultWith(open func(root string) (*vault.Vault, error)) (*vault.Vault, error) {
	wd, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	root, err := e.findVault(wd)
	if err != nil {
		return nil, err
	}
	v, err := open(root)
	if err != nil {
		return nil, err
	}
	v.Binary, _ = selfPath() // for git's merge driver, registered by a fresh clone's first write
	// The spool's problems go to the hook log, with those of the hooks that spooled.
	v.Warn = func(line string) { _ = hookstate.AppendHookLog(root, line) }
	return v, nil
}

// findVault is vault.Find of the vault the global flags name, from wd.
// A --vault (or MEMVAULT_DIR) that names a project, not its vault, is the
// first-hour slip: when DIR/.memory is a vault, the error's hint names it.
func (e env) findVault(wd string) (string, error) {
	root, err := vault.Find(e.vaultDir, wd)
	if err == nil || e.vaultDir == "" || !errors.Is(err, vault.ErrNotFound) {
		return root, err
	}
	inner := filepath.Join(e.vaultDir, vault.DirName)
	var ferr *fault.Error
	if _, ierr := vault.Find(inner, wd); ierr == nil && errors.As(err, &ferr) {
		ferr.WithHint("%s is the project's vault: memvault --vault %s …", inner, inner)
	}
	return root, err
}

// agentOf is the agent the command acts as: --agent or MEMVAULT_AGENT,
// else the vault's configured one.
func (e env) agentOf(v *vault.Vault) (string, error) {
	if e.agent == "" {
		return v.Config.Agent, nil
	}
	return e.agent, fileio.CheckName("agent", e.agent)
}

// txOptions are the options of a transaction this command runs: its name,
// the agent, and the write flags.
func (e env) txOptions(v *vault.Vault, w writeOptions) (vault.TxOptions, error) {
	agent, err := e.agentOf(v)
	if err != nil {
		return vault.TxOptions{}, err
	}
	return vault.TxOptions{Command: e.name, Agent: agent, Session: w.session, Harness: w.harness, Force: w.force}, nil
}

// asUser runs fn, which creates files of the person's own outside the
// vault, under the umask the person started memvault with, so that a new
// settings file or folder gets the mode their other tools would give it.
// A file that exists keeps its mode regardless (fileio.WriteKeepMode).
func (e env) asUser(fn func() error) error {
	if e.userUmask < 0 {
		return fn()
	}
	prev := syscall.Umask(e.userUmask)
	defer syscall.Umask(prev)
	return fn()
}

// readStdin reads a value given as "-" from stdin, up to the text limit.
func (e env) readStdin(what string) (string, error) {
	data, err := io.ReadAll(io.LimitReader(e.stdin, vault.MaxTextBytes+1))
	if err != nil {
		return "", fmt.Errorf("%s: read stdin: %w", what, err)
	}
	return strings.TrimSuffix(string(data), "\n"), nil
}

// textArg joins the positional arguments into one text; "-" reads stdin.
func (e env) textArg(args []string, what string) (string, error) {
	if len(args) == 1 && args[0] == "-" {
		return e.readStdin(what)
	}
	return strings.Join(args, " "), nil
}

// needText refuses a command's text that is missing or only white space
// (from "-" too) before anything else is checked: one line saying which,
// exit 2, and hint, an example to type. want names what the command
// wants, noun what it is called when given empty; args are the positional
// arguments the text came from.
func needText(cmd, want, noun string, args []string, text, hint string) error {
	if strings.TrimSpace(text) != "" {
		return nil
	}
	msg := cmd + ": want " + want
	if len(args) > 0 {
		msg = cmd + ": the " + noun + " is empty"
	}
	return &usageError{msg: msg, hint: hint}
}

// firstArg is the first positional argument, "" when there is none.
func firstArg(args []string) string {
	if len(args) == 0 {
		return ""
	}
	return args[0]
}
