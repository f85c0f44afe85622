package e2etest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// The fake model's scripted tool call: a prompt line asks it to call one of
// memvault's MCP tools, the way each API calls a tool, so that a test can
// tell that a harness offered memvault's tools, called one, and sent its
// result back.

// ToolCallMarker, at the start of a line of the prompt, makes the fake model
// answer with a call of one of memvault's tools: "MCPCALL recall QUERY".
// It calls once: a conversation that holds a tool result already gets a
// text answer.
const ToolCallMarker = "MCPCALL "

// WantsToolCall finds the tool call a conversation's prompt asks for, when
// no tool result is in it yet.
func WantsToolCall(msgs []any) (tool, query string, ok bool) {
	for _, m := range msgs {
		// a result in any of the three APIs' shapes: Anthropic's
		// tool_result block, the Responses API's function_call_output
		// item, Gemini's functionResponse part
		for _, block := range List(MapOf(m)["content"]) {
			if MapOf(block)["type"] == "tool_result" {
				return "", "", false
			}
		}
		for _, part := range List(MapOf(m)["parts"]) {
			if MapOf(part)["functionResponse"] != nil {
				return "", "", false
			}
		}
		if MapOf(m)["type"] == "function_call_output" || MapOf(m)["role"] == "tool" {
			return "", "", false // the Responses API's result item, chat completions' tool message
		}
	}
	for _, m := range msgs {
		mm := MapOf(m)
		if mm["role"] != "user" {
			continue
		}
		text := TextOf(mm["content"])
		if text == "" {
			text = TextOf(mm["parts"])
		}
		for _, line := range strings.Split(text, "\n") {
			if rest, found := strings.CutPrefix(strings.TrimSpace(line), ToolCallMarker); found {
				tool, query, _ = strings.Cut(rest, " ")
				return tool, query, tool != ""
			}
		}
	}
	return "", "", false
}

// ToolUseID is the id of the fake model's tool call, which the harness
// must send back with the tool's result.
const ToolUseID = "toolu_memvault_e2e_1"

// anthropicToolUse answers with a tool_use block calling name with
// {"query": query}, streamed or not as the request asks.
func anthropicToolUse(w http.ResponseWriter, body map[string]any, n int, name, query string) {
	model, _ := body["model"].(string)
	input := map[string]any{"query": query}
	id := fmt.Sprintf("msg_fake%d", n)
	usage := map[string]any{"input_tokens": 100, "output_tokens": 20, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
	if stream, _ := body["stream"].(bool); !stream {
		writeJSON(w, map[string]any{"id": id, "type": "message", "role": "assistant", "model": model,
			"content":     []any{map[string]any{"type": "tool_use", "id": ToolUseID, "name": name, "input": input}},
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
	ev("content_block_start", map[string]any{"index": 0, "content_block": map[string]any{"type": "tool_use", "id": ToolUseID, "name": name, "input": map[string]any{}}})
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
	item := map[string]any{"type": "function_call", "id": fmt.Sprintf("fc_fake%d", n), "call_id": ToolUseID,
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

// OfferedTool is how a chat completions request lets the model call
// memvault's tool with {"query": query}: a function whose name holds
// "memvault" and ends with the tool's (OpenCode: memvault_recall), or,
// behind OpenClaw's tool search, its tool_call with the catalog's name of
// the tool (memvault__recall).
func OfferedTool(body map[string]any, tool, query string) (string, map[string]any) {
	args := map[string]any{"query": query}
	search := false
	for _, t := range List(body["tools"]) {
		name, _ := MapOf(MapOf(t)["function"])["name"].(string)
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
	call := map[string]any{"id": ToolUseID, "type": "function", "function": map[string]any{"name": name, "arguments": string(args)}}
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
	streamed := map[string]any{"index": 0, "id": ToolUseID, "type": "function", "function": map[string]any{"name": name, "arguments": string(args)}}
	chunk([]any{map[string]any{"index": 0, "delta": map[string]any{"role": "assistant", "tool_calls": []any{streamed}}, "finish_reason": nil}}, nil)
	chunk([]any{map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": "tool_calls"}}, nil)
	chunk([]any{}, usage)
	fmt.Fprint(w, "data: [DONE]\n\n")
}
