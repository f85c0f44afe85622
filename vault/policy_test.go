package vault

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/memvault/memvault/vault/vaulttest"
)

// kindsOf lists the kinds of the ledger's events, in order.
func kindsOf(t *testing.T, v *Vault) []string {
	t.Helper()
	st, err := v.LoadState()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range st.Rows {
		out = append(out, r.Kind)
	}
	return out
}

// refusedWrite runs fn in a transaction of opts and checks that the
// policy refused it: exit class forbidden, one new commit that holds
// exactly one violation more, nothing else of the transaction written,
// and a vault that verifies.
func refusedWrite(t *testing.T, v *Vault, opts TxOptions, fn func(*Tx) error) *Event {
	t.Helper()
	before := kindsOf(t, v)
	head, _ := v.Head()
	files := vaulttest.Files(t, v.Root)
	_, err := v.Update(opts, fn)
	if !errors.Is(err, ErrForbidden) {
		t.Fatalf("want a refusal by the policy, got %v", err)
	}
	after := kindsOf(t, v)
	if len(after) != len(before)+1 || after[len(after)-1] != KindViolation {
		t.Fatalf("the refusal left %v after %v; want one violation more", after, before)
	}
	now, _ := v.Head()
	if now == head {
		t.Fatal("the violation was not committed")
	}
	// Only the ledger changed, by the violation's line.
	for path, data := range vaulttest.Files(t, v.Root) {
		if was, ok := files[path]; (!ok || string(was) != string(data)) && !strings.HasPrefix(path, "ledger/") && !strings.HasPrefix(path, ".git/") {
			t.Errorf("%s changed by a refused write", path)
		}
	}
	mustVerify(t, v)
	vaulttest.Fsck(t, v.Root)
	st, _ := v.LoadState()
	return st.Rows[len(st.Rows)-1].Event
}

