package vault

import (
	"maps"
	"slices"
	"strings"

	"github.com/memvault/memvault/vault/fault"
)

// Identity fields (the agent, the session, the harness and the thread an
// event names) are stored as they are: they become file names, commit
// trailers and the ledger's keys, where a redaction marker would merge two
// sessions into one or break a path. So a value that holds a credential
// is refused instead of redacted, with the kind of credential but never the
// value in the error (errors reach terminals and the hook log).

// checkIdentity refuses an identity value that the vault's redaction rules
// would change. what names the field ("agent", "session", …).
func (v *Vault) checkIdentity(what, s string) error {
	if s == "" {
		return nil
	}
	_, counts := v.Redact(s)
	if len(counts) == 0 {
		return nil
	}
	kinds := slices.Sorted(maps.Keys(counts))
	e := fault.New(ErrInvalid, "%s: holds a credential (%s); memvault never stores one, not even as a name", what, strings.Join(kinds, ", "))
	return e.WithHint("choose another %s", what)
}

// check validates the identity a transaction writes as, before it takes the
// lock: the agent is a file name, the session a key of printable text, the
// harness a name; none may hold a credential.
func (opts TxOptions) check(v *Vault) error {
	if err := CheckName("agent", opts.Agent); err != nil {
		return err
	}
	if opts.Session != "" {
		if err := CheckSession(opts.Session); err != nil {
			return err
		}
	}
	if opts.Harness != "" {
		if err := CheckName("harness", opts.Harness); err != nil {
			return err
		}
	}
	for _, f := range [][2]string{{"agent", opts.Agent}, {"session", opts.Session}, {"harness", opts.Harness}} {
		if err := v.checkIdentity(f[0], f[1]); err != nil {
			return err
		}
	}
	return nil
}

// checkEvents validates the identity fields of the events fn queued, which
// a caller may have set from a payload rather than from the options.
func (tx *Tx) checkEvents() error {
	for _, ev := range tx.events {
		for _, f := range [][2]string{{"agent", ev.Agent}, {"session", ev.Session}, {"harness", ev.Harness}, {"thread", ev.Thread}} {
			if err := tx.v.checkIdentity(f[0], f[1]); err != nil {
				return err
			}
		}
	}
	return nil
}
