package cli

import ucli "github.com/urfave/cli/v2"

// The option groups and flags several commands share. A command's flags
// fill its options through their Destination (or, for a repeatable flag or
// one whose absence matters, their Action); nothing reads a flag by name.

// writeOptions are the flags of a command that changes the vault: the
// session and the harness its transaction is recorded with, --force and
// --json. A one-transaction command's options embed them, and bind those
// its flags set (import takes only --json).
type writeOptions struct {
	session, harness string
	force, json      bool
}

// write is a one-transaction command's write flags, for the root's
// transaction (writerOf).
func (o *writeOptions) write() *writeOptions { return o }

// writeFlags are the command's own flags (extra), then the flags of every
// command that changes the vault, bound to o.
func (o *writeOptions) writeFlags(extra ...ucli.Flag) []ucli.Flag {
	return append(extra, newSessionFlag(&o.session), newHarnessFlag(&o.harness), newForceFlag(&o.force), newJSONFlag(&o.json))
}

// The flags several commands share, each bound to the field it fills.

func newJSONFlag(p *bool) *ucli.BoolFlag {
	return &ucli.BoolFlag{Name: "json", Usage: "print JSON instead of text", Destination: p}
}

func newSessionFlag(p *string) *ucli.StringFlag {
	return &ucli.StringFlag{Name: "session", EnvVars: []string{"MEMVAULT_SESSION"}, Usage: "session key the write belongs to", Destination: p}
}

func newHarnessFlag(p *string) *ucli.StringFlag {
	return &ucli.StringFlag{Name: "harness", EnvVars: []string{"MEMVAULT_HARNESS"}, Usage: "harness the write comes from (claude-code, codex, …)", Destination: p}
}

func newForceFlag(p *bool) *ucli.BoolFlag {
	return &ucli.BoolFlag{Name: "force", Usage: "write even if the ledger fails verification", Destination: p}
}

// newThreadFlag is --thread as a filter, or a node's thread.
func newThreadFlag(p *string) *ucli.StringFlag {
	return &ucli.StringFlag{Name: "thread", Aliases: []string{"t"}, Usage: "thread key kind:slug (global when absent)", Destination: p}
}

// markSet is a flag's Action that records that the flag was given, on the
// line or by its environment variable, for a command whose default
// depends on it.
func markSet[T any](set *bool) func(*ucli.Context, T) error {
	return func(*ucli.Context, T) error {
		*set = true
		return nil
	}
}

// setSlice is a repeatable flag's Action: it sets p to the values given,
// in order (a flag not given leaves p nil).
func setSlice(p *[]string) func(*ucli.Context, []string) error {
	return func(_ *ucli.Context, values []string) error {
		*p = values
		return nil
	}
}

// jsonOnly are the options of a command whose one flag is --json.
type jsonOnly struct{ json bool }

func (o *jsonOnly) flags() []ucli.Flag { return []ucli.Flag{newJSONFlag(&o.json)} }
