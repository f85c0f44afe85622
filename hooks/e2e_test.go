// End-to-end tests of the hooks against the real harness binaries, offline.
//
// Each test installs memvault into a harness with `memvault install`, runs
// the harness for a turn or two against a fake model server written here
// (on 127.0.0.1, port 0), and checks what reached the model and what the
// vault recorded. They run only when told where a harness is:
//
//	MEMVAULT_E2E_CLAUDE    path of the `claude` binary   (@anthropic-ai/claude-code, pinned in .ci/e2e-harnesses.sh)
//	MEMVAULT_E2E_CODEX     path of the `codex` binary    (@openai/codex)
//	MEMVAULT_E2E_OPENCODE  path of the `opencode` binary (opencode-ai)
//	MEMVAULT_E2E_GEMINI    path of the `gemini` binary   (@google/gemini-cli)
//	MEMVAULT_E2E_OPENCLAW  path of the `openclaw` binary (openclaw)
//	NODE24                 a Node >= 24.16 binary (or its bin folder) for OpenClaw; default: `node` on PATH
//	MEMVAULT_E2E_BIN       optional: a prebuilt memvault binary (default: built from this module)
//	MEMVAULT_E2E_NONETNS=1 optional: do not run the harness in a private network namespace
//	MEMVAULT_E2E_KEEP=1    optional: keep each test's folder (home, project, vault, requests.jsonl)
//
// .ci/e2e-harnesses.sh installs the pinned versions from npm and prints
// these variables. A test whose variable is unset skips with the reason.
//
// Network: when the test runs as root and `unshare` and `ip` exist, each
// test re-runs itself inside `unshare -n` (a network namespace with only
// loopback up), fake server and harness together, so the harness provably
// reaches nothing but 127.0.0.1. Otherwise it runs directly: the harness is
// configured to talk to 127.0.0.1 only.
package hooks_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/memvault/memvault/vault/vaulttest"
)

const netnsEnv = "MEMVAULT_E2E_IN_NETNS"

// ---------------------------------------------------------------------------
// Fake model server

type loggedRequest struct {
	N    int
	Path string
	Body string
}

// fakeModel answers the model APIs the harnesses call and logs every
// request body, so a test can grep them for markers.
type fakeModel struct {
	srv  *httptest.Server
	mu   sync.Mutex
	reqs []loggedRequest
	log  *os.File
	// bigUsage: the next chat-completions answer to a prompt containing
	// BIGUSAGE reports a near-full context window (once: more would make
	// OpenCode compact in a loop).
	bigDone atomic.Bool
}

func newFakeModel(t *testing.T, logPath string) *fakeModel {
	t.Helper()
	f := &fakeModel{}
	lf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	f.log = lf
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve)) // 127.0.0.1:0
	t.Cleanup(func() {
		f.srv.CloseClientConnections()
		f.srv.Close()
		lf.Close()
	})
	t.Logf("fake model server %s, request log %s", f.srv.URL, logPath)
	return f
}

func (f *fakeModel) URL() string { return f.srv.URL }

// requests returns the logged requests whose path starts with prefix.
func (f *fakeModel) requests(prefix string) []loggedRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []loggedRequest
	for _, r := range f.reqs {
		if strings.HasPrefix(r.Path, prefix) {
			out = append(out, r)
		}
	}
	return out
}

func (f *fakeModel) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.reqs)
}

