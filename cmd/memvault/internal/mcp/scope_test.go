package mcp

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/lineage"
	"github.com/memvault/memvault/vault/node"
	"github.com/memvault/memvault/vault/transcript"
)

// secret is in every row and node agent alice writes, and in nothing else.
const secret = "zebracorn"

// TestEveryToolIsScopedToItsAgent: agent alice records rows of every kind
// and a session node in a thread; agent bob, on a server of his own in the
// same vault, calls every tool, reads every resource and gets the prompt,
// each with the arguments most likely to reach alice's rows (her thread,
// her session, her ids), and is shown none of them. The table must name
// every tool, resource and prompt the server lists: a new one without an
// entry fails here until its scoping is tried (issue 33).
func TestEveryToolIsScopedToItsAgent(t *testing.T) {
	t.Parallel()
	alice := setup(t, Options{Agent: "alice", Session: "alice-s1", Thread: "project:shop"}, "")
	var fact, promise writeOut
	alice.ok("remember", map[string]any{"text": "the " + secret + " key is under the mat", "kind": "decision"}, &fact)
	alice.ok("commitment_open", map[string]any{"text": "ship the " + secret + " release"}, &promise)
	alice.ok("decide", map[string]any{"decision": "use " + secret + " everywhere", "rationale": "it is " + secret}, nil)
	alice.ok("learn", map[string]any{"error": secret + " broke", "prevention": "test " + secret}, nil)
	alice.ok("next", map[string]any{"text": "tell the " + secret + " team"}, nil)
	aliceNode := summarizeAs(t, alice.v, "alice", "alice-s1", "project:shop", "what about "+secret+"?", secret+" it is")

	bob := connect(t, alice.v, Options{Vault: alice.v.Root, Dir: t.TempDir(), Agent: "bob", Session: "bob-s1",
		Thread: "project:shop"}, "", nil)
	var own writeOut
	bob.ok("remember", map[string]any{"text": "bob's own fact about the shop"}, &own)

	tools := map[string]map[string]any{
		"recall":            {"query": secret, "all_threads": true, "history": true},
		"expand":            {"id": aliceNode.ID},
		"context":           {"thread": "project:shop"},
		"status":            {},
		"ledger":            {"ids": []string{fact.Event.ID, promise.Event.ID}},
		"timeline":          {"session": "alice-s1"},
		"remember":          {"text": "bob writes", "links": []string{fact.Event.ID}},
		"commitment_open":   {"text": "bob promises", "links": []string{promise.Event.ID}},
		"commitment_close":  {"id": own.Event.ID},
		"decide":            {"decision": "bob decides", "rationale": "r"},
		"learn":             {"error": "bob errs", "prevention": "p"},
		"next":              {"text": "bob's next"},
		"done":              {"text": "bob did something"},
		"budget":            {"thread": "project:shop"},
		"audit":             {"dry_run": true},
		"continuity_status": {},
		"continuity_index":  {},
	}
	// More calls of the tools that read rows by filter.
	more := []struct {
		tool string
		args map[string]any
	}{
		{"ledger", map[string]any{}},
		{"ledger", map[string]any{"thread": "project:shop", "kind": "decision"}},
		{"ledger", map[string]any{"session": "alice-s1", "current": true}},
		{"timeline", map[string]any{"thread": "project:shop"}},
		{"timeline", map[string]any{}},
		{"recall", map[string]any{"query": secret, "thread": "project:shop"}},
		{"context", map[string]any{"global": true}},
		{"audit", map[string]any{}},
	}
	resources := []string{memoryURI, continuityURI, learningsURI, decisionsURI, "memvault://threads/project/shop", nodePrefix + aliceNode.ID}
	prompts := map[string]map[string]string{"catch_up": {"thread": "project:shop"}}

	ctx := context.Background()
	listed, err := bob.cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range listed.Tools {
		if _, ok := tools[tool.Name]; !ok {
			t.Errorf("tool %s has no entry in this test: try its scoping by agent", tool.Name)
		}
	}
	leaks := func(what, got string) {
		t.Helper()
		if strings.Contains(got, secret) {
			t.Errorf("bob is shown alice's rows through %s: %.400s", what, got)
		}
	}
	for name, args := range tools {
		leaks(name, resultText(t, bob.call(name, args)))
	}
	for _, c := range more {
		leaks(c.tool, resultText(t, bob.call(c.tool, c.args)))
	}
	list, err := bob.cs.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(list)
	leaks("resources/list", string(data))
	templates, err := bob.cs.ListResourceTemplates(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range list.Resources {
		if !slices.Contains(resources, r.URI) {
			t.Errorf("resource %s has no entry in this test", r.URI)
		}
	}
	for _, tpl := range templates.ResourceTemplates {
		if !slices.ContainsFunc(resources, func(u string) bool {
			return strings.HasPrefix(u, strings.Split(tpl.URITemplate, "{")[0])
		}) {
			t.Errorf("resource template %s has no entry in this test", tpl.URITemplate)
		}
	}
	for _, uri := range resources {
		text, err := bob.read(uri)
		if err != nil {
			text = err.Error()
		}
		leaks(uri, text)
	}
	plist, err := bob.cs.ListPrompts(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range plist.Prompts {
		args, ok := prompts[p.Name]
		if !ok {
			t.Errorf("prompt %s has no entry in this test", p.Name)
			continue
		}
		res, err := bob.cs.GetPrompt(ctx, &sdk.GetPromptParams{Name: p.Name, Arguments: args})
		if err != nil {
			t.Fatal(err)
		}
		data, _ := json.Marshal(res)
		leaks("prompt "+p.Name, string(data))
	}

	// Bob still sees his own rows, and alice hers: the scope hides, it
	// does not lose.
	var lg ledgerOut
	bob.ok("ledger", map[string]any{"thread": "project:shop"}, &lg)
	if !slices.ContainsFunc(lg.Rows, func(r *vault.Row) bool { return r.ID == own.Event.ID }) {
		t.Errorf("bob's ledger lacks his own row: %+v", lg.Rows)
	}
	alice.ok("ledger", map[string]any{"ids": []string{fact.Event.ID}}, &lg)
	if len(lg.Rows) != 1 {
		t.Errorf("alice's ledger of her own row: %+v", lg)
	}
	var tl timelineOut
	alice.ok("timeline", map[string]any{"session": "alice-s1"}, &tl)
	if len(tl.Events) == 0 {
		t.Errorf("alice's timeline of her own session is empty")
	}
}

// resultText is all a tool's result says, its error included.
func resultText(t *testing.T, res *sdk.CallToolResult) string {
	t.Helper()
	data, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// summarizeAs is summarize for another agent than the vault's.
func summarizeAs(t *testing.T, v *vault.Vault, agent, session, thread, prompt, answer string) *node.Node {
	t.Helper()
	ref := transcript.Ref{Agent: agent, Session: session}
	_, err := v.Update(vault.TxOptions{Agent: agent, Session: session, NoCommit: true}, func(tx *vault.Tx) error {
		_, _, err := tx.AppendText(ref, []transcript.Message{{Role: transcript.RoleUser, Text: prompt},
			{Role: transcript.RoleAssistant, Text: answer}})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	var made *node.Node
	_, err = v.Update(vault.TxOptions{Agent: agent, Session: session}, func(tx *vault.Tx) error {
		var err error
		made, _, err = lineage.Summarize(tx, ref, lineage.SummaryOptions{Thread: thread})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return made
}
