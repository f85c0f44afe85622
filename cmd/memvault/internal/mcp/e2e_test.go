// End-to-end tests of memvault's MCP server (memvault mcp) through real
// clients, registered the way `memvault install` registers it
// (docs/MCP.md, "Harnesses"): the MCP inspector's command line, and real
// harnesses offline against the fake model server of
// vault/vaulttest/e2etest, whose scripted reply calls memvault's recall
// tool. They drive the memvault binary, built from this module, as the
// clients start it.
//
//	MEMVAULT_E2E_INSPECTOR  path of `mcp-inspector-cli` (@modelcontextprotocol/inspector-cli, pinned in .ci/e2e-harnesses.sh)
//
// and the harness variables e2etest's doc lists. Each test skips, saying
// why, when its client is not there, or when the memvault under test has
// no mcp command.
package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memvault/memvault/vault/vaulttest/e2etest"
)

// TestMain removes the memvault binary the end-to-end tests built.
func TestMain(m *testing.M) { e2etest.Main(m) }

// e2e is one test's world (e2etest.World), with the MCP server's checks.
type e2e struct{ *e2etest.World }

func newE2E(t *testing.T) *e2e {
	t.Helper()
	return &e2e{e2etest.New(t)}
}

// requireMCPCommand skips a test when the memvault binary serves no MCP.
func requireMCPCommand(t *testing.T, bin string) {
	t.Helper()
	if out, err := exec.Command(bin, "mcp", "--help").CombinedOutput(); err != nil {
		t.Skipf("this memvault has no mcp command (%v): %s", err, e2etest.ClipHead(string(out)))
	}
}

// mcpStarts wraps memvault on the harness's PATH in a script that logs
// each run's arguments, so a test can tell that the harness started
// `memvault mcp` (project-scope entries run memvault from PATH); it
// returns the log's path.
func (e *e2e) mcpStarts() string {
	e.T.Helper()
	dir := filepath.Join(e.Dir, "wrapped")
	log := filepath.Join(e.Dir, "memvault-runs.log")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		e.T.Fatal(err)
	}
	script := fmt.Sprintf("#!/bin/sh\nprintf '%%s\\n' \"$*\" >> %q\nexec %q \"$@\"\n", log, e.Bin)
	if err := os.WriteFile(filepath.Join(dir, "memvault"), []byte(script), 0o755); err != nil {
		e.T.Fatal(err)
	}
	e.PrependPath(dir)
	return log
}

// requireMCPStarted fails unless the log of mcpStarts shows a run of
// `memvault mcp`.
func (e *e2e) requireMCPStarted(log string) {
	e.T.Helper()
	data, _ := os.ReadFile(log)
	for _, line := range strings.Split(string(data), "\n") {
		if line == "mcp" || strings.HasPrefix(line, "mcp ") {
			return
		}
	}
	e.T.Fatalf("the harness never started memvault mcp; memvault ran with:\n%s", data)
}

// fixtureNode makes a session-summary node in the vault (a prompt stored
// by the hook, then summarize) and returns its id and a word only it holds.
func (e *e2e) fixtureNode() (id, word string) {
	e.T.Helper()
	word = e2etest.RandWord("nodeword")
	e.Hook("claude-code", "prompt-submit", map[string]any{"session_id": "e2e-fixture", "cwd": e.Proj,
		"hook_event_name": "UserPromptSubmit", "prompt": "the fixture session mentions " + word})
	var nodes []struct {
		ID string `json:"id"`
	}
	out := e.Memvault("summarize", "--session", "e2e-fixture", "--json")
	if err := json.Unmarshal([]byte(out), &nodes); err != nil || len(nodes) == 0 {
		e.T.Fatalf("summarize --json: %v\n%s", err, out)
	}
	return nodes[0].ID, word
}