func (f *fakeModel) serve(w http.ResponseWriter, req *http.Request) {
	data, _ := io.ReadAll(req.Body)
	f.mu.Lock()
	n := len(f.reqs) + 1
	f.reqs = append(f.reqs, loggedRequest{N: n, Path: req.URL.RequestURI(), Body: string(data)})
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

// textOf flattens the text of a message content in any of the APIs' shapes.
func textOf(x any) string {
	switch v := x.(type) {
	case string:
		return v
	case []any:
		var parts []string
		for _, e := range v {
			parts = append(parts, textOf(e))
		}
		return strings.Join(parts, "\n")
	case map[string]any:
		if s, ok := v["text"].(string); ok {
			return s
		}
		if c, ok := v["content"]; ok {
			return textOf(c)
		}
		if p, ok := v["parts"]; ok {
			return textOf(p)
		}
	}
	return ""
}

func list(x any) []any { l, _ := x.([]any); return l }

func mapOf(x any) map[string]any { m, _ := x.(map[string]any); return m }

func clip(s string, n int) string {
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

// mindLines returns the line of a prompt that the fake model answers with a
// reply's control lines of the event-sourced mind (issue 21): a
// commitment, a claim the state contradicts (the setup's fact is no
// commitment), a reflection, and a constraint, which the default policy
// refuses from a reply. check, once the harness's hooks have read the
// reply, requires exactly their events: one commitment, one rejected claim
// with its reason, one reflection, no constraint, and one violation that
// names the refused line; the harness's turn itself went on.
func (e *e2e) mindLines() (lines string, check func()) {
	commit := "publish the changelog " + randWord("commitword")
	claimWord := randWord("claimword")
	reflect := "the fixture made the failure easy to see " + randWord("reflectword")
	constraint := "never deploy on a friday " + randWord("constraintword")
	reply := "COMMIT: " + commit +
		"\nCLAIM: commitment.open={\"id\":\"" + e.factID + "\",\"note\":\"" + claimWord + "\"}" +
		"\nREFLECT: {\"text\":\"" + reflect + "\"}" +
		"\nCONSTRAINT: " + constraint
	lines = "\nMIND64:" + base64.StdEncoding.EncodeToString([]byte(reply))
	with := func(kind, word string) []map[string]any {
		var out []map[string]any
		for _, r := range e.ledger(kind) {
			if text, _ := r["text"].(string); strings.Contains(text, word) {
				out = append(out, r)
			}
		}
		return out
	}
	check = func() {
		e.t.Helper()
		if n := len(with("commitment.open", commit)); n != 1 {
			e.t.Errorf("the reply's COMMIT: line made %d commitments, want 1\nhooks.log:\n%s", n, e.hooksLog())
		}
		claims := with("claim", claimWord)
		if len(claims) != 1 {
			e.t.Errorf("the reply's CLAIM: line made %d claims, want 1\nhooks.log:\n%s", len(claims), e.hooksLog())
		} else if d, _ := claims[0]["data"].(map[string]any); d["status"] != "rejected" || !strings.Contains(fmt.Sprint(d["reason"]), "not a commitment") {
			e.t.Errorf("the claim that a fact is an open commitment was not rejected with its reason: %v", d)
		}
		if n := len(with("reflection", reflect)); n != 1 {
			e.t.Errorf("the reply's REFLECT: line made %d reflections, want 1\nhooks.log:\n%s", n, e.hooksLog())
		}
		if n := len(with("constraint", constraint)); n != 0 {
			e.t.Errorf("the reply's CONSTRAINT: line was recorded (%d constraints): the default policy forbids it from a control line", n)
		}
		var refused int
		for _, r := range e.ledger("violation") {
			d, _ := r["data"].(map[string]any)
			if d["kind"] == "constraint" && d["source"] == "control" && d["control"] != nil && r["session"] != "" {
				refused++
			}
		}
		if refused != 1 {
			e.t.Errorf("%d violations name the reply's refused CONSTRAINT: line, want 1\nhooks.log:\n%s", refused, e.hooksLog())
		}
	}
	return lines, check
}

// requireClosedNext fails unless the next action with text is in the
// ledger and closed (a DONE: line of a reply closed it), and is gone from
// what holds now.
func (e *e2e) requireClosedNext(text string) {
	e.t.Helper()
	var found map[string]any
	for _, r := range e.ledger("next") {
		if r["text"] == text {
			found = r
		}
	}
	if found == nil {
		e.t.Fatalf("the NEXT: line of a reply recorded no next action %q\nhooks.log:\n%s", text, e.hooksLog())
	}
	if found["status"] != "closed" {
		e.t.Fatalf("the DONE: line of a reply did not close the next action %q: status %v\nhooks.log:\n%s", text, found["status"], e.hooksLog())
	}
	if strings.Contains(e.memvault("ledger", "--current", "--kind", "next"), text) {
		e.t.Fatalf("ledger --current still lists the closed next action %q", text)
	}
}

// Anthropic messages (Claude Code).
func (f *fakeModel) anthropic(w http.ResponseWriter, body map[string]any, n int) {
	msgs := list(body["messages"])
	if tool, query, ok := wantsToolCall(msgs); ok {
		anthropicToolUse(w, body, n, "mcp__memvault__"+tool, query) // e2e_mcp_test.go
		return
	}
	lastUser := ""
	for i := len(msgs) - 1; i >= 0; i-- {
		// Hook output arrives as trailing role:"system" messages.
		if m := mapOf(msgs[i]); m["role"] == "user" {
			lastUser = textOf(m["content"])
			break
		}
	}
	text := fmt.Sprintf("Fake answer %d to: %s", n, clip(lastUser, 60)) + echoControls(lastUser)
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
func (f *fakeModel) responses(w http.ResponseWriter, body map[string]any, n int) {
	if tool, query, ok := wantsToolCall(list(body["input"])); ok {
		responsesFunctionCall(w, n, "mcp__memvault", tool, query) // e2e_mcp_test.go
		return
	}
	lastUser := ""
	for _, it := range list(body["input"]) {
		if m := mapOf(it); m["role"] == "user" {
			lastUser = textOf(m["content"])
		}
	}
	if s, ok := body["input"].(string); ok {
		lastUser = s
	}
	text := fmt.Sprintf("Fake answer %d to: %s", n, clip(lastUser, 60)) + echoControls(lastUser)
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
func (f *fakeModel) chat(w http.ResponseWriter, body map[string]any, n int) {
	if tool, query, ok := wantsToolCall(list(body["messages"])); ok {
		name, args := offeredTool(body, tool, query)
		chatToolCall(w, body, n, name, args) // e2e_mcp_test.go
		return
	}
	// lastUser is the last user message; turn, every user message since
	// the last assistant or tool message: OpenClaw sends the prompt (with
	// its prepended context) and then a user message of its own.
	lastUser, turn := "", ""
	for _, m := range list(body["messages"]) {
		switch mm := mapOf(m); mm["role"] {
		case "user":
			lastUser = textOf(mm["content"])
			turn += "\n" + lastUser
		case "assistant", "tool":
			turn = ""
		}
	}
	text := fmt.Sprintf("Fake answer %d to: %s", n, clip(lastUser, 60)) + echoControls(turn)
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
func (f *fakeModel) gemini(w http.ResponseWriter, req *http.Request, body map[string]any, n int) {
	contents := list(body["contents"])
	lastText := ""
	if len(contents) > 0 {
		lastText = textOf(mapOf(contents[len(contents)-1])["parts"])
	}
	usage := map[string]any{"promptTokenCount": 100, "candidatesTokenCount": 20, "totalTokenCount": 120}
	if strings.Contains(req.URL.Path, ":generateContent") {
		cfg := mapOf(body["generationConfig"])
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
	if tool, query, ok := wantsToolCall(contents); ok {
		geminiFunctionCall(w, "mcp_memvault_"+tool, query) // e2e_mcp_test.go
		return
	}
	text := fmt.Sprintf("Fake answer %d to: %s", n, clip(lastText, 60)) + echoControls(lastText)
	s := newSSE(w)
	s.event("", map[string]any{"candidates": []any{map[string]any{"content": map[string]any{"role": "model",
		"parts": []any{map[string]any{"text": text}}}, "finishReason": "STOP", "index": 0}}, "usageMetadata": usage, "modelVersion": "gemini-fake"})
}

// ---------------------------------------------------------------------------
// Test scaffolding

var (
	buildOnce sync.Once
	builtBin  string
	buildErr  error
)

// memvaultBin returns the memvault binary the hooks will run.
func memvaultBin(t *testing.T) string {
	t.Helper()
	if b := os.Getenv("MEMVAULT_E2E_BIN"); b != "" {
		return b
	}
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "memvault-e2e-bin-")
		if err != nil {
			buildErr = err
			return
		}
		builtBin = filepath.Join(dir, "memvault")
		cmd := exec.Command("go", "build", "-o", builtBin, "github.com/memvault/memvault/cmd/memvault")
		out, err := cmd.CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return builtBin
}

// harnessBin returns the harness path from envVar, or skips the test.
func harnessBin(t *testing.T, envVar, name string) string {
	t.Helper()
	p := os.Getenv(envVar)
	if p == "" {
		t.Skipf("e2e %s: %s is not set (run .ci/e2e-harnesses.sh to install the pinned harnesses)", name, envVar)
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("e2e %s: %s=%s: %v", name, envVar, p, err)
	}
	return p
}

var netnsOK = sync.OnceValue(func() bool {
	if os.Geteuid() != 0 || os.Getenv("MEMVAULT_E2E_NONETNS") != "" {
		return false
	}
	if _, err := exec.LookPath("unshare"); err != nil {
		return false
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return false
	}
	return exec.Command("unshare", "-n", "ip", "link", "set", "lo", "up").Run() == nil
})

// inNetns re-runs the calling test inside a private network namespace with
// only loopback up, and reports true when the caller should return (the
// inner run did the work). In the inner run, or where namespaces are not
// available, it returns false and the test goes on here.
func inNetns(t *testing.T) bool {
	t.Helper()
	if os.Getenv(netnsEnv) == "1" {
		return false
	}
	if !netnsOK() {
		t.Logf("running the harness without a network namespace (not root, no unshare/ip, or MEMVAULT_E2E_NONETNS)")
		return false
	}
	bin := memvaultBin(t) // build outside: the namespace has no network
	args := []string{"-n", "sh", "-c", `ip link set lo up && exec "$@"`, "sh", os.Args[0],
		"-test.run=^" + t.Name() + "$", "-test.v=true", "-test.count=1", "-test.timeout=10m"}
	cmd := exec.Command("unshare", args...)
	cmd.Env = append(os.Environ(), netnsEnv+"=1", "MEMVAULT_E2E_BIN="+bin)
	var out bytes.Buffer
	cmd.Stdout = io.MultiWriter(&out, prefixWriter(os.Stdout))
	cmd.Stderr = cmd.Stdout
	err := cmd.Run()
	switch {
	case err != nil:
		t.Fatalf("inner run in a network namespace failed: %v", err)
	case strings.Contains(out.String(), "--- SKIP: "+t.Name()):
		t.Skipf("inner run skipped: %s", innerSkipReason(out.String(), t.Name()))
	case !strings.Contains(out.String(), "--- PASS: "+t.Name()):
		t.Fatalf("inner run did not report PASS")
	}
	return true
}

// innerSkipReason is the last line the inner run logged before it
// skipped (the t.Skip message, whose own line .ci/run's summary leaves out
// with the rest of the inner output).
func innerSkipReason(out, name string) string {
	before, _, _ := strings.Cut(out, "--- SKIP: "+name)
	reason := "see its output above"
	for _, l := range strings.Split(before, "\n") {
		if m := regexp.MustCompile(`^\s*\S+_test\.go:[0-9]+: (.*)$`).FindStringSubmatch(l); m != nil {
			reason = m[1]
		}
	}
	return reason
}

type lineWriter struct {
	mu  sync.Mutex
	w   io.Writer
	buf []byte
}

func prefixWriter(w io.Writer) io.Writer { return &lineWriter{w: w} }

func (l *lineWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			break
		}
		fmt.Fprintf(l.w, "    [netns] %s\n", l.buf[:i])
		l.buf = l.buf[i+1:]
	}
	return len(p), nil
}

// e2e is one harness test's world: a home, a project with a git repo and
// a vault, the memvault binary and the fake model.
type e2e struct {
	t       *testing.T
	dir     string
	home    string
	proj    string
	bin     string
	model   *fakeModel
	env     []string // the harness's environment
	mark    string   // a word only the remembered fact contains
	factID  string
	started time.Time
}

func randWord(prefix string) string {
	b := make([]byte, 5)
	rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

func newE2E(t *testing.T) *e2e {
	t.Helper()
	dir := t.TempDir()
	if os.Getenv("MEMVAULT_E2E_KEEP") != "" {
		// Keep the home, project, vault and request log for a look later.
		d, err := os.MkdirTemp("", "memvault-e2e-"+t.Name()+"-")
		if err != nil {
			t.Fatal(err)
		}
		dir = d
		t.Logf("MEMVAULT_E2E_KEEP: keeping %s", dir)
	}
	e := &e2e{t: t, dir: dir, bin: memvaultBin(t), started: time.Now()}
	e.home = filepath.Join(e.dir, "home")
	e.proj = filepath.Join(e.dir, "proj")
	for _, d := range []string{e.home, e.proj} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	e.model = newFakeModel(t, filepath.Join(e.dir, "requests.jsonl"))
	// A clean environment: nothing of the caller's harness or vault setup.
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		// PWD too: OpenCode takes its project folder from $PWD, not the
		// working directory.
		drop := k == "HOME" || k == "PWD" || k == "OLDPWD" || k == netnsEnv || k == "NODE24"
		for _, p := range []string{"MEMVAULT_", "GIT_", "ANTHROPIC_", "OPENAI_", "CODEX_", "CLAUDE", "GEMINI_", "GOOGLE_", "OPENCODE_", "OPENCLAW_", "XDG_"} {
			drop = drop || strings.HasPrefix(k, p)
		}
		if !drop {
			e.env = append(e.env, kv)
		}
	}
	e.env = append(e.env, "HOME="+e.home, "PWD="+e.proj, "GIT_AUTHOR_NAME=e2e", "GIT_AUTHOR_EMAIL=e2e@example.invalid",
		"GIT_COMMITTER_NAME=e2e", "GIT_COMMITTER_EMAIL=e2e@example.invalid")
	// memvault on PATH, as a person has it: project-scope hooks run it from
	// there (docs/HOOKS.md, "Installing").
	for i, kv := range e.env {
		if strings.HasPrefix(kv, "PATH=") {
			e.env[i] = "PATH=" + filepath.Dir(e.bin) + string(os.PathListSeparator) + strings.TrimPrefix(kv, "PATH=")
		}
	}
	e.git("init", "-q")
	e.memvault("init")
	e.mark = randWord("zqmark")
	// A global fact: MEMORY.md lists it (in the project folder a row
	// would otherwise belong to the project's thread).
	e.factID = strings.TrimSpace(e.memvault("remember", "--global", "The deployment codeword is "+e.mark+"."))
	return e
}

func (e *e2e) setenv(kv ...string) { e.env = append(e.env, kv...) }

func (e *e2e) git(args ...string) string {
	e.t.Helper()
	return vaulttest.Git{Dir: e.proj, Env: e.env}.Run(e.t, args...)
}

// memvault runs the memvault CLI in the project and fails the test on error.
func (e *e2e) memvault(args ...string) string {
	e.t.Helper()
	out, err := e.memvaultErr(args...)
	if err != nil {
		e.t.Fatalf("memvault %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func (e *e2e) memvaultErr(args ...string) (string, error) {
	cmd := exec.Command(e.bin, args...)
	cmd.Dir = e.proj
	cmd.Env = e.env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil {
		return stdout.String() + stderr.String(), err
	}
	return stdout.String(), nil
}

// hook runs `memvault hook` with a payload, as a harness would.
func (e *e2e) hook(harness, event string, payload map[string]any) string {
	e.t.Helper()
	data, _ := json.Marshal(payload)
	cmd := exec.Command(e.bin, "hook", harness, event)
	cmd.Dir = e.proj
	cmd.Env = e.env
	cmd.Stdin = bytes.NewReader(data)
	out, err := cmd.Output()
	if err != nil {
		e.t.Fatalf("memvault hook %s %s: %v", harness, event, err)
	}
	return string(out)
}

type runResult struct {
	stdout, stderr string
	err            error
	took           time.Duration
}

// run runs a harness command in the project with a timeout; its whole
// process group is killed when the time is up.
func (e *e2e) run(timeout time.Duration, name string, args ...string) runResult {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = e.proj
	cmd.Env = e.env
	cmd.Stdin = nil // /dev/null: Codex waits on an open stdin
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	r := runResult{stdout: stdout.String(), stderr: stderr.String(), err: err, took: time.Since(start)}
	if cmd.Process != nil {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // leftovers of the group
	}
	e.t.Logf("ran %s %s: %v in %.1fs", filepath.Base(name), strings.Join(args, " "), err, r.took.Seconds())
	if ctx.Err() != nil {
		e.t.Fatalf("%s timed out after %s\nstdout: %s\nstderr: %s", filepath.Base(name), timeout, clipHead(r.stdout), clipHead(r.stderr))
	}
	return r
}

func clipHead(s string) string {
	if len(s) > 3000 {
		return s[:3000] + "…"
	}
	return s
}

func (e *e2e) mustRun(timeout time.Duration, name string, args ...string) runResult {
	e.t.Helper()
	r := e.run(timeout, name, args...)
	if r.err != nil {
		e.t.Fatalf("%s %s: %v\nstdout: %s\nstderr: %s", filepath.Base(name), strings.Join(args, " "), r.err, clipHead(r.stdout), clipHead(r.stderr))
	}
	return r
}

// install runs `memvault install <harness>` and returns its output.
func (e *e2e) install(harness string, args ...string) string {
	e.t.Helper()
	out := e.memvault(append([]string{"install", harness}, args...)...)
	e.t.Logf("memvault install %s: %s", harness, strings.TrimSpace(out))
	return out
}

// --- assertions -----------------------------------------------------------

// requireMarkIn asserts that some model request in reqs carries the
// remembered fact's marker, and returns the first such request.
func (e *e2e) requireMarkIn(what string, reqs []loggedRequest) loggedRequest {
	e.t.Helper()
	for _, r := range reqs {
		if strings.Contains(r.Body, e.mark) {
			return r
		}
	}
	e.t.Fatalf("%s: the session-start context (marker %s) reached none of %d model requests (log: %s)",
		what, e.mark, len(reqs), filepath.Join(e.dir, "requests.jsonl"))
	return loggedRequest{}
}

type sessionRow struct {
	Agent   string `json:"agent"`
	Session string `json:"session"`
}

func (e *e2e) sessions() []map[string]any {
	e.t.Helper()
	var rows []map[string]any
	out := e.memvault("sessions", "--json")
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		e.t.Fatalf("sessions --json: %v\n%s", err, out)
	}
	return rows
}

// requirePromptInTranscript asserts that the session is listed for the
// default agent and that its transcript holds the prompt word.
func (e *e2e) requirePromptInTranscript(session, word string) {
	e.t.Helper()
	rows := e.sessions()
	found := false
	for _, r := range rows {
		if fmt.Sprint(r["session"]) == session && fmt.Sprint(r["agent"]) == "default" {
			found = true
		}
	}
	if !found {
		e.t.Fatalf("memvault sessions --json lists no agent default / session %s: %v", session, rows)
	}
	out := e.memvault("transcript", "show", "--json", "--session", session)
	var msgs []struct {
		N    int    `json:"n"`
		Role string `json:"role"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal([]byte(out), &msgs); err != nil {
		e.t.Fatalf("transcript show --json: %v\n%s", err, clipHead(out))
	}
	var with []int
	for _, m := range msgs {
		if m.Role != "user" {
			continue
		}
		if strings.Contains(m.Text, word) {
			with = append(with, m.N)
		}
		// Memory memvault injected must not come back as the user's words.
		if strings.Contains(m.Text, word) && strings.Contains(m.Text, e.mark) {
			e.t.Errorf("session %s: user message #%d stores memvault's injected context with the prompt:\n%s", session, m.N, clipHead(m.Text))
		}
	}
	switch {
	case len(with) == 0:
		e.t.Fatalf("transcript of session %s has no user message with the prompt word %s:\n%s", session, word, clipHead(out))
	case len(with) > 1:
		e.t.Errorf("transcript of session %s stores the prompt with %s %d times (user messages %v): the hook's copy and the harness transcript's copy are not merged",
			session, word, len(with), with)
	}
}

func (e *e2e) nodes(kind, session string) []map[string]any {
	e.t.Helper()
	args := []string{"nodes", "--json", "--kind", kind}
	if session != "" {
		args = append(args, "--session", session)
	}
	out := e.memvault(args...)
	var rows []map[string]any
	if strings.TrimSpace(out) == "null" {
		return nil
	}
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		e.t.Fatalf("nodes --json: %v\n%s", err, out)
	}
	return rows
}

func (e *e2e) ledger(kind string) []map[string]any {
	e.t.Helper()
	out := e.memvault("ledger", "--json", "--kind", kind)
	var rows []map[string]any
	if strings.TrimSpace(out) == "null" {
		return nil
	}
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		e.t.Fatalf("ledger --json: %v\n%s", err, out)
	}
	return rows
}

// sessionStarts returns the sources of the session.started events of a
// session, in order.
func (e *e2e) sessionStarts(session string) []string {
	var out []string
	for _, ev := range e.ledger("session.started") {
		if fmt.Sprint(ev["session"]) == session {
			out = append(out, fmt.Sprint(mapOf(ev["data"])["source"]))
		}
	}
	return out
}

// requireSummary asserts a session-summary node for the session. When the
// session end left the summary as a deferred job, a later hook event runs
// it: triggerDeferred (if not nil) is that event; the test says when it was
// needed.
func (e *e2e) requireSummary(session string, triggerDeferred func()) {
	e.t.Helper()
	if len(e.nodes("session-summary", session)) > 0 {
		e.t.Logf("session-summary node for %s: made by the session end itself", session)
		e.requireHeadLists(session)
		return
	}
	if triggerDeferred == nil {
		e.t.Fatalf("no session-summary node for session %s", session)
	}
	triggerDeferred()
	if len(e.nodes("session-summary", session)) == 0 {
		e.t.Fatalf("no session-summary node for session %s, even after one more hook event ran the deferred jobs\nhooks.log:\n%s\njobs: %v",
			session, e.hooksLog(), e.jobs())
	}
	e.t.Logf("session-summary node for %s: made by a deferred job that the next hook event ran", session)
	e.requireHeadLists(session)
}

// requireHeadLists asserts that MEMORY.md was refreshed after the session
// end: it lists the session's latest summary node and the remembered fact.
func (e *e2e) requireHeadLists(session string) {
	e.t.Helper()
	nodes := e.nodes("session-summary", session)
	id := fmt.Sprint(nodes[len(nodes)-1]["id"])
	data, err := os.ReadFile(filepath.Join(e.proj, ".memory", "MEMORY.md"))
	if err != nil {
		e.t.Errorf("no MEMORY.md after the session end: %v", err)
		return
	}
	if !strings.Contains(string(data), id) || !strings.Contains(string(data), e.mark) {
		e.t.Errorf("MEMORY.md after the session end lacks the summary node %s or the fact %s:\n%s", id, e.mark, data)
	}
}

func (e *e2e) jobs() []string {
	ents, _ := os.ReadDir(filepath.Join(e.proj, ".memory", ".state", "jobs"))
	var names []string
	for _, d := range ents {
		names = append(names, d.Name())
	}
	return names
}

func (e *e2e) hooksLog() string {
	data, _ := os.ReadFile(filepath.Join(e.proj, ".memory", ".logs", "hooks.log"))
	return string(data)
}

// requireFsck asserts the vault's git repository is sound and the ledger verifies.
func (e *e2e) requireFsck() {
	e.t.Helper()
	cmd := exec.Command("git", "-C", filepath.Join(e.proj, ".memory"), "fsck", "--strict")
	cmd.Env = e.env
	if out, err := cmd.CombinedOutput(); err != nil {
		e.t.Fatalf("git fsck of the vault: %v\n%s", err, out)
	}
	cmd = exec.Command("git", "-C", filepath.Join(e.proj, ".memory"), "status", "--porcelain")
	cmd.Env = e.env
	if out, err := cmd.CombinedOutput(); err != nil {
		e.t.Fatalf("git status of the vault: %v\n%s", err, out)
	} else if s := strings.TrimSpace(string(out)); s != "" {
		e.t.Logf("vault work tree after the run (uncommitted):\n%s", s)
	}
	if out, err := e.memvaultErr("verify"); err != nil {
		e.t.Fatalf("memvault verify: %v\n%s", err, out)
	}
}

// holdLock takes the vault's write lock the way memvault does (flock on
// .memory/.locks/vault.lock) and returns its release.
func (e *e2e) holdLock() func() {
	e.t.Helper()
	p := filepath.Join(e.proj, ".memory", ".locks", "vault.lock")
	os.MkdirAll(filepath.Dir(p), 0o700)
	f, err := os.OpenFile(p, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		e.t.Fatal(err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		e.t.Fatalf("flock %s: %v", p, err)
	}
	return func() {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}
}

// requireBusyLogged asserts that hooks.log recorded the busy vault since
// line n of the log.
func (e *e2e) requireBusyLogged(before string) {
	e.t.Helper()
	log := strings.TrimPrefix(e.hooksLog(), before)
	if !strings.Contains(log, "busy") {
		e.t.Errorf("a hook ran against the locked vault but hooks.log says nothing about a busy vault:\n%s", log)
	}
}

// ---------------------------------------------------------------------------
// Claude Code

// newClaudeE2E finds the claude binary and sets up a run against the fake
// model with memvault installed at user scope; nil when the test runs
// inside its network namespace (inNetns has run it there).
func newClaudeE2E(t *testing.T) (string, *e2e) {
	claude := harnessBin(t, "MEMVAULT_E2E_CLAUDE", "claude-code")
	if inNetns(t) {
		return claude, nil
	}
	e := newE2E(t)
	e.setenv("ANTHROPIC_BASE_URL="+e.model.URL(), "ANTHROPIC_API_KEY=sk-fake",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1")
	e.install("claude-code", "--scope", "user")
	return claude, e
}

func TestE2EClaudeCode(t *testing.T) {
	claude, e := newClaudeE2E(t)
	if e == nil {
		return
	}

	type ccOut struct {
		SessionID string `json:"session_id"`
		Result    string `json:"result"`
		IsError   bool   `json:"is_error"`
	}
	parse := func(r runResult) ccOut {
		var o ccOut
		if err := json.Unmarshal([]byte(strings.TrimSpace(r.stdout)), &o); err != nil {
			t.Fatalf("claude output is not JSON: %v\n%s\nstderr: %s", err, r.stdout, r.stderr)
		}
		if o.IsError {
			t.Fatalf("claude reported an error: %s", r.stdout)
		}
		return o
	}

	// Turn 1: a new session. The start context reaches the first request.
	// The reply decides something (the fake model echoes the line).
	word1 := randWord("promptword")
	decision := "keep the release branch frozen " + randWord("decisionword")
	next := "write the release notes " + randWord("nextword")
	mind, checkMind := e.mindLines()
	r := e.mustRun(90*time.Second, claude, "-p", "hello, first turn "+word1+"\nDECISION: "+decision+"\nNEXT: "+next+mind, "--output-format", "json")
	sid := parse(r).SessionID
	if sid == "" {
		t.Fatalf("no session_id in %s", r.stdout)
	}
	e.requireMarkIn("startup", e.model.requests("/v1/messages?"))
	e.requirePromptInTranscript(sid, word1)

	// Turn 2: /compact in the same session (manual compaction).
	before := e.model.count()
	e.mustRun(90*time.Second, claude, "-p", "/compact", "--resume", sid, "--output-format", "json")
	if len(e.nodes("compaction", sid)) == 0 {
		t.Fatalf("no compaction node for session %s after /compact\nhooks.log:\n%s", sid, e.hooksLog())
	}
	starts := e.sessionStarts(sid)
	if !contains(starts, "compact") {
		t.Fatalf("no session-start with source compact recorded for %s: %v", sid, starts)
	}

	// Turn 3: the first request after the compaction carries the context
	// that SessionStart(compact) re-injected.
	word3 := randWord("promptword")
	e.mustRun(90*time.Second, claude, "-p", "after the compaction "+word3+"\nDONE: "+next, "--resume", sid, "--output-format", "json")
	after := e.model.requests("/v1/messages?")
	var post []loggedRequest
	for _, q := range after {
		if q.N > before && !strings.Contains(q.Body, "CRITICAL: Respond with TEXT ONLY") {
			post = append(post, q)
		}
	}
	req := e.requireMarkIn("after /compact", withWord(post, word3))
	// The compaction dropped the history, and the fake summary does not
	// hold the marker: after it, the marker comes once from
	// SessionStart(compact) (kept in the new history) and once from this
	// run's SessionStart(resume). Both render as "SessionStart hook
	// additional context" (Claude Code does not name the source there).
	if n := strings.Count(req.Body, e.mark); n < 2 {
		t.Errorf("the first request after /compact (#%d) carries the marker %d time(s); want 2 (compact re-injection + resume)", req.N, n)
	}
	// The decision made before the compaction is in the memory injected
	// after it (the history that held it is gone).
	if !strings.Contains(req.Body, decision) {
		t.Errorf("the first request after /compact (#%d) does not carry the decision made before it (%q)", req.N, decision)
	}
	e.requirePromptInTranscript(sid, word3)
	// The reply's DONE: line closed the next action its first reply set.
	e.requireClosedNext(next)

	// Session end: each -p run ends the session; the summary node follows.
	e.requireSummary(sid, func() {
		e.hook("claude-code", "session-start", map[string]any{"session_id": "e2e-trigger", "cwd": e.proj,
			"hook_event_name": "SessionStart", "source": "startup"})
	})
	checkMind()
	e.requireFsck()

	// Fail-open: with the vault lock held by someone else, a whole turn
	// (start, prompt, stop, end) still answers.
	release := e.holdLock()
	logBefore := e.hooksLog()
	r = e.mustRun(60*time.Second, claude, "-p", "turn with a locked vault", "--output-format", "json")
	o := parse(r)
	release()
	if !strings.Contains(o.Result, "Fake answer") {
		t.Fatalf("turn with a locked vault: unexpected result %q", o.Result)
	}
	t.Logf("locked-vault turn took %.1fs", r.took.Seconds())
	e.requireBusyLogged(logBefore)
	e.requireFsck()
}

// TestE2EClaudeCodeCapturesWithABrokenConfig: a memvault.toml that does
// not parse refuses structured writes, but a real Claude Code turn still
// has its prompt stored and committed, and the model is told the vault
// needs fixing (docs/HOOKS.md, "Capture never stops").
func TestE2EClaudeCodeCapturesWithABrokenConfig(t *testing.T) {
	claude, e := newClaudeE2E(t)
	if e == nil {
		return
	}
	config := filepath.Join(e.proj, ".memory", "memvault.toml")
	good, err := os.ReadFile(config)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(config, append(append([]byte{}, good...), "\n[heads\n"...), 0o600); err != nil {
		t.Fatal(err)
	}

	word := randWord("promptword")
	decision := "wait for the fix " + randWord("decisionword") // the fake model echoes it
	r := e.mustRun(90*time.Second, claude, "-p", "a turn under a broken config "+word+"\nDECISION: "+decision, "--output-format", "json")
	var o struct {
		SessionID string `json:"session_id"`
	}
	if err := json.Unmarshal([]byte(strings.TrimSpace(r.stdout)), &o); err != nil || o.SessionID == "" {
		t.Fatalf("claude output: %v\n%s\nstderr: %s", err, r.stdout, r.stderr)
	}
	req := e.requireMarkIn("broken config", e.model.requests("/v1/messages?"))
	if !strings.Contains(req.Body, "memvault: WARNING: memvault.toml does not parse") {
		t.Errorf("the start context reaching the model (#%d) does not warn about memvault.toml", req.N)
	}
	if _, err := e.memvaultErr("remember", "refused"); err == nil {
		t.Fatal("remember succeeded with a broken memvault.toml")
	}
	if status := e.git("-C", ".memory", "status", "--porcelain"); strings.Contains(status, "transcripts/") {
		t.Errorf("the session's transcript was not committed at its end:\n%s", status)
	}
	if log := e.hooksLog(); !strings.Contains(log, "structured writes refused, transcript lines still captured") {
		t.Errorf("hooks.log does not say why events were refused:\n%s", log)
	}

	// Fixed by hand: the prompt is there, once, and the decision follows
	// at the next stop.
	if err := os.WriteFile(config, good, 0o600); err != nil {
		t.Fatal(err)
	}
	e.requirePromptInTranscript(o.SessionID, word)
	e.hook("claude-code", "stop", map[string]any{"session_id": o.SessionID, "cwd": e.proj, "hook_event_name": "Stop",
		"transcript_path": transcriptPathOf(t, e, o.SessionID)})
	found := false
	for _, row := range e.ledger("decision") {
		found = found || strings.Contains(fmt.Sprint(row["text"]), decision)
	}
	if !found {
		t.Errorf("the DECISION: line of the turn under a broken config was not recorded after the fix\nhooks.log:\n%s", e.hooksLog())
	}
	e.requireFsck()
}

// transcriptPathOf finds Claude Code's transcript file of a session under
// the e2e home.
func transcriptPathOf(t *testing.T, e *e2e, session string) string {
	t.Helper()
	matches, _ := filepath.Glob(filepath.Join(e.home, ".claude", "projects", "*", session+".jsonl"))
	if len(matches) != 1 {
		t.Fatalf("Claude Code's transcript of %s: %v", session, matches)
	}
	return matches[0]
}

func withWord(reqs []loggedRequest, word string) []loggedRequest {
	var out []loggedRequest
	for _, q := range reqs {
		if strings.Contains(q.Body, word) {
			out = append(out, q)
		}
	}
	return out
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// ---------------------------------------------------------------------------
// Codex

// codexTrust appends to config.toml the trust entries that Codex's /hooks
// review would write for every hook in hooksFile: the key is
// <file>:<event_snake>:<group>:<handler>, the hash sha256 over the compact,
// key-sorted JSON of the normalised handler (fixtures/hooks/README.md).
func codexTrust(t *testing.T, configToml, hooksFile string) {
	t.Helper()
	data, err := os.ReadFile(hooksFile)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Hooks map[string][]struct {
			Matcher *string `json:"matcher"`
			Hooks   []struct {
				Type    string   `json:"type"`
				Command string   `json:"command"`
				Timeout *float64 `json:"timeout"`
			} `json:"hooks"`
		} `json:"hooks"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	snake := regexp.MustCompile(`([a-z])([A-Z])`)
	var b strings.Builder
	var events []string
	for ev := range doc.Hooks {
		events = append(events, ev)
	}
	sort.Strings(events)
	for _, ev := range events {
		name := strings.ToLower(snake.ReplaceAllString(ev, "${1}_${2}"))
		for gi, g := range doc.Hooks[ev] {
			for hi, h := range g.Hooks {
				timeout := 600
				if ev == "SessionEnd" {
					timeout = 1
				}
				if h.Timeout != nil {
					timeout = int(*h.Timeout)
				}
				if ev == "SessionEnd" && timeout > 3 {
					timeout = 3
				}
				id := map[string]any{"event_name": name, "hooks": []any{map[string]any{"async": false, "command": h.Command,
					"timeout": timeout, "type": h.Type}}}
				if g.Matcher != nil {
					id["matcher"] = *g.Matcher
				}
				var buf bytes.Buffer
				enc := json.NewEncoder(&buf)
				enc.SetEscapeHTML(false)
				enc.Encode(id)
				sum := sha256.Sum256(bytes.TrimSpace(buf.Bytes()))
				fmt.Fprintf(&b, "\n[hooks.state.%q]\ntrusted_hash = \"sha256:%x\"\n", fmt.Sprintf("%s:%s:%d:%d", hooksFile, name, gi, hi), sum)
			}
		}
	}
	f, err := os.OpenFile(configToml, os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.WriteString(b.String())
}

func TestE2ECodex(t *testing.T) {
	codex := harnessBin(t, "MEMVAULT_E2E_CODEX", "codex")
	if inNetns(t) {
		return
	}
	e := newE2E(t)
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
`, e.model.URL())), 0o644)
	e.setenv("CODEX_HOME="+codexHome, "FAKE_API_KEY=x")
	out := e.install("codex", "--scope", "user")
	if !strings.Contains(out, "/hooks") {
		t.Errorf("memvault install codex does not tell the user to trust the hooks in /hooks:\n%s", out)
	}
	// Trust the hooks as the user's /hooks review would, so they run
	// without --dangerously-bypass-hook-trust (untrusted hooks are skipped
	// silently: the marker check below fails if the trust is wrong).
	codexTrust(t, config, filepath.Join(codexHome, "hooks.json"))
	// doctor reads the same trust: none of its lines is about Codex's
	// trust now (the hooks firing below prove Codex agrees).
	if out, _ := e.memvaultErr("doctor", "--scope", "user"); strings.Contains(out, "in Codex") {
		t.Errorf("memvault doctor still reports a Codex trust problem after the hooks were trusted:\n%s", out)
	}

	sessionID := func() string {
		var newest string
		filepath.Walk(filepath.Join(codexHome, "sessions"), func(p string, info os.FileInfo, err error) error {
			if err == nil && strings.HasPrefix(info.Name(), "rollout-") && p > newest {
				newest = p
			}
			return nil
		})
		m := regexp.MustCompile(`([0-9a-f-]{36})\.jsonl$`).FindStringSubmatch(newest)
		if m == nil {
			t.Fatalf("no Codex rollout file under %s", codexHome)
		}
		return m[1]
	}

	word1 := randWord("promptword")
	decision := "keep the release branch frozen " + randWord("decisionword")
	next := "write the release notes " + randWord("nextword")
	mind, checkMind := e.mindLines()
	e.mustRun(90*time.Second, codex, "exec", "--skip-git-repo-check", "hello, first turn "+word1+"\nDECISION: "+decision+"\nNEXT: "+next+mind)
	sid := sessionID()
	e.requireMarkIn("startup", e.model.requests("/v1/responses"))
	e.requirePromptInTranscript(sid, word1)

	// Turn 2: automatic compaction at the start of the resumed turn.
	before := e.model.count()
	word2 := randWord("promptword")
	e.mustRun(90*time.Second, codex, "exec", "--skip-git-repo-check", "-c", "model_auto_compact_token_limit=10", "resume", sid, "second turn "+word2+"\nDONE: "+next)
	if len(e.nodes("compaction", sid)) == 0 {
		t.Fatalf("no compaction node for session %s after automatic compaction\nhooks.log:\n%s", sid, e.hooksLog())
	}
	starts := e.sessionStarts(sid)
	if !contains(starts, "compact") {
		t.Fatalf("no session-start with source compact recorded for %s: %v", sid, starts)
	}
	var post []loggedRequest
	for _, q := range e.model.requests("/v1/responses") {
		if q.N > before && strings.Contains(q.Body, word2) {
			post = append(post, q)
		}
	}
	req := e.requireMarkIn("after compaction", post)
	if n := strings.Count(req.Body, e.mark); n < 2 {
		t.Logf("request #%d after compaction carries the marker %d time(s)", req.N, n)
	}
	// The decision made before the compaction is in the memory injected
	// after it.
	if !strings.Contains(req.Body, decision) {
		t.Errorf("the first request after compaction (#%d) does not carry the decision made before it (%q)", req.N, decision)
	}
	e.requirePromptInTranscript(sid, word2)
	e.requireClosedNext(next)
	checkMind()

	e.requireSummary(sid, func() {
		e.hook("codex", "session-start", map[string]any{"session_id": "e2e-trigger", "cwd": e.proj,
			"hook_event_name": "SessionStart", "source": "startup"})
	})
	e.requireFsck()

	release := e.holdLock()
	logBefore := e.hooksLog()
	r := e.mustRun(60*time.Second, codex, "exec", "--skip-git-repo-check", "turn with a locked vault")
	release()
	if !strings.Contains(r.stdout, "Fake answer") {
		t.Fatalf("turn with a locked vault: no answer in stdout:\n%s\nstderr: %s", r.stdout, clipHead(r.stderr))
	}
	t.Logf("locked-vault turn took %.1fs", r.took.Seconds())
	e.requireBusyLogged(logBefore)
	e.requireFsck()
}

// ---------------------------------------------------------------------------
// OpenCode

func TestE2EOpenCode(t *testing.T) {
	opencode := harnessBin(t, "MEMVAULT_E2E_OPENCODE", "opencode")
	if inNetns(t) {
		return
	}
	e := newE2E(t)
	cfg := map[string]any{
		"$schema": "https://opencode.ai/config.json", "autoupdate": false, "share": "disabled",
		"provider": map[string]any{"fake": map[string]any{"npm": "@ai-sdk/openai-compatible", "name": "fake",
			"options": map[string]any{"baseURL": e.model.URL() + "/v1", "apiKey": "x"},
			"models":  map[string]any{"fake-model": map[string]any{"name": "fake-model", "limit": map[string]any{"context": 100000, "output": 4096}}}}},
		"model": "fake/fake-model", "small_model": "fake/fake-model",
	}
	data, _ := json.Marshal(cfg)
	os.WriteFile(filepath.Join(e.proj, "opencode.json"), data, 0o644)
	e.setenv("OPENCODE_DISABLE_AUTOUPDATE=1", "OPENCODE_DISABLE_MODELS_FETCH=1", "OPENCODE_DISABLE_DEFAULT_PLUGINS=1",
		"OPENCODE_DISABLE_SHARE=1", "npm_config_offline=true")
	e.install("opencode")

	sidRE := regexp.MustCompile(`"sessionID":"(ses_[^"]+)"`)
	word1 := randWord("promptword")
	decision := "keep the release branch frozen " + randWord("decisionword")
	next := "write the release notes " + randWord("nextword")
	mind, checkMind := e.mindLines()
	r := e.mustRun(120*time.Second, opencode, "run", "--format", "json", "hello, first turn "+word1+"\nDECISION: "+decision+"\nNEXT: "+next+mind+"\nthat is all")
	m := sidRE.FindStringSubmatch(r.stdout)
	if m == nil {
		t.Fatalf("no sessionID in opencode output:\n%s\nstderr: %s", clipHead(r.stdout), clipHead(r.stderr))
	}
	sid := m[1]
	e.requireMarkIn("startup", e.model.requests("/v1/chat/completions"))
	e.requirePromptInTranscript(sid, word1)

	// Turn 2: a big reported usage makes OpenCode compact within the turn.
	before := e.model.count()
	word2 := randWord("promptword")
	e.mustRun(120*time.Second, opencode, "run", "--format", "json", "--session", sid, "BIGUSAGE second turn "+word2)
	if len(e.nodes("compaction", sid)) == 0 {
		t.Fatalf("no compaction node for session %s after automatic compaction\nhooks.log:\n%s", sid, e.hooksLog())
	}
	if !contains(e.sessionStarts(sid), "compact") {
		t.Fatalf("no session-start with source compact recorded for %s: %v", sid, e.sessionStarts(sid))
	}
	reqs := e.model.requests("/v1/chat/completions")
	last := reqs[len(reqs)-1]
	if last.N <= before {
		t.Fatalf("no model request in the compacting turn")
	}
	req := e.requireMarkIn("after compaction (the turn's last request)", []loggedRequest{last})
	// The decision of the turn before the compaction is in the memory
	// injected after it.
	if !strings.Contains(req.Body, decision) {
		t.Errorf("the request after compaction (#%d) does not carry the decision made before it (%q)", req.N, decision)
	}
	e.requirePromptInTranscript(sid, word2)

	// No session end in `opencode run` (documented as degraded): a summary
	// node is expected once the next session's first turn has ended.
	word3 := randWord("promptword")
	// Its reply closes the first session's next action: OpenCode hands
	// over only the last answer of a turn, and the compacting turn's last
	// answer is the one after the compaction, so the DONE: line goes here.
	r = e.mustRun(120*time.Second, opencode, "run", "--format", "json", "a new session "+word3+"\nDONE: "+next+"\nthat is all")
	if m := sidRE.FindStringSubmatch(r.stdout); m == nil || m[1] == sid {
		t.Fatalf("expected a new session: %v", m)
	}
	// hooks.degradedFor("opencode")["session-end"] promises the summary at
	// the end of the next session's first turn. Checked with Errorf so that the fail-open
	// check below still runs.
	if len(e.nodes("session-summary", sid)) == 0 {
		t.Errorf("no session-summary node for OpenCode session %s after the next session's first turn (hooks' degradedFor says it makes it); jobs queued: %v",
			sid, e.jobs())
	} else {
		e.requireHeadLists(sid)
	}
	e.requireClosedNext(next)
	checkMind()
	e.requireFsck()

	release := e.holdLock()
	logBefore := e.hooksLog()
	r = e.mustRun(90*time.Second, opencode, "run", "--format", "json", "turn with a locked vault")
	release()
	if !strings.Contains(r.stdout, "Fake answer") {
		t.Fatalf("turn with a locked vault: no answer:\n%s\nstderr: %s", clipHead(r.stdout), clipHead(r.stderr))
	}
	t.Logf("locked-vault turn took %.1fs", r.took.Seconds())
	e.requireBusyLogged(logBefore)
	e.requireFsck()
}

// ---------------------------------------------------------------------------
// Gemini CLI

func TestE2EGemini(t *testing.T) {
	gemini := harnessBin(t, "MEMVAULT_E2E_GEMINI", "gemini")
	if inNetns(t) {
		return
	}
	e := newE2E(t)
	settings := filepath.Join(e.home, ".gemini", "settings.json")
	os.MkdirAll(filepath.Dir(settings), 0o755)
	// With comments, which Gemini CLI strips (it takes no trailing comma):
	// install edits around them.
	os.WriteFile(settings, []byte(`{
  // the fake model's key type
  "security": {"auth": {"selectedType": "gemini-api-key"}},
  "privacy": {"usageStatisticsEnabled": false}, /* no telemetry */
  "general": {"disableAutoUpdate": true}
}
`), 0o644)
	e.setenv("GEMINI_API_KEY=fake", "GOOGLE_GEMINI_BASE_URL="+e.model.URL(), "GEMINI_CLI_TRUST_WORKSPACE=true")
	e.install("gemini", "--scope", "user")

	type gemOut struct {
		SessionID string `json:"session_id"`
		Response  string `json:"response"`
	}
	parse := func(r runResult) gemOut {
		var o gemOut
		if err := json.Unmarshal([]byte(r.stdout), &o); err != nil {
			t.Fatalf("gemini output is not JSON: %v\n%s\nstderr: %s", err, clipHead(r.stdout), clipHead(r.stderr))
		}
		return o
	}
	word1 := randWord("promptword")
	o := parse(e.mustRun(90*time.Second, gemini, "-p", "hello, first turn "+word1, "-o", "json"))
	sid := o.SessionID
	if sid == "" {
		t.Fatalf("no session_id in gemini output")
	}
	e.requireMarkIn("startup", e.model.requests("/v1beta/models/"))
	e.requirePromptInTranscript(sid, word1)

	// Turn 2: resumed. Gemini has no post-compression event (documented as
	// degraded): no compaction node is expected, so none is checked.
	word2 := randWord("promptword")
	mind, checkMind := e.mindLines()
	o2 := parse(e.mustRun(90*time.Second, gemini, "-p", "second turn "+word2+mind, "--resume", "latest", "-o", "json"))
	if o2.SessionID != sid {
		t.Fatalf("--resume latest started session %s, not %s", o2.SessionID, sid)
	}
	e.requirePromptInTranscript(sid, word2)

	e.requireSummary(sid, func() {
		e.hook("gemini", "session-start", map[string]any{"session_id": "e2e-trigger", "cwd": e.proj,
			"hook_event_name": "SessionStart", "source": "startup"})
	})
	checkMind()
	e.requireFsck()

	release := e.holdLock()
	logBefore := e.hooksLog()
	r := e.mustRun(60*time.Second, gemini, "-p", "turn with a locked vault", "-o", "json")
	release()
	if o := parse(r); !strings.Contains(o.Response, "Fake answer") {
		t.Fatalf("turn with a locked vault: unexpected response %q\nstderr: %s", o.Response, clipHead(r.stderr))
	}
	t.Logf("locked-vault turn took %.1fs", r.took.Seconds())
	e.requireBusyLogged(logBefore)
	e.requireFsck()
}

// ---------------------------------------------------------------------------
// OpenClaw

func TestE2EOpenClaw(t *testing.T) {
	openclaw := harnessBin(t, "MEMVAULT_E2E_OPENCLAW", "openclaw")
	if inNetns(t) {
		return
	}
	node24 := os.Getenv("NODE24")
	e := newE2E(t)
	if node24 != "" {
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
	cfg := map[string]any{
		"models": map[string]any{"providers": map[string]any{"fake": map[string]any{"baseUrl": e.model.URL() + "/v1", "apiKey": "x",
			"api": "openai-completions", "models": []any{map[string]any{"id": "fake-model", "name": "fake-model",
				"contextWindow": 200000, "maxTokens": 4096}}}}},
		// OpenClaw's workspace stays its default ($OPENCLAW_STATE_DIR/
		// workspace): the plugin finds the vault from the project it was
		// installed for, which is what this checks.
		"agents": map[string]any{"defaults": map[string]any{"model": map[string]any{"primary": "fake/fake-model"}}},
	}
	// JSON5, as OpenClaw reads it: a comment, bare keys, single quotes and
	// trailing commas around the JSON values, which install edits as text.
	models, _ := json.Marshal(cfg["models"])
	json5 := "// e2e config\n{\n  models: " + string(models) + ",\n  agents: {defaults: {model: {primary: 'fake/fake-model',},},},\n}\n"
	os.WriteFile(config, []byte(json5), 0o644)
	e.setenv("OPENCLAW_CONFIG_PATH="+config, "OPENCLAW_STATE_DIR="+state, "OPENCLAW_OFFLINE=1", "OPENCLAW_NO_AUTO_UPDATE=1")
	e.install("openclaw")

	const sid = "e2e"
	agent := func(msg string) runResult {
		return e.mustRun(100*time.Second, openclaw, "agent", "--local", "--session-id", sid, "--message", msg, "--json")
	}
	word1 := randWord("promptword")
	decision := "keep the release branch frozen " + randWord("decisionword")
	next := "write the release notes " + randWord("nextword")
	mind, checkMind := e.mindLines()
	agent("hello, first turn " + word1 + "\nDECISION: " + decision + "\nNEXT: " + next + mind + "\nthat is all")
	e.requireMarkIn("first prompt", e.model.requests("/v1/chat/completions"))
	e.requirePromptInTranscript(sid, word1)

	// A near-full context window reported in turn 2 (195,000 of 200,000
	// tokens) makes OpenClaw compact at the start of turn 3, as when the
	// fixtures were captured (fixtures/hooks/openclaw/order.txt):
	// before_compaction, after_compaction, then the turn.
	agent("BIGUSAGE fill the context " + randWord("promptword"))
	before := e.model.count()
	word3 := randWord("promptword")
	agent("after compaction " + word3 + "\nDONE: " + next + "\nthat is all")
	if len(e.nodes("compaction", sid)) == 0 {
		t.Fatalf("no compaction node for session %s after a near-full context window\nhooks.log:\n%s", sid, e.hooksLog())
	}
	var post []loggedRequest
	for _, q := range e.model.requests("/v1/chat/completions") {
		if q.N > before && strings.Contains(q.Body, word3) {
			post = append(post, q)
		}
	}
	req := e.requireMarkIn("after compaction", post)
	// The decision of the first turn is in the memory injected after the
	// compaction.
	if !strings.Contains(req.Body, decision) {
		t.Errorf("the first request after compaction (#%d) does not carry the decision made before it (%q)", req.N, decision)
	}
	if n := len(e.sessionStarts(sid)); n < 2 {
		t.Errorf("want a second session-start (the re-injection after compaction) for %s, got %d", sid, n)
	}
	e.requirePromptInTranscript(sid, word3)
	e.requireClosedNext(next)
	checkMind()
	// session_end fires only with a running Gateway (documented as
	// degraded): no summary node is expected from `openclaw agent --local`.
	if n := len(e.nodes("session-summary", sid)); n > 0 {
		t.Logf("OpenClaw made %d session-summary node(s) without a Gateway", n)
	}
	e.requireFsck()

	release := e.holdLock()
	logBefore := e.hooksLog()
	r := e.mustRun(100*time.Second, openclaw, "agent", "--local", "--session-id", "locked", "--message", "turn with a locked vault", "--json")
	release()
	if !strings.Contains(r.stdout, "Fake answer") {
		t.Fatalf("turn with a locked vault: no answer:\n%s\nstderr: %s", clipHead(r.stdout), clipHead(r.stderr))
	}
	t.Logf("locked-vault turn took %.1fs", r.took.Seconds())
	e.requireBusyLogged(logBefore)
	e.requireFsck()
}
