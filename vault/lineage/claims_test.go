package lineage

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/memory"
	"github.com/memvault/memvault/vault/node"
	"github.com/memvault/memvault/vault/testvault"
	"github.com/memvault/memvault/vault/transcript"
)

// claimWorld is a vault holding a commitment and a decision in every state
// a claim can meet them in.
type claimWorld struct {
	v                                              *vault.Vault
	open, closed, retracted, superseded, newer     string
	reopened, fact, decision, oldDecision, dropped string
}

func newClaimWorld(t *testing.T) *claimWorld {
	t.Helper()
	w := &claimWorld{v: testvault.New(t)}
	_, err := w.v.Update(vault.TxOptions{}, func(tx *vault.Tx) error {
		mk := func(kind, text string) string {
			var ev *vault.Event
			var err error
			if kind == "commitment.open" {
				ev, err = memory.OpenCommitment(tx, memory.Input{Text: text})
			} else {
				ev, err = memory.Remember(tx, memory.Input{Kind: kind, Text: text})
			}
			if err != nil {
				t.Fatal(err)
			}
			return ev.ID
		}
		must := func(ev *vault.Event, err error) string {
			if err != nil {
				t.Fatal(err)
			}
			return ev.ID
		}
		w.open = mk("commitment.open", "ship the installer")
		w.closed = mk("commitment.open", "write the docs")
		must(memory.CloseCommitment(tx, w.closed, "written"))
		w.retracted = mk("commitment.open", "port to plan9")
		must(memory.Retract(tx, w.retracted, "not doing it"))
		w.superseded = mk("commitment.open", "ship on friday")
		w.newer = must(memory.Supersede(tx, w.superseded, "ship on monday"))
		w.reopened = mk("commitment.open", "fix the flaky test")
		cl := must(memory.CloseCommitment(tx, w.reopened, "fixed"))
		must(memory.Retract(tx, cl, "it flaked again"))
		w.fact = mk("fact", "the deploy key rotates on Fridays")
		w.decision = mk("decision", "use WAL")
		w.oldDecision = mk("decision", "use SQLite")
		must(memory.Supersede(tx, w.oldDecision, "use Bleve"))
		w.dropped = mk("decision", "use tabs")
		must(memory.Retract(tx, w.dropped, "spaces after all"))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func idJSON(id string) string { b, _ := json.Marshal(map[string]string{"id": id}); return string(b) }

type claimData struct {
	Type   string `json:"type"`
	Status string `json:"status"`
	Reason string `json:"reason"`
}

// TestClaimsAgainstState checks claims of every checked type against rows
// in every state: a claim is accepted only when the state bears it out; an
// id of the wrong kind, a retracted or superseded row, and an unknown id
// are rejected with a reason naming what was found.
func TestClaimsAgainstState(t *testing.T) {
	w := newClaimWorld(t)
	st, err := w.v.LoadState()
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		typ, id string
		status  string
		reason  string // a part of the reason
	}{
		{"commitment.open", w.open, ClaimAccepted, ""},
		{"commitment.closed", w.open, ClaimRejected, w.open + " is open"},
		{"commitment.closed", w.closed, ClaimAccepted, ""},
		{"commitment.open", w.closed, ClaimRejected, "is closed by e_"},
		{"commitment.open", w.retracted, ClaimRejected, "was retracted by e_"},
		{"commitment.closed", w.retracted, ClaimRejected, "was retracted by e_"},
		{"commitment.open", w.superseded, ClaimRejected, "was superseded by " + w.newer},
		{"commitment.open", w.newer, ClaimAccepted, ""}, // the new version counts as a commitment
		{"commitment.open", w.reopened, ClaimAccepted, ""},
		{"commitment.closed", w.reopened, ClaimRejected, "is open"},
		{"commitment.open", w.fact, ClaimRejected, "is a fact, not a commitment"},
		{"commitment.closed", w.decision, ClaimRejected, "is a decision, not a commitment"},
		{"decision.active", w.decision, ClaimAccepted, ""},
		{"decision.active", w.open, ClaimRejected, "is a commitment.open, not a decision"},
		{"decision.active", w.oldDecision, ClaimRejected, "was superseded by e_"},
		{"decision.active", w.dropped, ClaimRejected, "was retracted by e_"},
		{"event.exists", w.fact, ClaimAccepted, ""},
		{"event.exists", w.retracted, ClaimAccepted, ""}, // the ledger still holds it
		{"event.exists", "e_00000000000000000000000000", ClaimRejected, "no such event e_00000000000000000000000000"},
		{"commitment.open", "n_00000000000000000000000000", ClaimRejected, "no such event n_"},
		{"commitment.closed", w.open[:10], ClaimRejected, "no such event"}, // a prefix is not an id here
	}
	for _, tc := range cases {
		ev, err := claimEvent(st, tc.typ, idJSON(tc.id))
		if err != nil {
			t.Errorf("%s %s: %v", tc.typ, tc.id, err)
			continue
		}
		var d claimData
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			t.Fatal(err)
		}
		if d.Status != tc.status || !strings.Contains(d.Reason, tc.reason) || (tc.reason == "") != (d.Reason == "") {
			t.Errorf("%s %s: status %q reason %q, want %q with %q", tc.typ, tc.id, d.Status, d.Reason, tc.status, tc.reason)
		}
		if d.Status == ClaimRejected && !strings.HasPrefix(ev.Text, "rejected: ") {
			t.Errorf("%s %s: a rejected claim's text %q does not say so", tc.typ, tc.id, ev.Text)
		}
		linked := len(ev.Links) == 1 && ev.Links[0] == tc.id
		if exists := st.Get(tc.id) != nil; linked != exists {
			t.Errorf("%s %s: links %v (the event exists: %v)", tc.typ, tc.id, ev.Links, exists)
		}
	}
}

// TestClaimMalformed: what cannot be checked is refused, never recorded as
// a claim that holds; a type memvault has no check for is recorded as
// unchecked.
func TestClaimMalformed(t *testing.T) {
	w := newClaimWorld(t)
	st, err := w.v.LoadState()
	if err != nil {
		t.Fatal(err)
	}
	bad := []struct{ typ, raw, want string }{
		{"commitment.open", `[` + idJSON(w.open) + `]`, "must be a json object"},
		{"commitment.open", `42`, "must be a json object"},
		{"commitment.open", `"` + w.open + `"`, "must be a json object"},
		{"commitment.open", `null`, "must be a json object"},
		{"commitment.open", `{"id":42}`, `needs an "id" string`},
		{"commitment.open", `{"id":"  "}`, `needs an "id" string`},
		{"commitment.open", `{"ID":"` + w.open + `"}`, `needs an "id" string`},
		{"commitment.open", `{"id":"` + w.open + `"} {}`, "not json"},
		{"commitment.open", `{"id":"` + w.open + `"`, "not json"},
		{"commitment.open", ``, "empty"},
		{"mood", `{"a":"x\u0000y"}`, "NUL"},
		{"", `{}`, "empty type"},
		{"Commitment.open", idJSON(w.open), "lower-case"},
		{"commitment open", idJSON(w.open), "lower-case"},
		{"9lives", `{}`, "lower-case"},
		{"x=y", `{}`, "lower-case"},
		{strings.Repeat("a", maxClaimType+1), `{}`, "longer than"},
		{"mood", `"` + strings.Repeat("x", vault.MaxTextBytes) + `"`, "over the limit"},
	}
	for _, tc := range bad {
		ev, err := claimEvent(st, tc.typ, tc.raw)
		if err == nil || !errors.Is(err, vault.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("claim %.40q=%.60q: event %v, error %v; want ErrInvalid with %q", tc.typ, tc.raw, ev != nil, err, tc.want)
		}
	}
	// An unknown type is recorded as said, flagged unchecked; a large value
	// under the limit is kept whole.
	big := `{"note":"` + strings.Repeat("y", 100_000) + `"}`
	for _, raw := range []string{`{"ok":true}`, `[1,2,3]`, `12.50`, big} {
		ev, err := claimEvent(st, "build", raw)
		if err != nil {
			t.Fatalf("build=%.40s: %v", raw, err)
		}
		var d claimData
		_ = json.Unmarshal(ev.Data, &d)
		if d.Status != ClaimUnchecked || len(ev.Links) != 0 || ev.Text != "build="+raw {
			t.Errorf("build=%.40s: status %q links %v text %.60q", raw, d.Status, ev.Links, ev.Text)
		}
	}
	// A checked type's extra fields are kept; the id is what is checked.
	ev, err := claimEvent(st, " commitment.open ", ` {"id":"`+w.open+`","why":"see the plan"} `)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(ev.Data), `"why":"see the plan"`) || !strings.Contains(string(ev.Data), `"status":"accepted"`) {
		t.Errorf("data %s", ev.Data)
	}
}

