package ops

import (
	"strings"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/continuity"
	"github.com/memvault/memvault/vault/lineage"
	"github.com/memvault/memvault/vault/memory"
)

// Ids as people and agents type them: any unique prefix of an id names it
// (docs/API.md, "Ids"). They are resolved inside the transaction that acts
// on them, so the id found is the one the transaction then changes.

// EventID resolves an event id or prefix arg within tx; verb names the
// action in the error ("close", "retract").
func EventID(tx *vault.Tx, verb, arg string) (string, error) {
	st, err := tx.State()
	if err != nil {
		return "", err
	}
	return st.ResolveEventID(verb, arg)
}

// ResolveLinks resolves the ids of related events or nodes, by prefix.
func ResolveLinks(tx *vault.Tx, links []string) ([]string, error) {
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

// Remember records a memory row (in.Kind one of vault.RememberKinds) whose
// links may be prefixes; in.Source "" is the library's default.
// A claim remembered so is free text, recorded unchecked
// (lineage.TextClaimData).
func Remember(tx *vault.Tx, in memory.Input) (*vault.Event, error) {
	if in.Kind == "claim" {
		data, err := lineage.TextClaimData(in.Data)
		if err != nil {
			return nil, err
		}
		in.Data = data
	}
	return withLinks(tx, in, memory.Remember)
}

// OpenCommitment records a commitment whose links may be prefixes.
func OpenCommitment(tx *vault.Tx, in memory.Input) (*vault.Event, error) {
	return withLinks(tx, in, memory.OpenCommitment)
}

// withLinks resolves in's links, then records it with record.
func withLinks(tx *vault.Tx, in memory.Input, record func(*vault.Tx, memory.Input) (*vault.Event, error)) (*vault.Event, error) {
	links, err := ResolveLinks(tx, in.Links)
	if err != nil {
		return nil, err
	}
	in.Links = links
	return record(tx, in)
}

// CloseCommitment closes the open commitment id (or a unique prefix of it).
func CloseCommitment(tx *vault.Tx, id, note string) (*vault.Event, error) {
	full, err := EventID(tx, "close", id)
	if err != nil {
		return nil, err
	}
	return memory.CloseCommitment(tx, full, note)
}

// Done records what was done. One word that is an event id, or a prefix of
// one, names the next action, blocker or commitment it closes; other text
// (a next action's number or its words included) is handed to the
// protocol as it is.
func Done(ct *continuity.ContinuityTx, text string) error {
	word := strings.TrimSpace(text)
	if !strings.ContainsAny(word, " \t\n") && strings.HasPrefix(word, vault.EventIDMarker) {
		id, err := EventID(ct.Tx, "done", word)
		if err != nil {
			return err
		}
		text = id
	}
	return ct.Done(text)
}
