package vault

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/memvault/memvault/vault/canonical"
	"github.com/memvault/memvault/vault/fault"
)

// MaxTextBytes bounds one event's text. The ledger is memory, not a file
// store; a megabyte is far beyond any fact or decision.
const MaxTextBytes = 1 << 20

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

func CheckText(what, s string, allowEmpty bool) error {
	switch {
	case !utf8.ValidString(s):
		return fault.New(ErrInvalid, "%s: not valid utf-8", what)
	case strings.IndexByte(s, 0) >= 0:
		// git refuses a NUL in a commit message (fsck), and text becomes
		// commit subjects and bodies.
		return fault.New(ErrInvalid, "%s: contains a NUL byte", what)
	case len(s) > MaxTextBytes:
		e := fault.New(ErrInvalid, "%s: %d bytes is over the limit of %d (1 MiB)", what, len(s), MaxTextBytes)
		return e.WithHint("store large material as a transcript and remember a short summary")
	case !allowEmpty && strings.TrimSpace(s) == "":
		return fault.New(ErrInvalid, "%s: empty", what)
	}
	return nil
}

// CleanText makes text from a harness storable as it is: invalid UTF-8 and
// NUL bytes become U+FFFD. Text a person types is refused instead
// (checkText); a hook's text is kept, since a hook must not lose a prompt.
func CleanText(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if strings.IndexByte(s, 0) >= 0 {
		s = strings.ReplaceAll(s, "\x00", "\uFFFD")
	}
	return s
}

// validate checks the parts of in that need no ledger lookups.
func (in *Input) validate() error {
	if in.Thread != "" {
		t, err := ParseThread(in.Thread)
		if err != nil {
			return err
		}
		in.Thread = t.String()
	}
	if len(in.Data) > 0 {
		// Checked before decoding: the decoder would silently turn invalid
		// UTF-8 into U+FFFD.
		if !utf8.Valid(in.Data) {
			return fault.New(ErrInvalid, "data: not valid utf-8")
		}
		v, err := canonical.Decode(in.Data)
		if err != nil {
			return fault.New(ErrInvalid, "data: not valid json: %v", err)
		}
		if HoldsNUL(v) {
			return fault.New(ErrInvalid, "data: a string holds a NUL character (\\u0000)")
		}
		if _, ok := v.(map[string]any); !ok {
			return fault.New(ErrInvalid, "data: must be a json object")
		}
		var buf bytes.Buffer
		if err := canonical.Write(&buf, v); err != nil {
			return fault.New(ErrInvalid, "data: %v", err)
		}
		in.Data = buf.Bytes()
	}
	for _, l := range in.Links {
		if err := CheckName("link", l); err != nil {
			return err
		}
	}
	return nil
}

// HoldsNUL reports whether a decoded JSON value has a NUL in a string or a
// key: git refuses NUL in what it stores as text.
func HoldsNUL(v any) bool {
	switch t := v.(type) {
	case string:
		return strings.IndexByte(t, 0) >= 0
	case []any:
		return slices.ContainsFunc(t, HoldsNUL)
	case map[string]any:
		for k, x := range t {
			if strings.IndexByte(k, 0) >= 0 || HoldsNUL(x) {
				return true
			}
		}
	}
	return false
}

// checkLinks makes sure every link names an existing event or node.
func (tx *Tx) checkLinks(links []string) error {
	if len(links) == 0 {
		return nil
	}
	st, err := tx.State()
	if err != nil {
		return err
	}
	var nodes map[string]bool
	for _, l := range links {
		if isNodeID(l) {
			if nodes == nil {
				if nodes, err = tx.v.nodeIDs(); err != nil {
					return err
				}
			}
			if !nodes[l] {
				return fault.New(ErrNotFound, "link %s: no such node", l)
			}
			continue
		}
		if st.Get(l) == nil {
			e := fault.New(ErrNotFound, "link %s: no such event", l)
			return e.WithHint("list event ids with: memvault ledger")
		}
	}
	return nil
}