// TestReflectionEvent: a reflection is a JSON object with a text; its links
// must name events; everything else is refused.
func TestReflectionEvent(t *testing.T) {
	w := newClaimWorld(t)
	st, err := w.v.LoadState()
	if err != nil {
		t.Fatal(err)
	}
	bad := []struct{ raw, want string }{
		{`["text"]`, "want a json object"},
		{`7`, "want a json object"},
		{`"just words"`, "want a json object"},
		{`just words`, "not json"},
		{`{}`, `needs a "text"`},
		{`{"text":"  "}`, `needs a "text"`},
		{`{"text":42}`, `needs a "text"`},
		{`{"text":"ok","links":"` + w.open + `"}`, "must be an array"},
		{`{"text":"ok","links":[42]}`, "must be an array"},
		{`{"text":"ok","links":["e_00000000000000000000000000"]}`, "no such event"},
		{`{"text":"a\u0000b"}`, "NUL"},
		{``, "empty"},
	}
	for _, tc := range bad {
		if ev, err := reflectionEvent(st, tc.raw); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("reflect %.60q: event %v, error %v; want %q", tc.raw, ev != nil, err, tc.want)
		}
	}
	ev, err := reflectionEvent(st, `{"text":" the installer took two tries ","links":["`+w.open+`","`+w.open+`"],"mood":"tired","links2":1}`)
	if err != nil {
		t.Fatal(err)
	}
	if ev.Kind != "reflection" || ev.Text != "the installer took two tries" || len(ev.Links) != 1 || ev.Links[0] != w.open {
		t.Errorf("event %+v", ev)
	}
	if string(ev.Data) != `{"reflection":{"links2":1,"mood":"tired"}}` {
		t.Errorf("data %s", ev.Data)
	}
}

