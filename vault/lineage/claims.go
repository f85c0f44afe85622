package lineage

// Claims and reflections: what an agent says about the vault's state, and
// what it notes about how its work went (docs/POLICY.md). A claim is
// checked against the folded state before it is recorded; one that the
// state contradicts, or that names an unknown id, is recorded as a rejected
// claim with the reason, never dropped. The `CLAIM:`/`REFLECT:` control
// lines and the `memvault claim`/`memvault reflect` verbs build their
// events here, so a reply line and a CLI verb make the same row.

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/canonical"
	"github.com/memvault/memvault/vault/fault"
	"github.com/memvault/memvault/vault/fileio"
)

// The status of a recorded claim, in its data.status.
const (
	ClaimAccepted  = "accepted"  // a checked type, and the state agrees
	ClaimRejected  = "rejected"  // a checked type, and the state does not (data.reason says why)
	ClaimUnchecked = "unchecked" // a type memvault has no check for: recorded as said
)

// maxClaimType bounds a claim type's length, in bytes.
const maxClaimType = 64

// ClaimTypes lists the claim types memvault checks against the state. Each
// takes a JSON object with the full id of an event in "id".
func ClaimTypes() []string {
	return []string{"commitment.closed", "commitment.open", "decision.active", "event.exists"}
}

// claimEvent builds the claim event of type typ whose value is the JSON
// text raw, checked against st. A value that is not JSON, a malformed type,
// or a checked type without an id is an ErrInvalid error: there is nothing
// to check, so nothing is recorded. Otherwise the event is returned with
// data {type, value, status[, reason]}: accepted, rejected with the reason,
// or unchecked; a checked claim links the event it is about when the
// ledger holds it.
func claimEvent(st *vault.State, typ, raw string) (*vault.Event, error) {
	typ, raw = strings.TrimSpace(typ), strings.TrimSpace(raw)
	if err := checkClaimType(typ); err != nil {
		return nil, err
	}
	if err := vault.CheckText("claim value", raw, false); err != nil {
		return nil, err
	}
	v, err := canonical.Decode([]byte(raw))
	if err != nil {
		return nil, fault.New(vault.ErrInvalid, "claim %s: value is not json: %v", typ, err)
	}
	if canonical.HoldsNUL(v) {
		return nil, fault.New(vault.ErrInvalid, "claim %s: a string holds a NUL character (\\u0000)", typ)
	}
	data := map[string]any{"type": typ, "value": v, "status": ClaimUnchecked}
	ev := &vault.Event{Kind: "claim", Text: typ + "=" + raw}
	if slices.Contains(ClaimTypes(), typ) {
		id, err := claimID(typ, v)
		if err != nil {
			return nil, err
		}
		if st.Get(id) != nil {
			ev.Links = []string{id}
		}
		if reason := checkClaim(st, typ, id); reason != "" {
			data["status"], data["reason"] = ClaimRejected, reason
			ev.Text = "rejected: " + ev.Text + " (" + reason + ")"
		} else {
			data["status"] = ClaimAccepted
		}
	}
	ev.Data, _ = json.Marshal(data)
	return ev, nil
}

// TextClaimData returns the data of a claim remembered as free text
// (`remember --kind claim`, the MCP remember tool): a sentence has no id
// to check, so it is recorded as an unchecked claim of type "text", like
// a claim of a type memvault has no check for. Its data may carry other
// fields, but not the checker's own (type, status, reason): a free-text
// claim must never read as accepted. data that is not a JSON object is
// returned as it is, for the transaction to refuse as for any kind.
func TextClaimData(data json.RawMessage) (json.RawMessage, error) {
	fields := map[string]any{}
	if len(data) > 0 {
		v, err := canonical.Decode(data)
		obj, ok := v.(map[string]any)
		if err != nil || !ok {
			return data, nil
		}
		fields = obj
	}
	for _, k := range []string{"type", "status", "reason"} {
		if _, ok := fields[k]; ok {
			e := fault.New(vault.ErrInvalid, "claim: data.%s is the check's to set", k)
			return nil, e.WithHint("memvault claim TYPE JSON records a claim checked against the state")
		}
	}
	fields["type"], fields["status"] = "text", ClaimUnchecked
	return json.Marshal(fields)
}

