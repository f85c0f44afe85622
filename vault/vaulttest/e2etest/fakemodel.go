package e2etest

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The fake model server: the model APIs of the five harnesses (Anthropic's
// messages, OpenAI's responses and chat completions, Gemini's
// generateContent), answered offline on 127.0.0.1 with text a test can
// find again, every request logged.

// LoggedRequest is one request the fake model received: its number in
// the order they came, its path with the query, its body, and when it came.
type LoggedRequest struct {
	N    int
	Path string
	Body string
	At   time.Time
}

// FakeModel answers the model APIs the harnesses call and logs every
// request body, so a test can grep them for markers.
type FakeModel struct {
	srv  *httptest.Server
	mu   sync.Mutex
	reqs []LoggedRequest
	log  *os.File
	// bigUsage: the next chat-completions answer to a prompt containing
	// BIGUSAGE reports a near-full context window (once: more would make
	// OpenCode compact in a loop).
	bigDone atomic.Bool
}

func newFakeModel(t *testing.T, logPath string) *FakeModel {
	t.Helper()
	f := &FakeModel{}
	lf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	f.log = lf
	f.srv = httptest.NewServer(f) // 127.0.0.1:0
	t.Cleanup(func() {
		f.srv.CloseClientConnections()
		f.srv.Close()
		lf.Close()
	})
	t.Logf("fake model server %s, request log %s", f.srv.URL, logPath)
	return f
}

// URL is the server's base URL, http://127.0.0.1:PORT, which a harness is
// configured to call.
func (f *FakeModel) URL() string { return f.srv.URL }

// Requests returns the logged requests whose path starts with prefix.
func (f *FakeModel) Requests(prefix string) []LoggedRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []LoggedRequest
	for _, r := range f.reqs {
		if strings.HasPrefix(r.Path, prefix) {
			out = append(out, r)
		}
	}
	return out
}

// Count is how many requests came so far: a test notes it before a turn
// to tell that turn's requests from the earlier ones.
func (f *FakeModel) Count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.reqs)
}

// ServeHTTP logs the request and answers it as the API its path names
// would; a test may put a handler of its own in front (to keep the
// headers, which the log leaves out).
func (f *FakeModel) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	at := time.Now()
	data, _ := io.ReadAll(req.Body)
	f.mu.Lock()
	n := len(f.reqs) + 1
	f.reqs = append(f.reqs, LoggedRequest{N: n, Path: req.URL.RequestURI(), Body: string(data), At: at})
	line, _ := json.Marshal(map[string]any{"n": n, "method": req.Method, "url": req.URL.RequestURI(), "body": json.RawMessage(validJSON(data))})
	f.log.Write(append(line, '\n'))
	f.mu.Unlock()

	var body map[string]any
	_ = json.Unmarshal(data, &body)
	p := req.URL.Path
	switch {
	case p == "/v1/messages/count_tokens":
		writeJSON(w, map[string]any{"input_tokens": 1234})
	case p == "/v1/messages":
		f.anthropic(w, body, n)
	case p == "/v1/responses":
		f.responses(w, body, n)
	case p == "/v1/chat/completions":
		f.chat(w, body, n)
	case strings.HasPrefix(p, "/v1beta/models/"):
		f.gemini(w, req, body, n)
	case p == "/v1/models":
		writeJSON(w, map[string]any{"object": "list", "data": []any{map[string]any{"id": "fake-model", "object": "model"}}})
	default:
		w.Header().Set("content-type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, `{"error":"not found"}`)
	}
}

func validJSON(b []byte) []byte {
	if json.Valid(b) {
		return b
	}
	s, _ := json.Marshal(string(b))
	return s
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("content-type", "application/json")
	json.NewEncoder(w).Encode(v)
}

type sseWriter struct {
	w http.ResponseWriter
}

func newSSE(w http.ResponseWriter) *sseWriter {
	w.Header().Set("content-type", "text/event-stream")
	w.Header().Set("cache-control", "no-cache")
	w.WriteHeader(http.StatusOK)
	return &sseWriter{w}
}

// event writes an SSE event; name "" writes a data-only event.
func (s *sseWriter) event(name string, data any) {
	b, _ := json.Marshal(data)
	if name != "" {
		fmt.Fprintf(s.w, "event: %s\n", name)
	}
	fmt.Fprintf(s.w, "data: %s\n\n", b)
	if fl, ok := s.w.(http.Flusher); ok {
		fl.Flush()
	}
}

// TextOf flattens the text of a message content in any of the APIs' shapes.
func TextOf(x any) string {
	switch v := x.(type) {
	case string:
		return v
	case []any:
		var parts []string
		for _, e := range v {
			parts = append(parts, TextOf(e))
		}
		return strings.Join(parts, "\n")
	case map[string]any:
		if s, ok := v["text"].(string); ok {
			return s
		}
		if c, ok := v["content"]; ok {
			return TextOf(c)
		}
		if p, ok := v["parts"]; ok {
			return TextOf(p)
		}
	}
	return ""
}