// Remember records a memory row of one of RememberKinds.
func (tx *Tx) Remember(in Input) (*Event, error) {
	if in.Kind == "" {
		in.Kind = "fact"
	}
	if !slices.Contains(RememberKinds, in.Kind) {
		e := fault.New(ErrInvalid, "kind %q: unknown", in.Kind)
		return nil, e.WithHint("use one of: %s", strings.Join(RememberKinds, ", "))
	}
	return tx.record(in, false)
}

// OpenCommitment records a promise to do something; its id is what closes it.
func (tx *Tx) OpenCommitment(in Input) (*Event, error) {
	in.Kind = "commitment.open"
	return tx.record(in, false)
}

func (tx *Tx) record(in Input, allowEmpty bool) (*Event, error) {
	if err := CheckText("text", in.Text, allowEmpty); err != nil {
		return nil, err
	}
	if err := in.validate(); err != nil {
		return nil, err
	}
	if err := tx.checkLinks(in.Links); err != nil {
		return nil, err
	}
	if in.Source == "" {
		in.Source = tx.Source()
	}
	return tx.Append(&Event{Kind: in.Kind, Thread: in.Thread, Text: in.Text,
		Links: in.Links, Data: in.Data, Source: in.Source}), nil
}

// target looks up the event a correction names and refuses corrections of
// rows that no longer hold.
func (tx *Tx) target(verb, id string) (*Row, error) {
	if err := CheckName("id", id); err != nil {
		return nil, err
	}
	st, err := tx.State()
	if err != nil {
		return nil, err
	}
	r := st.Get(id)
	switch {
	case r == nil:
		e := fault.New(ErrNotFound, "%s %s: no such event", verb, id)
		return nil, e.WithHint("list event ids with: memvault ledger")
	case r.RetractedBy != "":
		return nil, fault.New(ErrConflict, "%s %s: already retracted by %s", verb, id, r.RetractedBy)
	case r.SupersededBy != "":
		e := fault.New(ErrConflict, "%s %s: already superseded by %s", verb, id, r.SupersededBy)
		return nil, e.WithHint("%s the newer event instead: memvault %s %s", verb, verb, r.SupersededBy)
	}
	return r, nil
}

// CloseCommitment closes an open commitment, with an optional note.
func (tx *Tx) CloseCommitment(id, note string) (*Event, error) {
	r, err := tx.target("close", id)
	if err != nil {
		return nil, err
	}
	if r.EffectiveKind() != "commitment.open" {
		return nil, fault.New(ErrConflict, "close %s: is a %s, not a commitment", id, r.Kind)
	}
	if r.ClosedBy != "" {
		return nil, fault.New(ErrConflict, "close %s: already closed by %s", id, r.ClosedBy)
	}
	if err := CheckText("note", note, true); err != nil {
		return nil, err
	}
	return tx.Append(&Event{Kind: "commitment.close", Thread: r.Thread, Text: note,
		Links: []string{id}, Source: tx.Source()}), nil
}

// Retract withdraws an event. Nothing is deleted: the retraction is a new
// event, and readers stop treating the target as current.
func (tx *Tx) Retract(id, why string) (*Event, error) {
	r, err := tx.target("retract", id)
	if err != nil {
		return nil, err
	}
	if r.Kind == "retract" {
		e := fault.New(ErrConflict, "retract %s: is itself a retraction", id)
		return nil, e.WithHint("record the fact again with memvault remember")
	}
	if err := CheckText("why", why, false); err != nil {
		return nil, err
	}
	return tx.Append(&Event{Kind: "retract", Thread: r.Thread, Text: why,
		Links: []string{id}, Source: tx.Source()}), nil
}

// Supersede replaces an event's text with a new version. The new event
// takes over the old one's kind and thread.
func (tx *Tx) Supersede(id, text string) (*Event, error) {
	r, err := tx.target("supersede", id)
	if err != nil {
		return nil, err
	}
	if r.Kind == "retract" || r.Kind == "commitment.close" {
		return nil, fault.New(ErrConflict, "supersede %s: a %s cannot be superseded", id, r.Kind)
	}
	if err := CheckText("text", text, false); err != nil {
		return nil, err
	}
	data, _ := json.Marshal(map[string]string{"replaces_kind": r.EffectiveKind()})
	return tx.Append(&Event{Kind: "supersede", Thread: r.Thread, Text: text,
		Links: []string{id}, Data: data, Source: tx.Source()}), nil
}
