package lineage

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/memory"
	"github.com/memvault/memvault/vault/testvault"
)

// appendByHand appends ev to the ledger's last segment the way a person
// with an editor would: chained onto parent (the ledger's tip when ""),
// hash recomputed, so that only a judgement of its content can catch it.
// It returns ev's hash.
func appendByHand(t *testing.T, v *vault.Vault, ev *vault.Event, parent string) string {
	t.Helper()
	segs, _, err := vault.ListSegments(v.Root)
	if err != nil || len(segs) == 0 {
		t.Fatal(segs, err)
	}
	p := v.SegPath(segs[len(segs)-1])
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if parent == "" {
		lines := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
		last, _, err := vault.ParseLine(lines[len(lines)-1])
		if err != nil {
			t.Fatal(err)
		}
		parent = last.Hash
	}
	if ev.ID == "" {
		ev.ID = vault.NewID("e_", time.Now())
	}
	ev.TS, ev.Agent = vault.FormatTS(time.Now()), v.Config.Agent
	if ev.Source == "" {
		ev.Source = vault.SourceCLI
	}
	line, err := ev.Seal(parent)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, append(data, line...), 0o600); err != nil {
		t.Fatal(err)
	}
	return ev.Hash
}

// forgedClaim is a claim event that says status of typ about id.
func forgedClaim(typ, id, status string) *vault.Event {
	data, _ := json.Marshal(map[string]any{"type": typ, "value": map[string]string{"id": id}, "status": status})
	return &vault.Event{Kind: "claim", Text: typ + "=" + idJSON(id), Data: data}
}

func checkClaimsOf(t *testing.T, v *vault.Vault) []vault.Problem {
	t.Helper()
	ps, err := CheckClaims(v)
	if err != nil {
		t.Fatal(err)
	}
	return ps
}

// TestVerifyNamesForgedClaims: claims the check wrote, of every outcome,
// pass; a claim appended by hand that says accepted of what the state at
// its place refutes is named, one problem each, and a retraction of it
// settles it. So do a status no check writes and an accepted claim of a
// type memvault does not check. (Issue 33, item 9.)
func TestVerifyNamesForgedClaims(t *testing.T) {
	w := newClaimWorld(t)
	honest := []struct{ typ, id string }{
		{"commitment.open", w.open}, {"commitment.closed", w.open}, {"commitment.closed", w.closed},
		{"commitment.open", w.closed}, {"commitment.open", w.retracted}, {"commitment.open", w.superseded},
		{"commitment.open", w.reopened}, {"commitment.closed", w.reopened}, {"commitment.open", w.fact},
		{"decision.active", w.decision}, {"decision.active", w.oldDecision}, {"decision.active", w.dropped},
		{"event.exists", "e_00000000000000000000000000"},
	}
	var accepted string
	_, err := w.v.Update(vault.TxOptions{}, func(tx *vault.Tx) error {
		for _, c := range honest {
			ev, err := RecordClaim(tx, "", c.typ, idJSON(c.id))
			if err != nil {
				return err
			}
			if c.typ == "commitment.open" && c.id == w.open {
				accepted = ev.ID
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// What made a claim true may change later: the open commitment it
	// said was open is closed now. The claim was true at its write.
	if _, err := w.v.Update(vault.TxOptions{}, func(tx *vault.Tx) error {
		_, err := memory.CloseCommitment(tx, w.open, "shipped")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if ps := checkClaimsOf(t, w.v); len(ps) != 0 {
		t.Fatalf("claims the check wrote are named: %v (accepted one: %s)", ps, accepted)
	}

	forged := []struct {
		ev   *vault.Event
		want string
	}{
		{forgedClaim("commitment.closed", w.reopened, ClaimAccepted), "is open"},
		{forgedClaim("commitment.open", w.open, ClaimAccepted), "is closed by e_"},
		{forgedClaim("decision.active", w.oldDecision, ClaimAccepted), "was superseded by e_"},
		{forgedClaim("commitment.open", w.fact, ClaimAccepted), "is a fact, not a commitment"},
		{forgedClaim("event.exists", "e_00000000000000000000000000", ClaimAccepted), "no such event"},
		{forgedClaim("build.green", w.fact, ClaimAccepted), "no check for type"},
		{forgedClaim("commitment.open", w.open, "approved"), `status "approved"`},
		{forgedClaim("decision.active", w.decision, ClaimUnchecked), "always checked"},
	}
	for _, f := range forged {
		appendByHand(t, w.v, f.ev, "")
	}
	ps := checkClaimsOf(t, w.v)
	if len(ps) != len(forged) {
		t.Fatalf("%d problems for %d forged claims: %v", len(ps), len(forged), ps)
	}
	for i, f := range forged {
		if ps[i].ID != f.ev.ID || !strings.Contains(ps[i].Msg, f.want) || !strings.HasPrefix(ps[i].Msg, ForgedClaim) || ps[i].Line == 0 {
			t.Errorf("forged claim %d: problem %+v, want its id %s and %q", i, ps[i], f.ev.ID, f.want)
		}
	}

	// A retraction settles one.
	appendByHand(t, w.v, &vault.Event{Kind: "retract", Text: "forged", Links: []string{forged[0].ev.ID}}, "")
	if ps := checkClaimsOf(t, w.v); len(ps) != len(forged)-1 || ps[0].ID == forged[0].ev.ID {
		t.Fatalf("after retracting the first forged claim: %v", ps)
	}
}

// TestVerifyClaimsAcrossAMerge: two clones' lines merged. Clone B closed a
// commitment while clone A, not having seen it, claimed it open: A's
// claim was true where it was written and is not named, whatever order the
// merge left the lines in. The same claim written on top of the close is.
func TestVerifyClaimsAcrossAMerge(t *testing.T) {
	v := testvault.New(t)
	var open *vault.Event
	if _, err := v.Update(vault.TxOptions{}, func(tx *vault.Tx) error {
		var err error
		open, err = memory.OpenCommitment(tx, memory.Input{Text: "ship the installer"})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	base := appendByHand(t, v, &vault.Event{Kind: "fact", Text: "the base both clones share"}, "")
	closeB := appendByHand(t, v, &vault.Event{Kind: "commitment.close", Text: "shipped", Links: []string{open.ID}}, base)
	claimA := appendByHand(t, v, forgedClaim("commitment.open", open.ID, ClaimAccepted), base)
	tips, _ := json.Marshal(map[string][]string{"tips": {closeB, claimA}})
	appendByHand(t, v, &vault.Event{Kind: vault.KindJoin, Text: "merged", Data: tips}, claimA)
	if ps := checkClaimsOf(t, v); len(ps) != 0 {
		t.Fatalf("a claim that never saw the concurrent close is named: %v", ps)
	}
	late := forgedClaim("commitment.open", open.ID, ClaimAccepted)
	appendByHand(t, v, late, "")
	if ps := checkClaimsOf(t, v); len(ps) != 1 || ps[0].ID != late.ID || !strings.Contains(ps[0].Msg, "is closed by") {
		t.Fatalf("a claim written after the merge brought the close: %v", ps)
	}
}