// List is x as a JSON array, nil when it is not one.
func List(x any) []any { l, _ := x.([]any); return l }

// MapOf is x as a JSON object, nil when it is not one.
func MapOf(x any) map[string]any { m, _ := x.(map[string]any); return m }

// Clip is the last n bytes of s with its white space folded: what the
// fake model's answer quotes of the prompt ("Fake answer 3 to: …").
func Clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		s = s[len(s)-n:]
	}
	return s
}

// echoControls repeats the prompt's lines that start with "DECISION:",
// "NEXT:" or "DONE:" and name a test's word (so the grammar the injected
// context teaches is not echoed), each on a line of its own, so that a test
// can have the model decide, plan or finish something (control lines
// memvault records from the reply). A prompt line "MIND64:<base64>" is
// replied as the lines it encodes: lines holding JSON (CLAIM:, REFLECT:)
// reach the model intact whatever a harness's command line does to
// quotes (OpenCode's `run` escapes them).
func echoControls(prompt string) string {
	var b strings.Builder
	for _, line := range strings.Split(prompt, "\n") {
		l := strings.TrimSpace(line)
		if enc, ok := strings.CutPrefix(l, "MIND64:"); ok {
			if dec, err := base64.StdEncoding.DecodeString(strings.Trim(enc, `"\`)); err == nil {
				b.WriteString("\n" + string(dec))
			}
			continue
		}
		if !strings.Contains(l, "word") {
			continue
		}
		if strings.HasPrefix(l, "DECISION:") || strings.HasPrefix(l, "NEXT:") || strings.HasPrefix(l, "DONE:") {
			b.WriteString("\n" + l)
		}
	}
	return b.String()
}

// Anthropic messages (Claude Code).
func (f *FakeModel) anthropic(w http.ResponseWriter, body map[string]any, n int) {
	msgs := List(body["messages"])
	if tool, query, ok := WantsToolCall(msgs); ok {
		anthropicToolUse(w, body, n, "mcp__memvault__"+tool, query)
		return
	}
	lastUser := ""
	for i := len(msgs) - 1; i >= 0; i-- {
		// Hook output arrives as trailing role:"system" messages.
		if m := MapOf(msgs[i]); m["role"] == "user" {
			lastUser = TextOf(m["content"])
			break
		}
	}
	text := fmt.Sprintf("Fake answer %d to: %s", n, Clip(lastUser, 60)) + echoControls(lastUser)
	if strings.Contains(lastUser, "CRITICAL: Respond with TEXT ONLY") {
		text = "<analysis>The user greeted the assistant.</analysis>\n<summary>1. Primary Request: greet.\n2. Current state: done.</summary>"
	}
	model, _ := body["model"].(string)
	if model == "" {
		model = "claude-fake"
	}
	id := fmt.Sprintf("msg_fake%d", n)
	usage := map[string]any{"input_tokens": 100, "output_tokens": 20, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
	if stream, _ := body["stream"].(bool); !stream {
		writeJSON(w, map[string]any{"id": id, "type": "message", "role": "assistant", "model": model,
			"content": []any{map[string]any{"type": "text", "text": text}}, "stop_reason": "end_turn", "stop_sequence": nil, "usage": usage})
		return
	}
	s := newSSE(w)
	ev := func(typ string, data map[string]any) {
		data["type"] = typ
		s.event(typ, data)
	}
	ev("message_start", map[string]any{"message": map[string]any{"id": id, "type": "message", "role": "assistant", "model": model,
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": usage}})
	ev("content_block_start", map[string]any{"index": 0, "content_block": map[string]any{"type": "text", "text": ""}})
	ev("content_block_delta", map[string]any{"index": 0, "delta": map[string]any{"type": "text_delta", "text": text}})
	ev("content_block_stop", map[string]any{"index": 0})
	ev("message_delta", map[string]any{"delta": map[string]any{"stop_reason": "end_turn", "stop_sequence": nil}, "usage": map[string]any{"output_tokens": 20}})
	ev("message_stop", map[string]any{})
}

// OpenAI responses (Codex).
func (f *FakeModel) responses(w http.ResponseWriter, body map[string]any, n int) {
	if tool, query, ok := WantsToolCall(List(body["input"])); ok {
		responsesFunctionCall(w, n, "mcp__memvault", tool, query)
		return
	}
	lastUser := ""
	for _, it := range List(body["input"]) {
		if m := MapOf(it); m["role"] == "user" {
			lastUser = TextOf(m["content"])
		}
	}
	if s, ok := body["input"].(string); ok {
		lastUser = s
	}
	text := fmt.Sprintf("Fake answer %d to: %s", n, Clip(lastUser, 60)) + echoControls(lastUser)
	rid := fmt.Sprintf("resp_fake%d", n)
	item := map[string]any{"type": "message", "id": fmt.Sprintf("msg_fake%d", n), "role": "assistant", "status": "completed",
		"content": []any{map[string]any{"type": "output_text", "text": text, "annotations": []any{}}}}
	s := newSSE(w)
	ev := func(typ string, data map[string]any) {
		data["type"] = typ
		s.event(typ, data)
	}
	ev("response.created", map[string]any{"response": map[string]any{"id": rid, "object": "response", "status": "in_progress", "output": []any{}}})
	ev("response.output_item.added", map[string]any{"output_index": 0, "item": map[string]any{"type": "message", "id": item["id"],
		"role": "assistant", "status": "in_progress", "content": []any{}}})
	ev("response.output_text.delta", map[string]any{"output_index": 0, "item_id": item["id"], "content_index": 0, "delta": text})
	ev("response.output_item.done", map[string]any{"output_index": 0, "item": item})
	ev("response.completed", map[string]any{"response": map[string]any{"id": rid, "object": "response", "status": "completed",
		"output": []any{item}, "usage": map[string]any{"input_tokens": 100, "input_tokens_details": map[string]any{"cached_tokens": 0},
			"output_tokens": 20, "output_tokens_details": map[string]any{"reasoning_tokens": 0}, "total_tokens": 120}}})
}

// OpenAI chat completions (OpenCode, OpenClaw).
func (f *FakeModel) chat(w http.ResponseWriter, body map[string]any, n int) {
	if tool, query, ok := WantsToolCall(List(body["messages"])); ok {
		name, args := OfferedTool(body, tool, query)
		chatToolCall(w, body, n, name, args)
		return
	}
	// lastUser is the last user message; turn, every user message since
	// the last assistant or tool message: OpenClaw sends the prompt (with
	// its prepended context) and then a user message of its own.
	lastUser, turn := "", ""
	for _, m := range List(body["messages"]) {
		switch mm := MapOf(m); mm["role"] {
		case "user":
			lastUser = TextOf(mm["content"])
			turn += "\n" + lastUser
		case "assistant", "tool":
			turn = ""
		}
	}
	text := fmt.Sprintf("Fake answer %d to: %s", n, Clip(lastUser, 60)) + echoControls(turn)
	promptTokens := 100
	if strings.Contains(turn, "BIGUSAGE") && f.bigDone.CompareAndSwap(false, true) {
		promptTokens = 195000
	}
	usage := map[string]any{"prompt_tokens": promptTokens, "completion_tokens": 20, "total_tokens": promptTokens + 20}
	id := fmt.Sprintf("chatcmpl-fake%d", n)
	model, _ := body["model"].(string)
	if stream, _ := body["stream"].(bool); !stream {
		writeJSON(w, map[string]any{"id": id, "object": "chat.completion", "created": 1, "model": model,
			"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": text}, "finish_reason": "stop"}},
			"usage":   usage})
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
	chunk([]any{map[string]any{"index": 0, "delta": map[string]any{"role": "assistant", "content": text}, "finish_reason": nil}}, nil)
	chunk([]any{map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": "stop"}}, nil)
	chunk([]any{}, usage)
	io.WriteString(w, "data: [DONE]\n\n")
}

// Gemini generateContent / streamGenerateContent (Gemini CLI).
func (f *FakeModel) gemini(w http.ResponseWriter, req *http.Request, body map[string]any, n int) {
	contents := List(body["contents"])
	lastText := ""
	if len(contents) > 0 {
		lastText = TextOf(MapOf(contents[len(contents)-1])["parts"])
	}
	usage := map[string]any{"promptTokenCount": 100, "candidatesTokenCount": 20, "totalTokenCount": 120}
	if strings.Contains(req.URL.Path, ":generateContent") {
		cfg := MapOf(body["generationConfig"])
		schema, _ := json.Marshal([]any{cfg["responseSchema"], cfg["responseJsonSchema"], body["systemInstruction"]})
		text := "<state_snapshot><overall_goal>greet</overall_goal></state_snapshot>"
		switch {
		case bytes.Contains(schema, []byte("model_choice")):
			text = `{"reasoning":"simple","model_choice":"flash"}`
		case bytes.Contains(schema, []byte("next_speaker")):
			text = `{"reasoning":"done","next_speaker":"user"}`
		case cfg["responseMimeType"] == "application/json":
			text = "{}"
		}
		writeJSON(w, map[string]any{"candidates": []any{map[string]any{"content": map[string]any{"role": "model",
			"parts": []any{map[string]any{"text": text}}}, "finishReason": "STOP", "index": 0}}, "usageMetadata": usage})
		return
	}
	if tool, query, ok := WantsToolCall(contents); ok {
		geminiFunctionCall(w, "mcp_memvault_"+tool, query)
		return
	}
	text := fmt.Sprintf("Fake answer %d to: %s", n, Clip(lastText, 60)) + echoControls(lastText)
	s := newSSE(w)
	s.event("", map[string]any{"candidates": []any{map[string]any{"content": map[string]any{"role": "model",
		"parts": []any{map[string]any{"text": text}}}, "finishReason": "STOP", "index": 0}}, "usageMetadata": usage, "modelVersion": "gemini-fake"})
}
