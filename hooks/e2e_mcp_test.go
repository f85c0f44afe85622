// End-to-end tests of memvault's MCP server (memvault mcp) through real
// clients, registered the way `memvault install` registers it
// (docs/MCP.md, "Harnesses"): the MCP inspector's command line, and real
// harnesses offline against the fake model server of e2e_test.go, whose
// scripted reply calls memvault's recall tool.
//
//	MEMVAULT_E2E_INSPECTOR  path of `mcp-inspector-cli` (@modelcontextprotocol/inspector-cli, pinned in .ci/e2e-harnesses.sh)
//
// and the harness variables of e2e_test.go. Each test skips, saying why,
// when its client is not there, or when the memvault under test has no
// mcp command.
package hooks_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// requireMCPCommand skips a test when the memvault binary serves no MCP.
func requireMCPCommand(t *testing.T, bin string) {
	t.Helper()
	if out, err := exec.Command(bin, "mcp", "--help").CombinedOutput(); err != nil {
		t.Skipf("this memvault has no mcp command (%v): %s", err, clipHead(string(out)))
	}
}

// mcpStarts wraps memvault on the harness's PATH in a script that logs
// each run's arguments, so a test can tell that the harness started
// `memvault mcp` (project-scope entries run memvault from PATH); it
// returns the log's path.
func (e *e2e) mcpStarts() string {
	e.t.Helper()
	dir := filepath.Join(e.dir, "wrapped")
	log := filepath.Join(e.dir, "memvault-runs.log")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		e.t.Fatal(err)
	}
	script := fmt.Sprintf("#!/bin/sh\nprintf '%%s\\n' \"$*\" >> %q\nexec %q \"$@\"\n", log, e.bin)
	if err := os.WriteFile(filepath.Join(dir, "memvault"), []byte(script), 0o755); err != nil {
		e.t.Fatal(err)
	}
	for i, kv := range e.env {
		if strings.HasPrefix(kv, "PATH=") {
			e.env[i] = "PATH=" + dir + string(os.PathListSeparator) + strings.TrimPrefix(kv, "PATH=")
		}
	}
	return log
}

// requireMCPStarted fails unless the log of mcpStarts shows a run of
// `memvault mcp`.
func (e *e2e) requireMCPStarted(log string) {
	e.t.Helper()
	data, _ := os.ReadFile(log)
	for _, line := range strings.Split(string(data), "\n") {
		if line == "mcp" || strings.HasPrefix(line, "mcp ") {
			return
		}
	}
	e.t.Fatalf("the harness never started memvault mcp; memvault ran with:\n%s", data)
}

// fixtureNode makes a session-summary node in the vault (a prompt stored
// by the hook, then summarize) and returns its id and a word only it holds.
func (e *e2e) fixtureNode() (id, word string) {
	e.t.Helper()
	word = randWord("nodeword")
	e.hook("claude-code", "prompt-submit", map[string]any{"session_id": "e2e-fixture", "cwd": e.proj,
		"hook_event_name": "UserPromptSubmit", "prompt": "the fixture session mentions " + word})
	var nodes []struct {
		ID string `json:"id"`
	}
	out := e.memvault("summarize", "--session", "e2e-fixture", "--json")
	if err := json.Unmarshal([]byte(out), &nodes); err != nil || len(nodes) == 0 {
		e.t.Fatalf("summarize --json: %v\n%s", err, out)
	}
	return nodes[0].ID, word
}

