package cli

import (
	"strings"

	"github.com/memvault/memvault/vault"
)

// Ids as people type them: any unique prefix of an id names it (docs/API.md,
// "Ids"); the vault resolves it (vault/ids.go) and the ledger stores the
// full id always.

// idHelp is the description of a command that takes an event id.
const idHelp = "ID is an event id (e_ and 26 characters) or any unique prefix of one, with or without\n" +
	"e_, of at least 4 characters after it: an ambiguous prefix lists the events it could be."

// eventID resolves the event id or prefix arg within the transaction, so
// the id it finds is the one the transaction then acts on.
func eventID(tx *vault.Tx, verb, arg string) (string, error) {
	st, err := tx.State()
	if err != nil {
		return "", err
	}
	return st.ResolveEventID(verb, arg)
}

// linkIDs resolves the ids --link names (events or nodes, by prefix).
func linkIDs(tx *vault.Tx, links []string) ([]string, error) {
	out := make([]string, 0, len(links))
	for _, l := range links {
		id, err := tx.ResolveLink(strings.TrimSpace(l))
		if err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return out, nil
}
