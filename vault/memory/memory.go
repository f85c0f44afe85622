// Package memory records what a person or an agent asks the vault to
// remember, as events queued on a transaction: a memory row of one of
// vault.RememberKinds (Remember), a commitment opened and closed, a
// retraction and a supersession. Each checks what comes from outside (its
// text, data, thread and links, the row a correction names) before it
// queues one event through the transaction's public API, so every front
// end that records a row refuses the same things with the same words.
package memory

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/canonical"
	"github.com/memvault/memvault/vault/fault"
	"github.com/memvault/memvault/vault/fileio"
)

// Input is what a caller records: the parts of an event that come from
// outside. Everything else is filled in by the transaction.
type Input struct {
	Kind   string
	Thread string
	Text   string
	Links  []string
	Data   json.RawMessage // optional; must be a JSON object
	Source string          // where the event came from: "cli", "hook", …
}

// validate checks the parts of in that need no ledger lookups.
func (in *Input) validate() error {
	if in.Thread != "" {
		t, err := vault.ParseThread(in.Thread)
		if err != nil {
			return err
		}
		in.Thread = t.String()
	}
	if len(in.Data) > 0 {
		// Checked before decoding: the decoder would silently turn invalid
		// UTF-8 into U+FFFD.
		if !utf8.Valid(in.Data) {
			return fault.New(vault.ErrInvalid, "data: not valid utf-8")
		}
		v, err := canonical.Decode(in.Data)
		if err != nil {
			return fault.New(vault.ErrInvalid, "data: not valid json: %v", err)
		}
		if canonical.HoldsNUL(v) {
			return fault.New(vault.ErrInvalid, "data: a string holds a NUL character (\\u0000)")
		}
		if _, ok := v.(map[string]any); !ok {
			return fault.New(vault.ErrInvalid, "data: must be a json object")
		}
		var buf bytes.Buffer
		if err := canonical.Write(&buf, v); err != nil {
			return fault.New(vault.ErrInvalid, "data: %v", err)
		}
		in.Data = buf.Bytes()
	}
	for _, l := range in.Links {
		if err := fileio.CheckName("link", l); err != nil {
			return err
		}
	}
	return nil
}

// checkLinks makes sure every link names an existing event or node.
func checkLinks(tx *vault.Tx, links []string) error {
	if len(links) == 0 {
		return nil
	}
	st, err := tx.State()
	if err != nil {
		return err
	}
	var nodes map[string]bool
	for _, l := range links {
		if strings.HasPrefix(l, vault.NodeIDMarker) {
			if nodes == nil {
				if nodes, err = tx.Vault().NodeIDs(); err != nil {
					return err
				}
			}
			if !nodes[l] {
				return fault.New(vault.ErrNotFound, "link %s: no such node", l)
			}
			continue
		}
		if st.Get(l) == nil {
			e := fault.New(vault.ErrNotFound, "link %s: no such event", l)
			return e.WithHint("list event ids with: memvault ledger")
		}
	}
	return nil
}

// Remember records a memory row of one of vault.RememberKinds.
func Remember(tx *vault.Tx, in Input) (*vault.Event, error) {
	if in.Kind == "" {
		in.Kind = "fact"
	}
	if !slices.Contains(vault.RememberKinds, in.Kind) {
		e := fault.New(vault.ErrInvalid, "kind %q: unknown", in.Kind)
		return nil, e.WithHint("use one of: %s", strings.Join(vault.RememberKinds, ", "))
	}
	return record(tx, in, false)
}

// OpenCommitment records a promise to do something; its id is what closes it.
func OpenCommitment(tx *vault.Tx, in Input) (*vault.Event, error) {
	in.Kind = "commitment.open"
	return record(tx, in, false)
}

func record(tx *vault.Tx, in Input, allowEmpty bool) (*vault.Event, error) {
	if err := vault.CheckText("text", in.Text, allowEmpty); err != nil {
		return nil, err
	}
	if err := in.validate(); err != nil {
		return nil, err
	}
	if err := checkLinks(tx, in.Links); err != nil {
		return nil, err
	}
	if in.Source == "" {
		in.Source = tx.Source()
	}
	return tx.Append(&vault.Event{Kind: in.Kind, Thread: in.Thread, Text: in.Text,
		Links: in.Links, Data: in.Data, Source: in.Source}), nil
}

// target looks up the event a correction names and refuses corrections of
// rows that no longer hold.
func target(tx *vault.Tx, verb, id string) (*vault.Row, error) {
	if err := fileio.CheckName("id", id); err != nil {
		return nil, err
	}
	st, err := tx.State()
	if err != nil {
		return nil, err
	}
	r := st.Get(id)
	switch {
	case r == nil:
		e := fault.New(vault.ErrNotFound, "%s %s: no such event", verb, id)
		return nil, e.WithHint("list event ids with: memvault ledger")
	case r.RetractedBy != "":
		return nil, fault.New(vault.ErrConflict, "%s %s: already retracted by %s", verb, id, r.RetractedBy)
	case r.SupersededBy != "":
		e := fault.New(vault.ErrConflict, "%s %s: already superseded by %s", verb, id, r.SupersededBy)
		return nil, e.WithHint("%s the newer event instead: memvault %s %s", verb, verb, r.SupersededBy)
	}
	return r, nil
}

// CloseCommitment closes an open commitment, with an optional note.
func CloseCommitment(tx *vault.Tx, id, note string) (*vault.Event, error) {
	r, err := target(tx, "close", id)
	if err != nil {
		return nil, err
	}
	if r.EffectiveKind() != "commitment.open" {
		return nil, fault.New(vault.ErrConflict, "close %s: is a %s, not a commitment", id, r.Kind)
	}
	if r.ClosedBy != "" {
		return nil, fault.New(vault.ErrConflict, "close %s: already closed by %s", id, r.ClosedBy)
	}
	if err := vault.CheckText("note", note, true); err != nil {
		return nil, err
	}
	return tx.Append(&vault.Event{Kind: "commitment.close", Thread: r.Thread, Text: note,
		Links: []string{id}, Source: tx.Source()}), nil
}

// Retract withdraws an event. Nothing is deleted: the retraction is a new
// event, and readers stop treating the target as current.
func Retract(tx *vault.Tx, id, why string) (*vault.Event, error) {
	r, err := target(tx, "retract", id)
	if err != nil {
		return nil, err
	}
	if r.Kind == "retract" {
		e := fault.New(vault.ErrConflict, "retract %s: is itself a retraction", id)
		return nil, e.WithHint("record the fact again with memvault remember")
	}
	if err := vault.CheckText("why", why, false); err != nil {
		return nil, err
	}
	return tx.Append(&vault.Event{Kind: "retract", Thread: r.Thread, Text: why,
		Links: []string{id}, Source: tx.Source()}), nil
}

// Supersede replaces an event's text with a new version. The new event
// takes over the old one's kind and thread.
func Supersede(tx *vault.Tx, id, text string) (*vault.Event, error) {
	r, err := target(tx, "supersede", id)
	if err != nil {
		return nil, err
	}
	if r.Kind == "retract" || r.Kind == "commitment.close" {
		return nil, fault.New(vault.ErrConflict, "supersede %s: a %s cannot be superseded", id, r.Kind)
	}
	if err := vault.CheckText("text", text, false); err != nil {
		return nil, err
	}
	data, _ := json.Marshal(map[string]string{"replaces_kind": r.EffectiveKind()})
	return tx.Append(&vault.Event{Kind: "supersede", Thread: r.Thread, Text: text,
		Links: []string{id}, Data: data, Source: tx.Source()}), nil
}