// inspector runs the MCP inspector's command line against the server the
// project's .mcp.json registers (as `memvault install claude-code` wrote
// it), and returns what it printed (JSON).
func (e *e2e) inspector(bin string, args ...string) map[string]any {
	e.t.Helper()
	// inspector-cli 1.0.3 finds its own package.json by whether
	// ../package.json exists from the working folder; without one there it
	// imports a path that does not exist and stops. One above the project
	// (in the test's folder, outside the project) sends it to its own.
	if err := os.WriteFile(filepath.Join(e.dir, "package.json"), []byte(`{"name":"not-the-inspector"}`), 0o644); err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	full := append([]string{"--config", filepath.Join(e.proj, ".mcp.json"), "--server", "memvault", "--cli"}, args...)
	cmd := exec.CommandContext(ctx, bin, full...)
	cmd.Dir = e.proj
	cmd.Env = e.env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	e.t.Logf("mcp-inspector-cli %s: %v", strings.Join(args, " "), err)
	if err != nil {
		e.t.Fatalf("mcp-inspector-cli %s: %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), err, clipHead(stdout.String()), clipHead(stderr.String()))
	}
	var out map[string]any
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		e.t.Fatalf("mcp-inspector-cli %s printed no JSON: %v\n%s", strings.Join(args, " "), err, clipHead(stdout.String()))
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
	return textOf(res["content"]) + "\n" + string(b)
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
	requireMCPCommand(t, e.bin)
	e.install("claude-code")
	node, nodeWord := e.fixtureNode()

	list := e.inspector(bin, "--method", "tools/list")
	tools := map[string]bool{}
	for _, x := range list["tools"].([]any) {
		tool := mapOf(x)
		name, _ := tool["name"].(string)
		if mapOf(tool["inputSchema"])["type"] != "object" {
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
	decision := "ship the inspector build " + randWord("mcpword")
	res := e.inspector(bin, "--method", "tools/call", "--tool-name", "remember", "--tool-arg", "text="+decision, "kind=decision")
	if got := toolText(t, res); !strings.Contains(got, "e_") {
		t.Errorf("remember answered no event id: %s", got)
	}
	found := false
	for _, r := range e.ledger("decision") {
		found = found || r["text"] == decision
	}
	if !found {
		t.Fatalf("remember through MCP recorded no decision %q in the ledger", decision)
	}

	// recall: the fact remembered at setup, by its word
	got := toolText(t, e.inspector(bin, "--method", "tools/call", "--tool-name", "recall", "--tool-arg", "query="+e.mark))
	if !strings.Contains(got, e.mark) || !strings.Contains(got, e.factID) {
		t.Errorf("recall %s did not find the fact %s: %s", e.mark, e.factID, clipHead(got))
	}
	// and the decision just recorded, in the same vault
	got = toolText(t, e.inspector(bin, "--method", "tools/call", "--tool-name", "recall", "--tool-arg", "query="+decision))
	if !strings.Contains(got, decision) {
		t.Errorf("recall did not find the decision remembered through MCP: %s", clipHead(got))
	}

	// expand: the node and the session's words
	got = toolText(t, e.inspector(bin, "--method", "tools/call", "--tool-name", "expand", "--tool-arg", "id="+node))
	if !strings.Contains(got, node) || !strings.Contains(got, nodeWord) {
		t.Errorf("expand %s: %s", node, clipHead(got))
	}

	// a bad call is an error the client sees, not a crash
	cmd := exec.Command(bin, "--config", filepath.Join(e.proj, ".mcp.json"), "--server", "memvault", "--cli",
		"--method", "tools/call", "--tool-name", "expand", "--tool-arg", "id=n_nosuchnode")
	cmd.Dir, cmd.Env = e.proj, e.env
	out, _ := cmd.CombinedOutput()
	if !strings.Contains(string(out), "n_nosuchnode") {
		t.Errorf("expand of an unknown node: %s", clipHead(string(out)))
	}
	e.requireFsck()
}

// ---------------------------------------------------------------------------
// The fake model's scripted tool call

// mcpCallMarker, at the start of a line of the prompt, makes the fake model
// answer with a call of one of memvault's tools: "MCPCALL recall QUERY".
// It calls once: a conversation that holds a tool result already gets a
// text answer.
const mcpCallMarker = "MCPCALL "

// wantsToolCall finds the tool call a conversation's prompt asks for, when
// no tool result is in it yet.
func wantsToolCall(msgs []any) (tool, query string, ok bool) {
	for _, m := range msgs {
		// a result in any of the three APIs' shapes: Anthropic's
		// tool_result block, the Responses API's function_call_output
		// item, Gemini's functionResponse part
		for _, block := range list(mapOf(m)["content"]) {
			if mapOf(block)["type"] == "tool_result" {
				return "", "", false
			}
		}
		for _, part := range list(mapOf(m)["parts"]) {
			if mapOf(part)["functionResponse"] != nil {
				return "", "", false
			}
		}
		if mapOf(m)["type"] == "function_call_output" || mapOf(m)["role"] == "tool" {
			return "", "", false // the Responses API's result item, chat completions' tool message
		}
	}
	for _, m := range msgs {
		mm := mapOf(m)
		if mm["role"] != "user" {
			continue
		}
		text := textOf(mm["content"])
		if text == "" {
			text = textOf(mm["parts"])
		}
		for _, line := range strings.Split(text, "\n") {
			if rest, found := strings.CutPrefix(strings.TrimSpace(line), mcpCallMarker); found {
				tool, query, _ = strings.Cut(rest, " ")
				return tool, query, tool != ""
			}
		}
	}
	return "", "", false
}

// mcpToolUseID is the id of the fake model's tool call, which the harness
// must send back with the tool's result.
const mcpToolUseID = "toolu_memvault_e2e_1"

// anthropicToolUse answers with a tool_use block calling name with
// {"query": query}, streamed or not as the request asks.
func anthropicToolUse(w http.ResponseWriter, body map[string]any, n int, name, query string) {
	model, _ := body["model"].(string)
	input := map[string]any{"query": query}
	id := fmt.Sprintf("msg_fake%d", n)
	usage := map[string]any{"input_tokens": 100, "output_tokens": 20, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
	if stream, _ := body["stream"].(bool); !stream {
		writeJSON(w, map[string]any{"id": id, "type": "message", "role": "assistant", "model": model,
			"content":     []any{map[string]any{"type": "tool_use", "id": mcpToolUseID, "name": name, "input": input}},
			"stop_reason": "tool_use", "stop_sequence": nil, "usage": usage})
		return
	}
	s := newSSE(w)
	ev := func(typ string, data map[string]any) {
		data["type"] = typ
		s.event(typ, data)
	}
	args, _ := json.Marshal(input)
	ev("message_start", map[string]any{"message": map[string]any{"id": id, "type": "message", "role": "assistant", "model": model,
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": usage}})
	ev("content_block_start", map[string]any{"index": 0, "content_block": map[string]any{"type": "tool_use", "id": mcpToolUseID, "name": name, "input": map[string]any{}}})
	ev("content_block_delta", map[string]any{"index": 0, "delta": map[string]any{"type": "input_json_delta", "partial_json": string(args)}})
	ev("content_block_stop", map[string]any{"index": 0})
	ev("message_delta", map[string]any{"delta": map[string]any{"stop_reason": "tool_use", "stop_sequence": nil}, "usage": map[string]any{"output_tokens": 20}})
	ev("message_stop", map[string]any{})
}

// responsesFunctionCall answers a Responses API request with a call of
// tool in namespace (Codex offers an MCP server's tools as the namespace
// mcp__SERVER), arguments {"query": query}.
func responsesFunctionCall(w http.ResponseWriter, n int, namespace, tool, query string) {
	args, _ := json.Marshal(map[string]any{"query": query})
	rid := fmt.Sprintf("resp_fake%d", n)
	item := map[string]any{"type": "function_call", "id": fmt.Sprintf("fc_fake%d", n), "call_id": mcpToolUseID,
		"namespace": namespace, "name": tool, "arguments": string(args), "status": "completed"}
	s := newSSE(w)
	ev := func(typ string, data map[string]any) {
		data["type"] = typ
		s.event(typ, data)
	}
	ev("response.created", map[string]any{"response": map[string]any{"id": rid, "object": "response", "status": "in_progress", "output": []any{}}})
	ev("response.output_item.added", map[string]any{"output_index": 0, "item": item})
	ev("response.output_item.done", map[string]any{"output_index": 0, "item": item})
	ev("response.completed", map[string]any{"response": map[string]any{"id": rid, "object": "response", "status": "completed",
		"output": []any{item}, "usage": map[string]any{"input_tokens": 100, "input_tokens_details": map[string]any{"cached_tokens": 0},
			"output_tokens": 20, "output_tokens_details": map[string]any{"reasoning_tokens": 0}, "total_tokens": 120}}})
}

// geminiFunctionCall answers a streamGenerateContent request with a call
// of name (Gemini CLI offers an MCP server's tools as mcp_SERVER_TOOL),
// arguments {"query": query}.
func geminiFunctionCall(w http.ResponseWriter, name, query string) {
	s := newSSE(w)
	s.event("", map[string]any{"candidates": []any{map[string]any{"content": map[string]any{"role": "model",
		"parts": []any{map[string]any{"functionCall": map[string]any{"name": name, "args": map[string]any{"query": query}}}}},
		"finishReason": "STOP", "index": 0}},
		"usageMetadata": map[string]any{"promptTokenCount": 100, "candidatesTokenCount": 20, "totalTokenCount": 120}, "modelVersion": "gemini-fake"})
}

// offeredTool is how a chat completions request lets the model call
// memvault's tool with {"query": query}: a function whose name holds
// "memvault" and ends with the tool's (OpenCode: memvault_recall), or,
// behind OpenClaw's tool search, its tool_call with the catalog's name of
// the tool (memvault__recall).
func offeredTool(body map[string]any, tool, query string) (string, map[string]any) {
	args := map[string]any{"query": query}
	search := false
	for _, t := range list(body["tools"]) {
		name, _ := mapOf(mapOf(t)["function"])["name"].(string)
		if strings.Contains(name, "memvault") && strings.HasSuffix(name, tool) {
			return name, args
		}
		search = search || name == "tool_call"
	}
	if search {
		return "tool_call", map[string]any{"id": "memvault__" + tool, "args": args}
	}
	return "memvault_" + tool, args
}

// chatToolCall answers a chat completions request with a call of name
// with input, streamed or not as the request asks.
func chatToolCall(w http.ResponseWriter, body map[string]any, n int, name string, input map[string]any) {
	args, _ := json.Marshal(input)
	call := map[string]any{"id": mcpToolUseID, "type": "function", "function": map[string]any{"name": name, "arguments": string(args)}}
	id := fmt.Sprintf("chatcmpl-fake%d", n)
	model, _ := body["model"].(string)
	usage := map[string]any{"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}
	if stream, _ := body["stream"].(bool); !stream {
		writeJSON(w, map[string]any{"id": id, "object": "chat.completion", "created": 1, "model": model,
			"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": nil,
				"tool_calls": []any{call}}, "finish_reason": "tool_calls"}}, "usage": usage})
		return
	}
	s := newSSE(w)
	chunk := func(choices []any, usage any) {
		c := map[string]any{"id": id, "object": "chat.completion.chunk", "created": 1, "model": model, "choices": choices}
		if usage != nil {
			c["usage"] = usage
		}
		s.event("", c)
	}
	streamed := map[string]any{"index": 0, "id": mcpToolUseID, "type": "function", "function": map[string]any{"name": name, "arguments": string(args)}}
	chunk([]any{map[string]any{"index": 0, "delta": map[string]any{"role": "assistant", "tool_calls": []any{streamed}}, "finish_reason": nil}}, nil)
	chunk([]any{map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": "tool_calls"}}, nil)
	chunk([]any{}, usage)
	fmt.Fprint(w, "data: [DONE]\n\n")
}

// toolResultIn returns the text of the tool result for mcpToolUseID in a
// logged Anthropic request, and whether there is one.
func toolResultIn(body string) (string, bool) {
	var req map[string]any
	if json.Unmarshal([]byte(body), &req) != nil {
		return "", false
	}
	for _, m := range list(req["messages"]) {
		for _, block := range list(mapOf(m)["content"]) {
			b := mapOf(block)
			if b["type"] == "tool_result" && b["tool_use_id"] == mcpToolUseID {
				return textOf(b["content"]), true
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
	claude := harnessBin(t, "MEMVAULT_E2E_CLAUDE", "claude-code")
	if inNetns(t) {
		return
	}
	e := newE2E(t)
	requireMCPCommand(t, e.bin)
	e.setenv("ANTHROPIC_BASE_URL="+e.model.URL(), "ANTHROPIC_API_KEY=sk-fake",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1")
	runs := e.mcpStarts()
	e.install("claude-code")

	// The tool runs without a question only where the person allowed it:
	// here on the command line, as a settings rule would.
	r := e.mustRun(120*time.Second, claude, "-p", "look it up\n"+mcpCallMarker+"recall "+e.mark,
		"--output-format", "json", "--allowedTools", "mcp__memvault__recall")
	e.requireMCPStarted(runs)
	reqs := e.model.requests("/v1/messages")
	var called, answered *loggedRequest
	for i := range reqs {
		var req map[string]any
		json.Unmarshal([]byte(reqs[i].Body), &req)
		if _, _, ok := wantsToolCall(list(req["messages"])); ok && called == nil {
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
		t.Fatalf("no request was answered with the tool call (log: %s)\nstdout: %s", filepath.Join(e.dir, "requests.jsonl"), clipHead(r.stdout))
	}
	if answered == nil {
		t.Fatalf("Claude Code sent no result of the recall call back (log: %s)\nstdout: %s\nstderr: %s",
			filepath.Join(e.dir, "requests.jsonl"), clipHead(r.stdout), clipHead(r.stderr))
	}
	result, _ := toolResultIn(answered.Body)
	if !strings.Contains(result, e.factID) || !strings.Contains(result, e.mark) {
		t.Fatalf("the tool result sent back in request #%d is not recall's answer (want the fact %s, %s):\n%s",
			answered.N, e.factID, e.mark, clipHead(result))
	}
	if answered.N <= called.N {
		t.Errorf("the tool result (request #%d) came before the call (request #%d)", answered.N, called.N)
	}
	if !strings.Contains(r.stdout, "Fake answer") {
		t.Errorf("the turn did not end with the model's answer after the tool:\n%s", clipHead(r.stdout))
	}
}

// TestE2EMCPCodex: a real Codex, installed at project scope (the MCP
// server in the project's .codex/config.toml, which Codex reads in a
// trusted project), offline against the fake model, whose reply calls
// recall in the namespace mcp__memvault: Codex starts memvault mcp, calls
// the tool, and sends recall's answer back in its next request.
func TestE2EMCPCodex(t *testing.T) {
	codex := harnessBin(t, "MEMVAULT_E2E_CODEX", "codex")
	if inNetns(t) {
		return
	}
	e := newE2E(t)
	requireMCPCommand(t, e.bin)
	codexHome := filepath.Join(e.home, ".codex")
	os.MkdirAll(codexHome, 0o755)
	config := filepath.Join(codexHome, "config.toml")
	os.WriteFile(config, []byte(fmt.Sprintf(`model = "fake-model"
model_provider = "fake"
check_for_update_on_startup = false

[model_providers.fake]
name = "fake"
base_url = "%s/v1"
wire_api = "responses"
env_key = "FAKE_API_KEY"
request_max_retries = 0
stream_max_retries = 0

[features]
plugins = false

[analytics]
enabled = false

[projects.%q]
trust_level = "trusted"
`, e.model.URL(), e.proj)), 0o644)
	e.setenv("CODEX_HOME="+codexHome, "FAKE_API_KEY=x")
	runs := e.mcpStarts()
	e.install("codex")
	codexTrust(t, config, filepath.Join(e.proj, ".codex", "hooks.json"))
	if data, _ := os.ReadFile(filepath.Join(e.proj, ".codex", "config.toml")); !strings.Contains(string(data), "[mcp_servers.memvault]") {
		t.Fatalf("install registered no MCP server in .codex/config.toml:\n%s", data)
	}

	r := e.mustRun(120*time.Second, codex, "exec", "--skip-git-repo-check", "look it up\n"+mcpCallMarker+"recall "+e.mark)
	e.requireMCPStarted(runs)
	var called, answered *loggedRequest
	reqs := e.model.requests("/v1/responses")
	for i := range reqs {
		var req map[string]any
		json.Unmarshal([]byte(reqs[i].Body), &req)
		if _, _, ok := wantsToolCall(list(req["input"])); ok && called == nil {
			called = &reqs[i]
			if !strings.Contains(reqs[i].Body, `"mcp__memvault"`) || !strings.Contains(reqs[i].Body, `"recall"`) {
				t.Errorf("request #%d, answered with the tool call, offers no mcp__memvault namespace with recall", reqs[i].N)
			}
		}
		for _, it := range list(req["input"]) {
			if m := mapOf(it); m["type"] == "function_call_output" && m["call_id"] == mcpToolUseID && answered == nil {
				answered = &reqs[i]
				out, _ := json.Marshal(m["output"])
				if !strings.Contains(string(out), e.factID) || !strings.Contains(string(out), e.mark) {
					t.Fatalf("the tool output sent back in request #%d is not recall's answer (want the fact %s):\n%s", reqs[i].N, e.factID, clipHead(string(out)))
				}
			}
		}
	}
	if called == nil {
		t.Fatalf("no request was answered with the tool call (log: %s)\nstdout: %s", filepath.Join(e.dir, "requests.jsonl"), clipHead(r.stdout))
	}
	if answered == nil || answered.N <= called.N {
		t.Fatalf("Codex sent no result of the recall call back after request #%d (log: %s)\nstdout: %s\nstderr: %s",
			called.N, filepath.Join(e.dir, "requests.jsonl"), clipHead(r.stdout), clipHead(r.stderr))
	}
	if !strings.Contains(r.stdout, "Fake answer") {
		t.Errorf("the turn did not end with the model's answer after the tool:\n%s", clipHead(r.stdout))
	}
}

// TestE2EMCPGemini: a real Gemini CLI, installed at project scope (the
// server in .gemini/settings.json beside the hooks), offline against the
// fake model, whose reply calls mcp_memvault_recall: Gemini CLI starts
// memvault mcp, calls the tool (allowed on the command line: in -p mode
// it offers only the tools that need no question), and sends recall's
// answer back in its next request.
func TestE2EMCPGemini(t *testing.T) {
	gemini := harnessBin(t, "MEMVAULT_E2E_GEMINI", "gemini")
	if inNetns(t) {
		return
	}
	e := newE2E(t)
	requireMCPCommand(t, e.bin)
	settings := filepath.Join(e.proj, ".gemini", "settings.json")
	os.MkdirAll(filepath.Dir(settings), 0o755)
	os.WriteFile(settings, []byte(`{"security": {"auth": {"selectedType": "gemini-api-key"}}, "privacy": {"usageStatisticsEnabled": false}, "general": {"disableAutoUpdate": true}}`), 0o644)
	e.setenv("GEMINI_API_KEY=fake", "GOOGLE_GEMINI_BASE_URL="+e.model.URL(), "GEMINI_CLI_TRUST_WORKSPACE=true")
	runs := e.mcpStarts()
	e.install("gemini")
	r := e.mustRun(120*time.Second, gemini, "-p", "look it up\n"+mcpCallMarker+"recall "+e.mark, "-o", "json",
		"--allowed-tools", "mcp_memvault_recall")
	e.requireMCPStarted(runs)
	var called, answered *loggedRequest
	reqs := e.model.requests("/v1beta/models/")
	for i := range reqs {
		if !strings.Contains(reqs[i].Path, "streamGenerateContent") {
			continue // the CLI's own side requests (routing, next speaker)
		}
		var req map[string]any
		json.Unmarshal([]byte(reqs[i].Body), &req)
		contents := list(req["contents"])
		if _, _, ok := wantsToolCall(contents); ok && called == nil {
			called = &reqs[i]
			if !strings.Contains(reqs[i].Body, `"mcp_memvault_recall"`) {
				t.Errorf("request #%d, answered with the tool call, offers no mcp_memvault_recall", reqs[i].N)
			}
		}
		for _, c := range contents {
			for _, p := range list(mapOf(c)["parts"]) {
				fr := mapOf(mapOf(p)["functionResponse"])
				if fr == nil || answered != nil {
					continue
				}
				answered = &reqs[i]
				out, _ := json.Marshal(fr["response"])
				if fr["name"] != "mcp_memvault_recall" || !strings.Contains(string(out), e.factID) || !strings.Contains(string(out), e.mark) {
					t.Fatalf("the function response sent back in request #%d is not recall's answer (want the fact %s):\n%s %s", reqs[i].N, e.factID, fr["name"], clipHead(string(out)))
				}
			}
		}
	}
	if called == nil {
		t.Fatalf("no request was answered with the tool call (log: %s)\nstdout: %s", filepath.Join(e.dir, "requests.jsonl"), clipHead(r.stdout))
	}
	if answered == nil || answered.N <= called.N {
		t.Fatalf("Gemini CLI sent no result of the recall call back after request #%d (log: %s)\nstdout: %s\nstderr: %s",
			called.N, filepath.Join(e.dir, "requests.jsonl"), clipHead(r.stdout), clipHead(r.stderr))
	}
}

// TestE2EMCPOpenCode: a real OpenCode, installed at project scope (the
// server in the project's opencode.json, beside the user's provider
// settings), offline against the fake model, whose reply calls
// memvault_recall: OpenCode starts memvault mcp, calls the tool, and
// sends recall's answer back as a tool message.
func TestE2EMCPOpenCode(t *testing.T) {
	opencode := harnessBin(t, "MEMVAULT_E2E_OPENCODE", "opencode")
	if inNetns(t) {
		return
	}
	e := newE2E(t)
	requireMCPCommand(t, e.bin)
	cfg := map[string]any{
		"$schema": "https://opencode.ai/config.json", "autoupdate": false, "share": "disabled",
		"provider": map[string]any{"fake": map[string]any{"npm": "@ai-sdk/openai-compatible", "name": "fake",
			"options": map[string]any{"baseURL": e.model.URL() + "/v1", "apiKey": "x"},
			"models":  map[string]any{"fake-model": map[string]any{"name": "fake-model", "limit": map[string]any{"context": 100000, "output": 4096}}}}},
		"model": "fake/fake-model", "small_model": "fake/fake-model",
	}
	data, _ := json.MarshalIndent(cfg, "", "  ")
	os.WriteFile(filepath.Join(e.proj, "opencode.json"), data, 0o644)
	e.setenv("OPENCODE_DISABLE_AUTOUPDATE=1", "OPENCODE_DISABLE_MODELS_FETCH=1", "OPENCODE_DISABLE_DEFAULT_PLUGINS=1",
		"OPENCODE_DISABLE_SHARE=1", "npm_config_offline=true")
	runs := e.mcpStarts()
	e.install("opencode")
	if data, _ := os.ReadFile(filepath.Join(e.proj, "opencode.json")); !strings.Contains(string(data), `"memvault": {`) || !strings.Contains(string(data), `"fake-model"`) {
		t.Fatalf("install did not add memvault's server to the project's opencode.json beside its settings:\n%s", data)
	}
	r := e.mustRun(150*time.Second, opencode, "run", "--format", "json", "look it up\n"+mcpCallMarker+"recall "+e.mark)
	e.requireMCPStarted(runs)
	var called, answered *loggedRequest
	reqs := e.model.requests("/v1/chat/completions")
	for i := range reqs {
		var req map[string]any
		json.Unmarshal([]byte(reqs[i].Body), &req)
		msgs := list(req["messages"])
		if _, _, ok := wantsToolCall(msgs); ok && called == nil && strings.Contains(reqs[i].Body, `"memvault_recall"`) {
			called = &reqs[i]
		}
		for _, m := range msgs {
			mm := mapOf(m)
			if mm["role"] != "tool" || mm["tool_call_id"] != mcpToolUseID || answered != nil {
				continue
			}
			answered = &reqs[i]
			if out := textOf(mm["content"]); !strings.Contains(out, e.factID) || !strings.Contains(out, e.mark) {
				t.Fatalf("the tool message sent back in request #%d is not recall's answer (want the fact %s):\n%s", reqs[i].N, e.factID, clipHead(out))
			}
		}
	}
	if called == nil {
		t.Fatalf("no request offering memvault_recall was answered with the tool call (log: %s)\nstdout: %s", filepath.Join(e.dir, "requests.jsonl"), clipHead(r.stdout))
	}
	if answered == nil || answered.N <= called.N {
		t.Fatalf("OpenCode sent no result of the recall call back after request #%d (log: %s)\nstdout: %s\nstderr: %s",
			called.N, filepath.Join(e.dir, "requests.jsonl"), clipHead(r.stdout), clipHead(r.stderr))
	}
}

// TestE2EMCPOpenClaw: a real OpenClaw (openclaw agent --local), installed
// at project scope (the server in mcp.servers of its config, run in the
// project's folder), offline against the fake model, whose reply calls
// memvault's recall: OpenClaw starts memvault mcp, calls the tool, and
// sends recall's answer back as a tool message.
func TestE2EMCPOpenClaw(t *testing.T) {
	openclaw := harnessBin(t, "MEMVAULT_E2E_OPENCLAW", "openclaw")
	if inNetns(t) {
		return
	}
	e := newE2E(t)
	requireMCPCommand(t, e.bin)
	if node24 := os.Getenv("NODE24"); node24 != "" {
		if info, err := os.Stat(node24); err == nil && !info.IsDir() {
			node24 = filepath.Dir(node24)
		}
		for i, kv := range e.env {
			if strings.HasPrefix(kv, "PATH=") {
				e.env[i] = "PATH=" + node24 + string(os.PathListSeparator) + strings.TrimPrefix(kv, "PATH=")
			}
		}
	}
	config := filepath.Join(e.dir, "openclaw.json")
	state := filepath.Join(e.dir, "openclaw-state")
	os.MkdirAll(state, 0o755)
	models, _ := json.Marshal(map[string]any{"providers": map[string]any{"fake": map[string]any{"baseUrl": e.model.URL() + "/v1", "apiKey": "x",
		"api": "openai-completions", "models": []any{map[string]any{"id": "fake-model", "name": "fake-model",
			"contextWindow": 200000, "maxTokens": 4096}}}}})
	os.WriteFile(config, []byte("{\n  models: "+string(models)+",\n  agents: {defaults: {model: {primary: 'fake/fake-model'}}},\n}\n"), 0o644)
	e.setenv("OPENCLAW_CONFIG_PATH="+config, "OPENCLAW_STATE_DIR="+state, "OPENCLAW_OFFLINE=1", "OPENCLAW_NO_AUTO_UPDATE=1")
	runs := e.mcpStarts()
	e.install("openclaw")

	r := e.mustRun(150*time.Second, openclaw, "agent", "--local", "--session-id", "mcp", "--message", "look it up\n"+mcpCallMarker+"recall "+e.mark, "--json")
	e.requireMCPStarted(runs)
	var called, answered *loggedRequest
	reqs := e.model.requests("/v1/chat/completions")
	for i := range reqs {
		var req map[string]any
		json.Unmarshal([]byte(reqs[i].Body), &req)
		msgs := list(req["messages"])
		if _, _, ok := wantsToolCall(msgs); ok && called == nil {
			called = &reqs[i]
			if name, _ := offeredTool(req, "recall", ""); !strings.Contains(reqs[i].Body, `"`+name+`"`) {
				t.Errorf("request #%d, answered with the tool call, offers no way to call memvault's recall", reqs[i].N)
			}
		}
		for _, m := range msgs {
			mm := mapOf(m)
			// OpenClaw keeps only the letters and digits of a call's id
			if id, _ := mm["tool_call_id"].(string); mm["role"] != "tool" || alnum(id) != alnum(mcpToolUseID) || answered != nil {
				continue
			}
			answered = &reqs[i]
			if out := textOf(mm["content"]); !strings.Contains(out, e.factID) || !strings.Contains(out, e.mark) {
				t.Fatalf("the tool message sent back in request #%d is not recall's answer (want the fact %s):\n%s", reqs[i].N, e.factID, clipHead(out))
			}
		}
	}
	if called == nil {
		t.Fatalf("no request was answered with the tool call (log: %s)\nstdout: %s", filepath.Join(e.dir, "requests.jsonl"), clipHead(r.stdout))
	}
	if answered == nil || answered.N <= called.N {
		t.Fatalf("OpenClaw sent no result of the recall call back after request #%d (log: %s)\nstdout: %s\nstderr: %s",
			called.N, filepath.Join(e.dir, "requests.jsonl"), clipHead(r.stdout), clipHead(r.stderr))
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