// checkClaimType accepts a type of lower-case letters, digits and . _ -,
// starting with a letter: a type is a name, not a sentence.
func checkClaimType(typ string) error {
	if typ == "" {
		return fault.New(vault.ErrInvalid, "claim: empty type").WithHint("want TYPE=JSON, e.g. commitment.closed={\"id\":\"e_…\"}")
	}
	if len(typ) > maxClaimType {
		return fault.New(vault.ErrInvalid, "claim: type longer than %d bytes", maxClaimType)
	}
	for i, r := range typ {
		ok := r >= 'a' && r <= 'z' || i > 0 && (r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-')
		if !ok {
			return fault.New(vault.ErrInvalid, "claim: type %q: want lower-case letters, digits, '.', '_' or '-', starting with a letter", typ)
		}
	}
	return nil
}

// claimID is the "id" of a checked claim's value.
func claimID(typ string, v any) (string, error) {
	obj, ok := v.(map[string]any)
	if !ok {
		return "", fault.New(vault.ErrInvalid, "claim %s: value must be a json object with an \"id\"", typ)
	}
	id, ok := obj["id"].(string)
	if !ok || strings.TrimSpace(id) == "" {
		return "", fault.New(vault.ErrInvalid, "claim %s: value needs an \"id\" string", typ)
	}
	return strings.TrimSpace(id), nil
}

// checkClaim says why the state contradicts a claim of a checked type
// about id, or "" when it agrees.
func checkClaim(st *vault.State, typ, id string) string {
	r := st.Get(id)
	if r == nil {
		return "no such event " + id
	}
	want := map[string]string{"commitment.open": "commitment.open", "commitment.closed": "commitment.open",
		"decision.active": "decision"}[typ]
	if want == "" { // event.exists: whatever became of it, the ledger holds it
		return ""
	}
	if r.EffectiveKind() != want {
		return fmt.Sprintf("%s is a %s, not a %s", id, r.Kind, strings.TrimSuffix(want, ".open"))
	}
	switch {
	case r.RetractedBy != "":
		return fmt.Sprintf("%s was retracted by %s", id, r.RetractedBy)
	case r.SupersededBy != "":
		return fmt.Sprintf("%s was superseded by %s", id, r.SupersededBy)
	}
	switch typ {
	case "commitment.open":
		if r.ClosedBy != "" {
			return fmt.Sprintf("%s is closed by %s", id, r.ClosedBy)
		}
	case "commitment.closed":
		if r.ClosedBy == "" {
			return id + " is open"
		}
	case "decision.active":
		if s := st.Status(r); s != vault.StatusActive {
			return id + " is " + s
		}
	}
	return ""
}

// ClaimNote is what a claim row's data says about its check, for reports:
// "claim rejected: <reason>", "claim unchecked", or "" for an accepted
// claim and for any other row.
func ClaimNote(r *vault.Row) string {
	if r == nil || r.Kind != "claim" {
		return ""
	}
	var d struct {
		Status string `json:"status"`
		Reason string `json:"reason"`
	}
	_ = json.Unmarshal(r.Data, &d)
	switch d.Status {
	case ClaimRejected:
		return "claim rejected: " + d.Reason
	case ClaimUnchecked:
		return "claim unchecked"
	}
	return ""
}

// reflectionEvent builds the reflection event of the JSON object raw: its
// "text" (required, a non-empty string) becomes the event's text, its
// "links" (optional, full ids of events the ledger holds) the event's
// links, and the other fields are kept in data.reflection. Anything else
// (not JSON, not an object, no text, a link to nothing) is an error, and
// nothing is recorded.
func reflectionEvent(st *vault.State, raw string) (*vault.Event, error) {
	raw = strings.TrimSpace(raw)
	if err := vault.CheckText("reflection", raw, false); err != nil {
		return nil, err
	}
	v, err := canonical.Decode([]byte(raw))
	if err != nil {
		return nil, fault.New(vault.ErrInvalid, "reflection: not json: %v", err)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, fault.New(vault.ErrInvalid, "reflection: want a json object with a \"text\"")
	}
	if canonical.HoldsNUL(obj) {
		return nil, fault.New(vault.ErrInvalid, "reflection: a string holds a NUL character (\\u0000)")
	}
	text, ok := obj["text"].(string)
	if !ok || strings.TrimSpace(text) == "" {
		return nil, fault.New(vault.ErrInvalid, "reflection: needs a \"text\" string")
	}
	links, err := reflectionLinks(st, obj["links"])
	if err != nil {
		return nil, err
	}
	rest := map[string]any{}
	for k, x := range obj {
		if k != "text" && k != "links" {
			rest[k] = x
		}
	}
	ev := &vault.Event{Kind: "reflection", Text: strings.TrimSpace(text), Links: links}
	if len(rest) > 0 {
		ev.Data, _ = json.Marshal(map[string]any{"reflection": rest})
	}
	return ev, nil
}

// reflectionLinks checks a reflection's "links": absent, or an array of
// full ids of events st holds, each once.
func reflectionLinks(st *vault.State, v any) ([]string, error) {
	if v == nil {
		return nil, nil
	}
	list, ok := v.([]any)
	if !ok {
		return nil, fault.New(vault.ErrInvalid, "reflection: \"links\" must be an array of event ids")
	}
	var out []string
	for _, x := range list {
		id, ok := x.(string)
		if !ok {
			return nil, fault.New(vault.ErrInvalid, "reflection: \"links\" must be an array of event ids")
		}
		if st.Get(id) == nil {
			return nil, fault.New(vault.ErrNotFound, "reflection: link %s: no such event", vault.Clip(id, 40))
		}
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out, nil
}

// mentionedIDs lists the ids a CLAIM line's value or a REFLECT line's
// links name, so that the state a session's control lines are checked
// against holds them (like the targets of CLOSE lines). Only strings that
// look like event ids are kept.
func mentionedIDs(c ControlLine) []string {
	var raw string
	switch c.Verb {
	case "CLAIM":
		_, raw, _ = strings.Cut(c.Arg, "=")
	case "REFLECT":
		raw = c.Arg
	default:
		return nil
	}
	var v struct {
		ID    any   `json:"id"`
		Links []any `json:"links"`
	}
	if json.Unmarshal([]byte(strings.TrimSpace(raw)), &v) != nil {
		return nil
	}
	var ids []string
	for _, x := range append(v.Links, v.ID) {
		if id, ok := x.(string); ok && strings.HasPrefix(id, vault.EventIDMarker) && fileio.CheckName("id", id) == nil &&
			!strings.ContainsAny(id, "\" ") {
			ids = append(ids, id)
		}
	}
	return ids
}

// RecordClaim checks and records a claim in tx, in thread ("" for none):
// what `memvault claim` (and the MCP server) runs. A rejected claim is
// recorded too; its data.status says so.
func RecordClaim(tx *vault.Tx, thread, typ, raw string) (*vault.Event, error) {
	return record(tx, thread, func(st *vault.State) (*vault.Event, error) { return claimEvent(st, typ, raw) })
}

// RecordReflection checks and records a reflection in tx, in thread:
// what `memvault reflect` runs.
func RecordReflection(tx *vault.Tx, thread, raw string) (*vault.Event, error) {
	return record(tx, thread, func(st *vault.State) (*vault.Event, error) { return reflectionEvent(st, raw) })
}

func record(tx *vault.Tx, thread string, build func(*vault.State) (*vault.Event, error)) (*vault.Event, error) {
	if thread != "" {
		th, err := vault.ParseThread(thread)
		if err != nil {
			return nil, err
		}
		thread = th.String()
	}
	st, err := tx.State()
	if err != nil {
		return nil, err
	}
	ev, err := build(st)
	if err != nil {
		return nil, err
	}
	ev.Thread, ev.Source = thread, tx.Source()
	return tx.Append(ev), nil
}