// TestPolicyRefusesInsideTheTransaction: whatever writes the event, the
// transaction checks it, --force included, and a refused write leaves
// only its violation.
func TestPolicyRefusesInsideTheTransaction(t *testing.T) {
	v := newVault(t)
	for _, force := range []bool{false, true} {
		opts := TxOptions{Source: SourceMCP, Session: "s1", Harness: "claude-code", Force: force, Command: "mcp remember"}
		viol := refusedWrite(t, v, opts, func(tx *Tx) error {
			// Other work of the same transaction: a fact, a file, a
			// transcript line. None of it may land.
			if _, err := queueRow(tx, "fact", "a harmless fact"); err != nil {
				return err
			}
			if _, err := queueRow(tx, "constraint", "never deploy on fridays"); err != nil {
				return err
			}
			tx.WriteFile(MustRel("threads/topic/x.md"), []byte("# x\n"))
			return nil
		})
		if viol.Source != SourcePolicy || viol.Session != "s1" || viol.Harness != "claude-code" || viol.Agent != v.Config.Agent {
			t.Errorf("violation's who: %+v", viol)
		}
		for _, want := range []string{`"kind":"constraint"`, `"source":"mcp"`, `"command":"mcp remember"`, `"sources":["cli","edit"]`} {
			if !strings.Contains(string(viol.Data), want) {
				t.Errorf("violation data %s lacks %s", viol.Data, want)
			}
		}
		if strings.Contains(viol.Text+string(viol.Data), "fridays") {
			t.Errorf("the violation keeps the refused text: %s %s", viol.Text, viol.Data)
		}
	}
	if _, err := os.Stat(filepath.Join(v.Root, "threads/topic/x.md")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused transaction's file was written: %v", err)
	}
	// A person's constraint is written.
	if _, err := v.Update(TxOptions{}, func(tx *Tx) error {
		_, err := queueRow(tx, "constraint", "never deploy on fridays")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if k := kindsOf(t, v); k[len(k)-1] != "constraint" {
		t.Fatalf("a person's constraint was not written: %v", k)
	}
}

// TestPolicyCannotBeWrittenFromAnAgentPath: the policy is an event, and
// an agent's path (MCP, a control line, an executor) may not write one,
// whatever the policy in effect says; a person at the command line may.
func TestPolicyCannotBeWrittenFromAnAgentPath(t *testing.T) {
	v := newVault(t)
	for _, src := range []string{SourceMCP, SourceControl, SourceExecutor, SourceHook} {
		refusedWrite(t, v, TxOptions{Source: src}, func(tx *Tx) error {
			_, err := tx.SetPolicy(map[string][]string{"constraint": {SourceCLI, SourceEdit, src}})
			return err
		})
	}
	pol, err := v.LoadPolicy()
	if err != nil {
		t.Fatal(err)
	}
	if got := pol.Rule("constraint").Sources; !slices.Equal(got, []string{SourceCLI, SourceEdit}) {
		t.Fatalf("a refused policy changed the rule: %v", got)
	}
	// A person widens the policy to hooks: that holds, and the policy
	// itself still cannot be granted to an agent's path.
	if _, err := v.Update(TxOptions{}, func(tx *Tx) error {
		_, err := tx.SetPolicy(map[string][]string{"constraint": {SourceCLI, SourceHook}})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	pol, _ = v.LoadPolicy()
	if _, ok := pol.Allows("constraint", SourceHook); !ok {
		t.Fatal("the person's rule does not hold")
	}
	if _, ok := pol.Allows("constraint", SourceEdit); ok {
		t.Fatal("the old rule still holds")
	}
	for _, rules := range []map[string][]string{
		{KindPolicy: {SourceCLI, SourceMCP}}, {KindPolicy: {SourceAny}}, {KindPolicy: {SourceEdit}},
		{KindViolation: {SourceCLI}}, {"head.rendered": {SourceControl}}, {"node.created": {SourceAny}},
		{"constraint": {"person"}}, {"constraint": {SourceAny, SourceCLI}}, {"Bad Kind": {SourceCLI}},
	} {
		_, err := v.Update(TxOptions{}, func(tx *Tx) error { _, err := tx.SetPolicy(rules); return err })
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("SetPolicy(%v): %v, want invalid", rules, err)
		}
	}
}

// TestSystemKindsStayMemvaults: no source an agent drives writes
// memvault's bookkeeping, nor anyone a violation, whatever a rule says;
// memvault's own paths write it under any policy.
func TestSystemKindsStayMemvaults(t *testing.T) {
	v := newVault(t)
	for _, c := range []struct{ kind, source string }{
		{KindNodeCreated, SourceControl}, {KindHeadRendered, SourceMCP}, {KindJoin, SourceExecutor},
		{KindViolation, SourceCLI}, {KindViolation, SourcePolicy}, {KindSessionStarted, SourceMCP},
	} {
		refusedWrite(t, v, TxOptions{}, func(tx *Tx) error {
			tx.Append(&Event{Kind: c.kind, Text: "forged", Source: c.source})
			return nil
		})
	}
	// A policy that names none of the sources memvault's own paths use
	// does not stop them.
	if _, err := v.Update(TxOptions{}, func(tx *Tx) error {
		_, err := tx.SetPolicy(map[string][]string{"fact": {}})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Update(TxOptions{}, func(tx *Tx) error {
		tx.Append(&Event{Kind: KindSessionStarted, Source: SourceHook})
		tx.Append(&Event{Kind: KindHeadRendered, Source: SourceRefresh})
		return nil
	}); err != nil {
		t.Fatalf("memvault's own bookkeeping refused: %v", err)
	}
	refusedWrite(t, v, TxOptions{}, func(tx *Tx) error {
		_, err := queueRow(tx, "fact", "no source may write a fact now")
		return err
	})
}

// TestPermitFailsOpen: a writer that asks Permit (the hooks' control
// lines) queues the violation of a forbidden event and commits the rest.
func TestPermitFailsOpen(t *testing.T) {
	v := newVault(t)
	var perr error
	res, err := v.Update(TxOptions{Session: "s2"}, func(tx *Tx) error {
		bad := &Event{Kind: "constraint", Text: "from a reply", Source: SourceControl}
		if perr = tx.Permit(bad); perr == nil {
			tx.Append(bad)
		}
		good := &Event{Kind: "decision", Text: "from the same reply", Source: SourceControl}
		if err := tx.Permit(good); err != nil {
			return err
		}
		tx.Append(good)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !IsForbidden(perr) || !strings.Contains(Refusal(perr), "constraint from control refused") {
		t.Fatalf("Permit: %v", perr)
	}
	var kinds []string
	for _, ev := range res.Events {
		kinds = append(kinds, ev.Kind)
	}
	if !slices.Equal(kinds, []string{KindViolation, "decision"}) {
		t.Fatalf("committed %v", kinds)
	}
	mustVerify(t, v)
}

// appendByHand appends an event as a person would by hand (chained and
// hashed properly, but past every check): through a transaction's
// queue, then the check of that one transaction skipped by marking it the
// check's own.
func appendByHand(t *testing.T, v *Vault, ev *Event) {
	t.Helper()
	if _, err := v.Update(TxOptions{}, func(tx *Tx) error {
		tx.policyState().own[tx.Append(ev)] = true
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// TestPolicyFoldIsAdversarial: policy events a person appended by hand,
// of a bad shape, from a source that may not write the policy, or granting
// what no rule may grant, are ignored (and said so); the latest of two
// rules wins by time then id, whatever the file order; the cached view and
// a rebuild agree.
func TestPolicyFoldIsAdversarial(t *testing.T) {
	v := newVault(t)
	base := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	at := func(n int) string { return FormatTS(base.Add(time.Duration(n) * time.Second)) }
	bad := []*Event{
		{Kind: KindPolicy, Source: SourceCLI, TS: at(1), Text: "no data"},
		{Kind: KindPolicy, Source: SourceCLI, TS: at(2), Data: []byte(`{"rules":{"constraint":"cli"}}`)},
		{Kind: KindPolicy, Source: SourceCLI, TS: at(3), Data: []byte(`{"rules":[]}`)},
		{Kind: KindPolicy, Source: SourceMCP, TS: at(4), Data: []byte(`{"rules":{"constraint":["mcp"]}}`)},
		{Kind: KindPolicy, Source: "", TS: at(5), Data: []byte(`{"rules":{"constraint":["control"]}}`)},
		{Kind: KindPolicy, Source: SourceCLI, TS: at(6), Data: []byte(`{"rules":{"head.rendered":["control"],"violation":["cli"],"policy":["cli","control"],"constraint":["nobody"]}}`)},
	}
	for _, ev := range bad {
		appendByHand(t, v, ev)
	}
	pol, err := v.LoadPolicy()
	if err != nil {
		t.Fatal(err)
	}
	if got := pol.Rule("constraint").Sources; !slices.Equal(got, []string{SourceCLI, SourceEdit}) {
		t.Fatalf("a bad policy event changed the constraint rule: %v", got)
	}
	if got := pol.Rule(KindPolicy).Sources; !slices.Equal(got, []string{SourceCLI}) {
		t.Fatalf("a bad policy event changed the policy rule: %v", got)
	}
	for _, c := range []struct{ kind, src string }{{KindHeadRendered, SourceControl}, {KindViolation, SourceCLI}, {KindPolicy, SourceControl}} {
		if _, ok := pol.Allows(c.kind, c.src); ok {
			t.Errorf("%s from %s allowed", c.kind, c.src)
		}
	}
	if len(pol.Ignored) < len(bad)+3 {
		t.Errorf("ignored %d notes, want one per bad event and per bad rule: %+v", len(pol.Ignored), pol.Ignored)
	}
	// Two rules for one kind: the later in time wins, even when it was
	// appended first (a merge of clones puts lines in any order).
	appendByHand(t, v, &Event{Kind: KindPolicy, Source: SourceCLI, TS: at(20), Data: []byte(`{"rules":{"decision":["cli"]}}`)})
	appendByHand(t, v, &Event{Kind: KindPolicy, Source: SourceCLI, TS: at(10), Data: []byte(`{"rules":{"decision":["cli","mcp"]}}`)})
	cached, err := v.LoadPolicy()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := cached.Allows("decision", SourceMCP); ok {
		t.Fatal("the older rule won")
	}
	if err := os.RemoveAll(filepath.Join(v.Root, ".state")); err != nil {
		t.Fatal(err)
	}
	rebuilt, err := v.LoadPolicy()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.EqualFunc(cached.RulesSorted(), rebuilt.RulesSorted(), func(a, b PolicyRule) bool {
		return a.Kind == b.Kind && a.From == b.From && slices.Equal(a.Sources, b.Sources)
	}) || len(cached.Ignored) != len(rebuilt.Ignored) || cached.Events != rebuilt.Events {
		t.Fatalf("cached %+v\nrebuilt %+v", cached, rebuilt)
	}
	// Verify holds every line added by hand to the policy the transaction
	// would have applied: the policy event from mcp is named; the others
	// are of a bad shape, which the fold ignores, from a source that may
	// write the policy.
	rep, err := v.Verify()
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Problems) != 1 || !strings.Contains(rep.Problems[0].Msg, "policy from mcp refused") {
		t.Fatalf("verify: %v", rep.Problems)
	}
}

// TestVaultWithoutPolicyHasTheDefault: a vault whose ledger holds no
// policy event (one made before policies) is held to the default policy,
// without a write.
func TestVaultWithoutPolicyHasTheDefault(t *testing.T) {
	v := newVault(t)
	remember(t, v, "a fact before any policy")
	pol, err := v.LoadPolicy()
	if err != nil {
		t.Fatal(err)
	}
	if pol.Events != 0 || pol.Rule("constraint").From != "default" {
		t.Fatalf("policy %+v", pol)
	}
	viol := refusedWrite(t, v, TxOptions{Source: SourceControl, Force: true}, func(tx *Tx) error {
		tx.Append(&Event{Kind: "constraint", Text: "x", Source: SourceControl})
		return nil
	})
	if !strings.Contains(viol.Text, "(the default policy)") {
		t.Errorf("violation text %q", viol.Text)
	}
}