// TestReflectionRedacted: a secret inside a reflection, in its text or in
// any field, never reaches the ledger.
func TestReflectionRedacted(t *testing.T) {
	v := testvault.New(t)
	const key = "AKIAIOSFODNN7EXAMPLE"
	_, err := v.Update(vault.TxOptions{}, func(tx *vault.Tx) error {
		_, err := RecordReflection(tx, "project:shop", `{"text":"pasted `+key+` by mistake","detail":{"cmd":"curl -u bob:`+key+`x"}}`)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	st, err := v.LoadState()
	if err != nil {
		t.Fatal(err)
	}
	var r *vault.Row
	for _, row := range st.Rows {
		if row.Kind == "reflection" {
			r = row
		}
	}
	if r == nil {
		t.Fatal("no reflection recorded")
	}
	line, _ := json.Marshal(r.Event)
	if strings.Contains(string(line), key) || !strings.Contains(r.Text, "[REDACTED:aws-access-key]") ||
		!strings.Contains(string(r.Data), `"redacted"`) || r.Thread != "project:shop" || r.Source != "cli" {
		t.Errorf("recorded %s", line)
	}
	testvault.MustVerify(t, v)
}

// TestControlClaimsAndReflections runs a reply's control lines through a
// session summary: a claim about a commitment of another session is
// checked against it (the state holds rows beyond the session's), a claim
// after the CLOSE of the same reply sees the close, rejected claims and a
// malformed REFLECT are reported with their reasons in the node, and
// summarizing again records nothing new.
func TestControlClaimsAndReflections(t *testing.T) {
	w := newClaimWorld(t) // its rows belong to no session
	v := w.v
	ref := transcript.Ref{Agent: v.Config.Agent, Session: "s1"}
	reply := strings.Join([]string{
		"CLOSE: " + w.open + " shipped",
		"CLAIM: commitment.closed=" + idJSON(w.open),
		"CLAIM: commitment.closed=" + idJSON(w.reopened),
		"CLAIM: event.exists=" + idJSON("e_00000000000000000000000000"),
		"CLAIM: decision.active=" + idJSON(w.decision),
		"CLAIM: commitment.open=[1]",
		"REFLECT: {\"text\":\"closing went fine\",\"links\":[\"" + w.open + "\"]}",
		"REFLECT: {\"insight\":\"no text here\"}",
		"REFLECT: [1,2]",
	}, "\n")
	_, err := v.Update(vault.TxOptions{Session: "s1"}, func(tx *vault.Tx) error {
		_, _, err := tx.AppendText(ref, []transcript.Message{{Role: transcript.RoleUser, Text: "close it"}, assistant(reply)})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	summarize := func() *node.Node {
		var n *node.Node
		_, err := v.Update(vault.TxOptions{Session: "s1"}, func(tx *vault.Tx) error {
			var err error
			n, _, err = Summarize(tx, ref, SummaryOptions{Thread: "project:shop"})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	n := summarize()
	for _, want := range []string{
		"): commitment.closed=" + idJSON(w.open) + "\n", // accepted: under Recorded
		"(claim rejected: " + w.reopened + " is open)",
		"(claim rejected: no such event e_00000000000000000000000000)",
		"CLAIM: commitment.open=[1] → skipped: claim commitment.open: value must be a json object",
		"REFLECT: {\"insight\":\"no text here\"} → skipped: reflection: needs a \"text\" string",
		"REFLECT: [1,2] → skipped: reflection: want a json object",
		"## Reflections\n\n- `e_",
		"(about `" + w.open + "`): closing went fine",
	} {
		if !strings.Contains(n.Body, want) {
			t.Errorf("node body lacks %q:\n%s", want, n.Body)
		}
	}
	kinds := testvault.Kinds(t, v)
	if kinds["claim"] != 4 || kinds["reflection"] != 1 || kinds["commitment.close"] != 3 {
		t.Errorf("kinds %v: want 4 claims, 1 reflection, 3 closes (2 of the world)", kinds)
	}
	st, err := v.LoadState()
	if err != nil {
		t.Fatal(err)
	}
	statuses := map[string]int{}
	for _, r := range st.Rows {
		if r.Kind == "claim" {
			var d claimData
			_ = json.Unmarshal(r.Data, &d)
			statuses[d.Status]++
			if r.Source != "control" || r.Session != "s1" || r.Thread != "project:shop" {
				t.Errorf("claim %s: source %q session %q thread %q", r.ID, r.Source, r.Session, r.Thread)
			}
		}
	}
	if statuses[ClaimAccepted] != 2 || statuses[ClaimRejected] != 2 {
		t.Errorf("claim statuses %v: want 2 accepted (the close seen), 2 rejected", statuses)
	}
	// Again: nothing new, the same report.
	n2 := summarize()
	if k := testvault.Kinds(t, v); k["claim"] != 4 || k["reflection"] != 1 {
		t.Errorf("summarizing again recorded more: %v", k)
	}
	if !strings.Contains(n2.Body, "(claim rejected: "+w.reopened+" is open)") {
		t.Errorf("the second summary lost the rejection:\n%s", n2.Body)
	}
	testvault.MustVerify(t, v)
}

// TestReplyStoredTwiceRecordsOnce: a Stop hook that runs before the harness
// wrote its reply to the transcript stores the reply from its payload;
// the transcript's own copy comes in later under another id, its line
// endings its own. Their control lines are one reply's: recorded once,
// and a DONE: of a later turn closes the one next action there is.
func TestReplyStoredTwiceRecordsOnce(t *testing.T) {
	v := testvault.New(t)
	ref := transcript.Ref{Agent: v.Config.Agent, Session: "s1"}
	extract := func(msgs ...transcript.Message) {
		t.Helper()
		_, err := v.Update(vault.TxOptions{Session: "s1", NoCommit: true}, func(tx *vault.Tx) error {
			_, _, err := tx.AppendText(ref, msgs)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		_, err = v.Update(vault.TxOptions{Session: "s1"}, func(tx *vault.Tx) error {
			return ExtractControls(tx, ref, "project:shop")
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	reply := "On it.\nNEXT: write the release notes\nDECISION: freeze the release branch\n"
	hookCopy := assistant(reply)
	hookCopy.Source = transcript.Source{Format: transcript.HookFormat}
	extract(transcript.Message{Role: transcript.RoleUser, Text: "plan the release"}, hookCopy)
	harnessCopy := assistant(strings.ReplaceAll(reply, "\n", "\r\n"))
	harnessCopy.ID = "8ff1ce4e-reply"
	extract(harnessCopy)
	kinds := testvault.Kinds(t, v)
	if kinds["next"] != 1 || kinds["decision"] != 1 {
		t.Fatalf("kinds %v: want one next and one decision for one reply stored twice", kinds)
	}
	extract(transcript.Message{Role: transcript.RoleUser, Text: "done?"}, assistant("DONE: write the release notes"))
	st, err := v.LoadState()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range st.Rows {
		if r.Kind == "next" && r.Holds() {
			t.Errorf("next action %s %q is still open after its DONE:", r.ID, r.Text)
		}
	}
	// The same words in another reply are that reply's own lines.
	extract(assistant("Again.\nNEXT: write the release notes"))
	if n := testvault.Kinds(t, v)["next"]; n != 2 {
		t.Errorf("%d next rows after a second reply naming it again; want 2", n)
	}
}