// inspector runs the MCP inspector's command line against the server the
// project's .mcp.json registers (as `memvault install claude-code` wrote
// it), and returns what it printed (JSON).
func (e *e2e) inspector(bin string, args ...string) map[string]any {
	e.T.Helper()
	// inspector-cli 1.0.3 finds its own package.json by whether
	// ../package.json exists from the working folder; without one there it
	// imports a path that does not exist and stops. One above the project
	// (in the test's folder, outside the project) sends it to its own.
	if err := os.WriteFile(filepath.Join(e.Dir, "package.json"), []byte(`{"name":"not-the-inspector"}`), 0o644); err != nil {
		e.T.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	full := append([]string{"--config", filepath.Join(e.Proj, ".mcp.json"), "--server", "memvault", "--cli"}, args...)
	cmd := exec.CommandContext(ctx, bin, full...)
	cmd.Dir = e.Proj
	cmd.Env = e.Env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	e.T.Logf("mcp-inspector-cli %s: %v", strings.Join(args, " "), err)
	if err != nil {
		e.T.Fatalf("mcp-inspector-cli %s: %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), err, e2etest.ClipHead(stdout.String()), e2etest.ClipHead(stderr.String()))
	}
	var out map[string]any
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		e.T.Fatalf("mcp-inspector-cli %s printed no JSON: %v\n%s", strings.Join(args, " "), err, e2etest.ClipHead(stdout.String()))
	}
	return out
}

// toolText is the text of a tools/call result and its structured content,
// as one string to search.
func toolText(t *testing.T, res map[string]any) string {
	t.Helper()
	if res["isError"] == true {
		t.Fatalf("the tool answered an error: %v", res)
	}
	b, _ := json.Marshal(res["structuredContent"])
	return e2etest.TextOf(res["content"]) + "\n" + string(b)
}

// TestE2EMCPInspector: the MCP inspector's command line, a real client on
// the official TypeScript SDK, starts the server from the .mcp.json that
// `memvault install claude-code` wrote, lists its tools (each with a
// schema the SDK accepts), and calls remember, recall and expand against
// a vault with a fact and a node in it.
func TestE2EMCPInspector(t *testing.T) {
	bin := os.Getenv("MEMVAULT_E2E_INSPECTOR")
	if bin == "" {
		t.Skip("e2e mcp inspector: MEMVAULT_E2E_INSPECTOR is not set (run .ci/e2e-harnesses.sh to install @modelcontextprotocol/inspector-cli)")
	}
	e := newE2E(t)
	requireMCPCommand(t, e.Bin)
	e.Install("claude-code")
	node, nodeWord := e.fixtureNode()

	list := e.inspector(bin, "--method", "tools/list")
	tools := map[string]bool{}
	for _, x := range list["tools"].([]any) {
		tool := e2etest.MapOf(x)
		name, _ := tool["name"].(string)
		if e2etest.MapOf(tool["inputSchema"])["type"] != "object" {
			t.Errorf("tool %s: input schema %v", name, tool["inputSchema"])
		}
		if d, _ := tool["description"].(string); d == "" {
			t.Errorf("tool %s has no description", name)
		}
		tools[name] = true
	}
	for _, want := range []string{"recall", "expand", "remember"} {
		if !tools[want] {
			t.Fatalf("tools/list has no %s: %v", want, tools)
		}
	}

	// remember: recorded in the vault, as the command line would
	decision := "ship the inspector build " + e2etest.RandWord("mcpword")
	res := e.inspector(bin, "--method", "tools/call", "--tool-name", "remember", "--tool-arg", "text="+decision, "kind=decision")
	if got := toolText(t, res); !strings.Contains(got, "e_") {
		t.Errorf("remember answered no event id: %s", got)
	}
	found := false
	for _, r := range e.Ledger("decision") {
		found = found || r["text"] == decision
	}
	if !found {
		t.Fatalf("remember through MCP recorded no decision %q in the ledger", decision)
	}

	// recall: the fact remembered at setup, by its word
	got := toolText(t, e.inspector(bin, "--method", "tools/call", "--tool-name", "recall", "--tool-arg", "query="+e.Mark))
	if !strings.Contains(got, e.Mark) || !strings.Contains(got, e.FactID) {
		t.Errorf("recall %s did not find the fact %s: %s", e.Mark, e.FactID, e2etest.ClipHead(got))
	}
	// and the decision just recorded, in the same vault
	got = toolText(t, e.inspector(bin, "--method", "tools/call", "--tool-name", "recall", "--tool-arg", "query="+decision))
	if !strings.Contains(got, decision) {
		t.Errorf("recall did not find the decision remembered through MCP: %s", e2etest.ClipHead(got))
	}

	// expand: the node and the session's words
	got = toolText(t, e.inspector(bin, "--method", "tools/call", "--tool-name", "expand", "--tool-arg", "id="+node))
	if !strings.Contains(got, node) || !strings.Contains(got, nodeWord) {
		t.Errorf("expand %s: %s", node, e2etest.ClipHead(got))
	}

	// a bad call is an error the client sees, not a crash
	cmd := exec.Command(bin, "--config", filepath.Join(e.Proj, ".mcp.json"), "--server", "memvault", "--cli",
		"--method", "tools/call", "--tool-name", "expand", "--tool-arg", "id=n_nosuchnode")
	cmd.Dir, cmd.Env = e.Proj, e.Env
	out, _ := cmd.CombinedOutput()
	if !strings.Contains(string(out), "n_nosuchnode") {
		t.Errorf("expand of an unknown node: %s", e2etest.ClipHead(string(out)))
	}
	e.RequireFsck()
}

// toolResultIn returns the text of the tool result for e2etest.ToolUseID in a
// logged Anthropic request, and whether there is one.
func toolResultIn(body string) (string, bool) {
	var req map[string]any
	if json.Unmarshal([]byte(body), &req) != nil {
		return "", false
	}
	for _, m := range e2etest.List(req["messages"]) {
		for _, block := range e2etest.List(e2etest.MapOf(m)["content"]) {
			b := e2etest.MapOf(block)
			if b["type"] == "tool_result" && b["tool_use_id"] == e2etest.ToolUseID {
				return e2etest.TextOf(b["content"]), true
			}
		}
	}
	return "", false
}

// TestE2EMCPClaudeCode: a real Claude Code, installed at project scope
// (.mcp.json), offline against the fake model, whose reply calls
// memvault's recall tool (mcp__memvault__recall): Claude Code starts
// memvault mcp, calls the tool, and sends its result — the fact
// remembered at setup — back in its next model request.
func TestE2EMCPClaudeCode(t *testing.T) {
	claude := e2etest.HarnessBin(t, "MEMVAULT_E2E_CLAUDE", "claude-code")
	if e2etest.InNetns(t) {
		return
	}
	e := newE2E(t)
	requireMCPCommand(t, e.Bin)
	e.Setenv("ANTHROPIC_BASE_URL="+e.Model.URL(), "ANTHROPIC_API_KEY=sk-fake",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1")
	runs := e.mcpStarts()
	e.Install("claude-code")

	// The tool runs without a question only where the person allowed it:
	// here on the command line, as a settings rule would.
	r := e.MustRun(120*time.Second, claude, "-p", "look it up\n"+e2etest.ToolCallMarker+"recall "+e.Mark,
		"--output-format", "json", "--allowedTools", "mcp__memvault__recall")
	e.requireMCPStarted(runs)
	reqs := e.Model.Requests("/v1/messages")
	var called, answered *e2etest.LoggedRequest
	for i := range reqs {
		var req map[string]any
		json.Unmarshal([]byte(reqs[i].Body), &req)
		if _, _, ok := e2etest.WantsToolCall(e2etest.List(req["messages"])); ok && called == nil {
			called = &reqs[i]
			// Claude Code offers the tools of MCP servers by name behind
			// its tool search (deferred), or whole: either way the name
			// comes from the server's tools/list.
			if !strings.Contains(reqs[i].Body, "mcp__memvault__recall") {
				t.Errorf("request #%d, answered with the tool call, names no tool mcp__memvault__recall", reqs[i].N)
			}
		}
		if _, ok := toolResultIn(reqs[i].Body); ok && answered == nil {
			answered = &reqs[i]
		}
	}
	if called == nil {
		t.Fatalf("no request was answered with the tool call (log: %s)\nstdout: %s", filepath.Join(e.Dir, "requests.jsonl"), e2etest.ClipHead(r.Stdout))
	}
	if answered == nil {
		t.Fatalf("Claude Code sent no result of the recall call back (log: %s)\nstdout: %s\nstderr: %s",
			filepath.Join(e.Dir, "requests.jsonl"), e2etest.ClipHead(r.Stdout), e2etest.ClipHead(r.Stderr))
	}
	result, _ := toolResultIn(answered.Body)
	if !strings.Contains(result, e.FactID) || !strings.Contains(result, e.Mark) {
		t.Fatalf("the tool result sent back in request #%d is not recall's answer (want the fact %s, %s):\n%s",
			answered.N, e.FactID, e.Mark, e2etest.ClipHead(result))
	}
	if answered.N <= called.N {
		t.Errorf("the tool result (request #%d) came before the call (request #%d)", answered.N, called.N)
	}
	if !strings.Contains(r.Stdout, "Fake answer") {
		t.Errorf("the turn did not end with the model's answer after the tool:\n%s", e2etest.ClipHead(r.Stdout))
	}
}

// TestE2EMCPCodex: a real Codex, installed at project scope (the MCP
// server in the project's .codex/config.toml, which Codex reads in a
// trusted project), offline against the fake model, whose reply calls
// recall in the namespace mcp__memvault: Codex starts memvault mcp, calls
// the tool, and sends recall's answer back in its next request.
func TestE2EMCPCodex(t *testing.T) {
	codex := e2etest.HarnessBin(t, "MEMVAULT_E2E_CODEX", "codex")
	if e2etest.InNetns(t) {
		return
	}
	e := newE2E(t)
	requireMCPCommand(t, e.Bin)
	codexHome := filepath.Join(e.Home, ".codex")
	os.MkdirAll(codexHome, 0o755)
	config := filepath.Join(codexHome, "config.toml")
	os.WriteFile(config, []byte(e2etest.CodexConfig(e.Model.URL(), `env_key = "FAKE_API_KEY"`,
		fmt.Sprintf("\n[projects.%q]\ntrust_level = \"trusted\"\n", e.Proj))), 0o644)
	e.Setenv("CODEX_HOME="+codexHome, "FAKE_API_KEY=x")
	runs := e.mcpStarts()
	e.Install("codex")
	e2etest.CodexTrust(t, config, filepath.Join(e.Proj, ".codex", "hooks.json"))
	if data, _ := os.ReadFile(filepath.Join(e.Proj, ".codex", "config.toml")); !strings.Contains(string(data), "[mcp_servers.memvault]") {
		t.Fatalf("install registered no MCP server in .codex/config.toml:\n%s", data)
	}

	r := e.MustRun(120*time.Second, codex, "exec", "--skip-git-repo-check", "look it up\n"+e2etest.ToolCallMarker+"recall "+e.Mark)
	e.requireMCPStarted(runs)
	var called, answered *e2etest.LoggedRequest
	reqs := e.Model.Requests("/v1/responses")
	for i := range reqs {
		var req map[string]any
		json.Unmarshal([]byte(reqs[i].Body), &req)
		if _, _, ok := e2etest.WantsToolCall(e2etest.List(req["input"])); ok && called == nil {
			called = &reqs[i]
			if !strings.Contains(reqs[i].Body, `"mcp__memvault"`) || !strings.Contains(reqs[i].Body, `"recall"`) {
				t.Errorf("request #%d, answered with the tool call, offers no mcp__memvault namespace with recall", reqs[i].N)
			}
		}
		for _, it := range e2etest.List(req["input"]) {
			if m := e2etest.MapOf(it); m["type"] == "function_call_output" && m["call_id"] == e2etest.ToolUseID && answered == nil {
				answered = &reqs[i]
				out, _ := json.Marshal(m["output"])
				if !strings.Contains(string(out), e.FactID) || !strings.Contains(string(out), e.Mark) {
					t.Fatalf("the tool output sent back in request #%d is not recall's answer (want the fact %s):\n%s", reqs[i].N, e.FactID, e2etest.ClipHead(string(out)))
				}
			}
		}
	}
	if called == nil {
		t.Fatalf("no request was answered with the tool call (log: %s)\nstdout: %s", filepath.Join(e.Dir, "requests.jsonl"), e2etest.ClipHead(r.Stdout))
	}
	if answered == nil || answered.N <= called.N {
		t.Fatalf("Codex sent no result of the recall call back after request #%d (log: %s)\nstdout: %s\nstderr: %s",
			called.N, filepath.Join(e.Dir, "requests.jsonl"), e2etest.ClipHead(r.Stdout), e2etest.ClipHead(r.Stderr))
	}
	if !strings.Contains(r.Stdout, "Fake answer") {
		t.Errorf("the turn did not end with the model's answer after the tool:\n%s", e2etest.ClipHead(r.Stdout))
	}
}

// TestE2EMCPGemini: a real Gemini CLI, installed at project scope (the
// server in .gemini/settings.json beside the hooks), offline against the
// fake model, whose reply calls mcp_memvault_recall: Gemini CLI starts
// memvault mcp, calls the tool (allowed on the command line: in -p mode
// it offers only the tools that need no question), and sends recall's
// answer back in its next request.
func TestE2EMCPGemini(t *testing.T) {
	gemini := e2etest.HarnessBin(t, "MEMVAULT_E2E_GEMINI", "gemini")
	if e2etest.InNetns(t) {
		return
	}
	e := newE2E(t)
	requireMCPCommand(t, e.Bin)
	settings := filepath.Join(e.Proj, ".gemini", "settings.json")
	os.MkdirAll(filepath.Dir(settings), 0o755)
	os.WriteFile(settings, []byte(`{"security": {"auth": {"selectedType": "gemini-api-key"}}, "privacy": {"usageStatisticsEnabled": false}, "general": {"disableAutoUpdate": true}}`), 0o644)
	e.Setenv("GEMINI_API_KEY=fake", "GOOGLE_GEMINI_BASE_URL="+e.Model.URL(), "GEMINI_CLI_TRUST_WORKSPACE=true")
	runs := e.mcpStarts()
	e.Install("gemini")
	r := e.MustRun(120*time.Second, gemini, "-p", "look it up\n"+e2etest.ToolCallMarker+"recall "+e.Mark, "-o", "json",
		"--allowed-tools", "mcp_memvault_recall")
	e.requireMCPStarted(runs)
	var called, answered *e2etest.LoggedRequest
	reqs := e.Model.Requests("/v1beta/models/")
	for i := range reqs {
		if !strings.Contains(reqs[i].Path, "streamGenerateContent") {
			continue // the CLI's own side requests (routing, next speaker)
		}
		var req map[string]any
		json.Unmarshal([]byte(reqs[i].Body), &req)
		contents := e2etest.List(req["contents"])
		if _, _, ok := e2etest.WantsToolCall(contents); ok && called == nil {
			called = &reqs[i]
			if !strings.Contains(reqs[i].Body, `"mcp_memvault_recall"`) {
				t.Errorf("request #%d, answered with the tool call, offers no mcp_memvault_recall", reqs[i].N)
			}
		}
		for _, c := range contents {
			for _, p := range e2etest.List(e2etest.MapOf(c)["parts"]) {
				fr := e2etest.MapOf(e2etest.MapOf(p)["functionResponse"])
				if fr == nil || answered != nil {
					continue
				}
				answered = &reqs[i]
				out, _ := json.Marshal(fr["response"])
				if fr["name"] != "mcp_memvault_recall" || !strings.Contains(string(out), e.FactID) || !strings.Contains(string(out), e.Mark) {
					t.Fatalf("the function response sent back in request #%d is not recall's answer (want the fact %s):\n%s %s", reqs[i].N, e.FactID, fr["name"], e2etest.ClipHead(string(out)))
				}
			}
		}
	}
	if called == nil {
		t.Fatalf("no request was answered with the tool call (log: %s)\nstdout: %s", filepath.Join(e.Dir, "requests.jsonl"), e2etest.ClipHead(r.Stdout))
	}
	if answered == nil || answered.N <= called.N {
		t.Fatalf("Gemini CLI sent no result of the recall call back after request #%d (log: %s)\nstdout: %s\nstderr: %s",
			called.N, filepath.Join(e.Dir, "requests.jsonl"), e2etest.ClipHead(r.Stdout), e2etest.ClipHead(r.Stderr))
	}
}

// TestE2EMCPOpenCode: a real OpenCode, installed at project scope (the
// server in the project's opencode.json, beside the user's provider
// settings), offline against the fake model, whose reply calls
// memvault_recall: OpenCode starts memvault mcp, calls the tool, and
// sends recall's answer back as a tool message.
func TestE2EMCPOpenCode(t *testing.T) {
	opencode := e2etest.HarnessBin(t, "MEMVAULT_E2E_OPENCODE", "opencode")
	if e2etest.InNetns(t) {
		return
	}
	e := newE2E(t)
	requireMCPCommand(t, e.Bin)
	cfg := map[string]any{
		"$schema": "https://opencode.ai/config.json", "autoupdate": false, "share": "disabled",
		"provider": map[string]any{"fake": map[string]any{"npm": "@ai-sdk/openai-compatible", "name": "fake",
			"options": map[string]any{"baseURL": e.Model.URL() + "/v1", "apiKey": "x"},
			"models":  map[string]any{"fake-model": map[string]any{"name": "fake-model", "limit": map[string]any{"context": 100000, "output": 4096}}}}},
		"model": "fake/fake-model", "small_model": "fake/fake-model",
	}
	data, _ := json.MarshalIndent(cfg, "", "  ")
	os.WriteFile(filepath.Join(e.Proj, "opencode.json"), data, 0o644)
	e.Setenv("OPENCODE_DISABLE_AUTOUPDATE=1", "OPENCODE_DISABLE_MODELS_FETCH=1", "OPENCODE_DISABLE_DEFAULT_PLUGINS=1",
		"OPENCODE_DISABLE_SHARE=1", "npm_config_offline=true")
	runs := e.mcpStarts()
	e.Install("opencode")
	if data, _ := os.ReadFile(filepath.Join(e.Proj, "opencode.json")); !strings.Contains(string(data), `"memvault": {`) || !strings.Contains(string(data), `"fake-model"`) {
		t.Fatalf("install did not add memvault's server to the project's opencode.json beside its settings:\n%s", data)
	}
	r := e.MustRun(150*time.Second, opencode, "run", "--format", "json", "look it up\n"+e2etest.ToolCallMarker+"recall "+e.Mark)
	e.requireMCPStarted(runs)
	var called, answered *e2etest.LoggedRequest
	reqs := e.Model.Requests("/v1/chat/completions")
	for i := range reqs {
		var req map[string]any
		json.Unmarshal([]byte(reqs[i].Body), &req)
		msgs := e2etest.List(req["messages"])
		if _, _, ok := e2etest.WantsToolCall(msgs); ok && called == nil && strings.Contains(reqs[i].Body, `"memvault_recall"`) {
			called = &reqs[i]
		}
		for _, m := range msgs {
			mm := e2etest.MapOf(m)
			if mm["role"] != "tool" || mm["tool_call_id"] != e2etest.ToolUseID || answered != nil {
				continue
			}
			answered = &reqs[i]
			if out := e2etest.TextOf(mm["content"]); !strings.Contains(out, e.FactID) || !strings.Contains(out, e.Mark) {
				t.Fatalf("the tool message sent back in request #%d is not recall's answer (want the fact %s):\n%s", reqs[i].N, e.FactID, e2etest.ClipHead(out))
			}
		}
	}
	if called == nil {
		t.Fatalf("no request offering memvault_recall was answered with the tool call (log: %s)\nstdout: %s", filepath.Join(e.Dir, "requests.jsonl"), e2etest.ClipHead(r.Stdout))
	}
	if answered == nil || answered.N <= called.N {
		t.Fatalf("OpenCode sent no result of the recall call back after request #%d (log: %s)\nstdout: %s\nstderr: %s",
			called.N, filepath.Join(e.Dir, "requests.jsonl"), e2etest.ClipHead(r.Stdout), e2etest.ClipHead(r.Stderr))
	}
}

// TestE2EMCPOpenClaw: a real OpenClaw (openclaw agent --local), installed
// at project scope (the server in mcp.servers of its config, run in the
// project's folder), offline against the fake model, whose reply calls
// memvault's recall: OpenClaw starts memvault mcp, calls the tool, and
// sends recall's answer back as a tool message.
func TestE2EMCPOpenClaw(t *testing.T) {
	openclaw := e2etest.HarnessBin(t, "MEMVAULT_E2E_OPENCLAW", "openclaw")
	if e2etest.InNetns(t) {
		return
	}
	e := newE2E(t)
	requireMCPCommand(t, e.Bin)
	e.UseNode24()
	config := filepath.Join(e.Dir, "openclaw.json")
	state := filepath.Join(e.Dir, "openclaw-state")
	os.MkdirAll(state, 0o755)
	models, _ := json.Marshal(map[string]any{"providers": map[string]any{"fake": map[string]any{"baseUrl": e.Model.URL() + "/v1", "apiKey": "x",
		"api": "openai-completions", "models": []any{map[string]any{"id": "fake-model", "name": "fake-model",
			"contextWindow": 200000, "maxTokens": 4096}}}}})
	os.WriteFile(config, []byte("{\n  models: "+string(models)+",\n  agents: {defaults: {model: {primary: 'fake/fake-model'}}},\n}\n"), 0o644)
	e.Setenv("OPENCLAW_CONFIG_PATH="+config, "OPENCLAW_STATE_DIR="+state, "OPENCLAW_OFFLINE=1", "OPENCLAW_NO_AUTO_UPDATE=1")
	runs := e.mcpStarts()
	e.Install("openclaw")

	r := e.MustRun(150*time.Second, openclaw, "agent", "--local", "--session-id", "mcp", "--message", "look it up\n"+e2etest.ToolCallMarker+"recall "+e.Mark, "--json")
	e.requireMCPStarted(runs)
	var called, answered *e2etest.LoggedRequest
	reqs := e.Model.Requests("/v1/chat/completions")
	for i := range reqs {
		var req map[string]any
		json.Unmarshal([]byte(reqs[i].Body), &req)
		msgs := e2etest.List(req["messages"])
		if _, _, ok := e2etest.WantsToolCall(msgs); ok && called == nil {
			called = &reqs[i]
			if name, _ := e2etest.OfferedTool(req, "recall", ""); !strings.Contains(reqs[i].Body, `"`+name+`"`) {
				t.Errorf("request #%d, answered with the tool call, offers no way to call memvault's recall", reqs[i].N)
			}
		}
		for _, m := range msgs {
			mm := e2etest.MapOf(m)
			// OpenClaw keeps only the letters and digits of a call's id
			if id, _ := mm["tool_call_id"].(string); mm["role"] != "tool" || alnum(id) != alnum(e2etest.ToolUseID) || answered != nil {
				continue
			}
			answered = &reqs[i]
			if out := e2etest.TextOf(mm["content"]); !strings.Contains(out, e.FactID) || !strings.Contains(out, e.Mark) {
				t.Fatalf("the tool message sent back in request #%d is not recall's answer (want the fact %s):\n%s", reqs[i].N, e.FactID, e2etest.ClipHead(out))
			}
		}
	}
	if called == nil {
		t.Fatalf("no request was answered with the tool call (log: %s)\nstdout: %s", filepath.Join(e.Dir, "requests.jsonl"), e2etest.ClipHead(r.Stdout))
	}
	if answered == nil || answered.N <= called.N {
		t.Fatalf("OpenClaw sent no result of the recall call back after request #%d (log: %s)\nstdout: %s\nstderr: %s",
			called.N, filepath.Join(e.Dir, "requests.jsonl"), e2etest.ClipHead(r.Stdout), e2etest.ClipHead(r.Stderr))
	}
}

func alnum(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return -1
	}, s)
}
