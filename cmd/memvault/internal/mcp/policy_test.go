package mcp

import (
	"strings"
	"testing"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/testvault"
	"github.com/memvault/memvault/vault/vaulttest"
)

// TestPolicyRefusesAnAgentsConstraint: under the default policy a
// constraint is a person's; over MCP it is refused with its own class and
// code, nothing of it is written, and the refusal is a violation event of
// the ledger. The same call's other kinds go on working.
func TestPolicyRefusesAnAgentsConstraint(t *testing.T) {
	t.Parallel()
	f := setup(t, Options{Session: "s9", Harness: "codex"}, "")
	te, msg := f.fails("remember", map[string]any{"text": "never deploy on fridays", "kind": "constraint", "thread": "project:shop"})
	if te.Class != "forbidden" || te.Code != 10 || te.Retryable || !strings.Contains(te.Hint, "violation") {
		t.Fatalf("refusal %+v %q", te, msg)
	}
	if !strings.Contains(msg, "constraint from mcp refused") {
		t.Errorf("message %q", msg)
	}
	rows := f.state().Rows
	if len(rows) != 1 || rows[0].Kind != vault.KindViolation || rows[0].Session != "s9" || rows[0].Harness != "codex" ||
		rows[0].Source != vault.SourcePolicy || !strings.Contains(string(rows[0].Data), `"source":"mcp"`) ||
		strings.Contains(rows[0].Text+string(rows[0].Data), "fridays") {
		t.Fatalf("ledger after the refusal: %+v", rows)
	}
	testvault.MustVerify(t, f.v)
	vaulttest.Fsck(t, f.v.Root)
	var out writeOut
	f.ok("remember", map[string]any{"text": "never deploy on fridays", "kind": "decision", "thread": "project:shop"}, &out)
	if out.Event.Kind != "decision" {
		t.Fatalf("a decision after the refusal: %+v", out.Event)
	}
}
