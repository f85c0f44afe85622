// End-to-end tests of executors (docs/EXECUTORS.md) with real harness
// CLIs: `claude -p`, `gemini --prompt=` and `codex exec`, registered with `memvault executor add
// --preset`, pinged, and given a `delegate` task, offline against the
// fake model of vault/vaulttest/e2etest on 127.0.0.1 (inside a network namespace with
// only loopback up where the test can make one).
//
// The executor gets memvault's sanitised environment: the fake model's
// base URL reaches it through the registry's allow-list; the harness's API
// key comes from its own files under HOME, as a login does, and a key set
// in memvault's environment must never reach the model.
package hooks_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/memvault/memvault/vault/vaulttest/e2etest"
)

// headerLog sits in front of the fake model and keeps every request's
// headers, which the fake model does not log: the API key a harness sends
// is in one.
type headerLog struct {
	srv  *httptest.Server
	mu   sync.Mutex
	reqs []http.Header
}

func newHeaderLog(t *testing.T, model *e2etest.FakeModel) *headerLog {
	h := &headerLog{}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		h.reqs = append(h.reqs, r.Header.Clone())
		h.mu.Unlock()
		model.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		h.srv.CloseClientConnections()
		h.srv.Close()
	})
	return h
}

// values returns every value of the header name, in request order.
func (h *headerLog) values(name string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, hd := range h.reqs {
		out = append(out, hd.Values(name)...)
	}
	return out
}

// holds reports whether any request's headers hold s.
func (h *headerLog) holds(s string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, hd := range h.reqs {
		for _, vs := range hd {
			for _, v := range vs {
				if strings.Contains(v, s) {
					return true
				}
			}
		}
	}
	return false
}

// executorCase is one harness CLI run as an executor.
type executorCase struct {
	preset   string
	bin      string   // the harness binary; its folder goes first on PATH
	env      []string // names the executor's allow-list passes
	set      []string // NAME=VALUE for memvault's environment (the allow-list's values)
	secret   string   // a credential's name set in memvault's environment, which must never pass
	keyHdr   string   // the header the harness sends its API key in
	key      string   // the key its files under HOME give it
	pathPref string   // the model API's path prefix
	// scope, when set: the task is given in a --file, with this folder
	// as its scope (outside the project, not a git repository)
	scope string
}

// runExecutorE2E registers c's harness as an executor through its preset,
// pings it, delegates one task to it, and checks the result end to end.
func runExecutorE2E(t *testing.T, x *executorE2E, c executorCase) {
	t.Helper()
	e := x.e2e
	secretValue := e2etest.RandWord("sk-never-passed-")
	e.Setenv(c.set...)
	e.Setenv(c.secret + "=" + secretValue)
	e.PrependPath(filepath.Dir(c.bin))
	name := "real-" + c.preset

	// Refused before anything runs, the vault as it was: the credential
	// in an allow-list.
	toml := filepath.Join(e.Proj, ".memory", "memvault.toml")
	before, err := os.ReadFile(toml)
	if err != nil {
		t.Fatal(err)
	}
	head := e.Git("-C", ".memory", "rev-parse", "HEAD")
	out, err := e.MemvaultErr("executor", "add", name+"-leaky", "--preset", c.preset, "--env", c.secret)
	if err == nil || !strings.Contains(out, "suggests a credential") {
		t.Fatalf("executor add --env %s: want a refusal naming a credential, got %v:\n%s", c.secret, err, out)
	}
	if after, _ := os.ReadFile(toml); string(after) != string(before) {
		t.Fatalf("a refused executor add changed memvault.toml:\n%s", after)
	}
	if h := e.Git("-C", ".memory", "rev-parse", "HEAD"); h != head {
		t.Fatalf("a refused executor add committed: HEAD %s → %s", head, h)
	}

	// Registered through the preset, with the allow-list, and pinged.
	args := []string{"executor", "add", name, "--preset", c.preset}
	for _, n := range c.env {
		args = append(args, "--env", n)
	}
	out = e.Memvault(args...)
	if !strings.Contains(out, "executor "+name+" added: active") {
		t.Fatalf("executor add %s --preset %s: not active:\n%s", name, c.preset, out)
	}
	out = e.Memvault("executor", "ping", name)
	if !strings.Contains(out, "executor "+name+" pinged: active") {
		t.Fatalf("executor ping %s: not active:\n%s", name, out)
	}
	out = e.Memvault("executor", "show", name, "--json")
	var entry struct {
		Command, Mode, Status string
		Args, Env             []string
	}
	if err := json.Unmarshal([]byte(out), &entry); err != nil {
		t.Fatalf("executor show --json: %v\n%s", err, out)
	}
	if entry.Status != "active" || entry.Mode != "plain" || strings.Join(entry.Env, ",") != strings.Join(c.env, ",") {
		t.Fatalf("executor show %s: %+v", name, entry)
	}

	// One task. The word is the task's own: the fake model must get it.
	// It starts with "--": the preset must not let the CLI read it as an
	// option.
	word := e2etest.RandWord("taskword")
	task := "--version and " + word + ": summarise in one line what the word names."
	thread := "project:shop"
	requestsBefore := e.Model.Count()
	if c.scope != "" {
		if err := os.MkdirAll(c.scope, 0o755); err != nil {
			t.Fatal(err)
		}
		line, _ := json.Marshal(map[string]string{"task": task, "scope": c.scope})
		file := filepath.Join(e.Dir, "tasks.jsonl")
		writeFile(t, file, string(line)+"\n")
		out = e.Memvault("delegate", "--executor", name, "--thread", thread, "--json", "--file", file)
	} else {
		out = e.Memvault("delegate", "--executor", name, "--thread", thread, "--json", "--", task)
	}
	var rep struct {
		OK       bool   `json:"ok"`
		ID       string `json:"id"`
		Kind     string `json:"kind"`
		Summary  string `json:"summary"`
		Checksum string `json:"checksum"`
		Attempts []struct {
			N    int    `json:"n"`
			Code string `json:"code"`
		} `json:"attempts"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("delegate --json: %v\n%s", err, out)
	}
	t.Logf("delegate: %s", strings.TrimSpace(out))
	if !rep.OK || rep.Kind != "executor.delegated" || len(rep.Attempts) != 1 {
		t.Fatalf("delegate to %s: want one verified result at the first try, got %s", name, out)
	}
	// The harness printed the fake model's answer: the summary is it.
	if !strings.HasPrefix(rep.Summary, "Fake answer ") {
		t.Fatalf("the summary is not the fake model's answer: %q", rep.Summary)
	}

	// The fake model got the task's prompt, from this run.
	var got []e2etest.LoggedRequest
	for _, r := range e.Model.Requests(c.pathPref) {
		if r.N > requestsBefore && strings.Contains(r.Body, word) {
			got = append(got, r)
		}
	}
	if len(got) == 0 {
		t.Fatalf("no model request since the delegation holds the task's word %s (log: %s)", word, filepath.Join(e.Dir, "requests.jsonl"))
	}
	// The harness authenticated with its own file's key; the
	// credential set in memvault's environment reached nothing.
	keys := x.headers.values(c.keyHdr)
	if len(keys) == 0 {
		t.Fatalf("no model request carried %s", c.keyHdr)
	}
	for _, k := range keys {
		if !strings.Contains(k, c.key) {
			t.Fatalf("a model request carried %s %q, not the key of the harness's own file (%s)", c.keyHdr, k, c.key)
		}
	}
	if x.headers.holds(secretValue) {
		t.Fatalf("%s, set in memvault's environment, reached the model in a header", c.secret)
	}
	for _, r := range e.Model.Requests("") {
		if strings.Contains(r.Body, secretValue) {
			t.Fatalf("%s, set in memvault's environment, reached the model in request #%d", c.secret, r.N)
		}
	}

	// The ledger: one executor.delegated event, from the executor
	// source, in the thread, its result the summary, hashed by memvault.
	var ev map[string]any
	for _, row := range e.Ledger("executor.delegated") {
		if row["id"] == rep.ID {
			ev = row
		}
	}
	if ev == nil {
		t.Fatalf("no executor.delegated event %s in the ledger", rep.ID)
	}
	data := e2etest.MapOf(ev["data"])
	if ev["source"] != "executor" || ev["thread"] != thread || data["executor"] != name || data["checksum_by"] != "memvault" ||
		data["checksum"] != rep.Checksum || data["task"] != task || e2etest.MapOf(data["result"])["summary"] != rep.Summary ||
		c.scope != "" && data["scope"] != c.scope {
		js, _ := json.MarshalIndent(ev, "", "  ")
		t.Fatalf("the event of the delegation is not what was delegated:\n%s", js)
	}
	// The summary is a note of its thread's head.
	e.Memvault("render", "--thread", thread)
	headText := e.Memvault("threads", "show", thread)
	first, _, _ := strings.Cut(rep.Summary, "\n")
	if !strings.Contains(headText, rep.ID) || !strings.Contains(headText, strings.TrimSpace(e2etest.Clip(first, 40))) {
		t.Fatalf("the head of %s does not list the delegation %s (%q):\n%s", thread, rep.ID, first, headText)
	}
	// audit replay hashes the result again from the ledger alone.
	out = e.Memvault("audit", "replay")
	if !regexp.MustCompile(`(?m)^delegations: 1, 1 results verified, 0 redacted, 0 mismatches$`).MatchString(out) ||
		!strings.Contains(out, "ok: replay matches the ledger") {
		t.Fatalf("audit replay:\n%s", out)
	}
	out = e.Memvault("audit", "--executor", name)
	if !strings.Contains(out, name) || !strings.Contains(out, "ok memvault") {
		t.Fatalf("audit --executor %s does not list the delegation:\n%s", name, out)
	}
	e.RequireFsck()
}

// executorE2E is an e2e world for an executor test: the fake model behind
// a header log.
type executorE2E struct {
	*e2e
	headers *headerLog
}

func newExecutorE2E(t *testing.T) *executorE2E {
	e := newE2E(t)
	return &executorE2E{e2e: e, headers: newHeaderLog(t, e.Model)}
}

// TestE2EExecutorClaudeCode: `claude -p` as an executor. Its key comes
// from the apiKeyHelper of ~/.claude/settings.json (a file under HOME);
// ANTHROPIC_BASE_URL, the fake model, through the allow-list;
// ANTHROPIC_API_KEY set in memvault's environment never passes.
func TestE2EExecutorClaudeCode(t *testing.T) {
	claude := e2etest.HarnessBin(t, "MEMVAULT_E2E_CLAUDE", "claude-code")
	if e2etest.InNetns(t) {
		return
	}
	x := newExecutorE2E(t)
	key := "sk-from-the-helper-" + e2etest.RandWord("")
	writeFile(t, filepath.Join(x.Home, ".claude", "settings.json"), fmt.Sprintf(`{"apiKeyHelper": "echo %s"}`, key))
	runExecutorE2E(t, x, executorCase{
		preset: "claude-code", bin: claude,
		env:    []string{"ANTHROPIC_BASE_URL", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "DISABLE_AUTOUPDATER"},
		set:    []string{"ANTHROPIC_BASE_URL=" + x.headers.srv.URL, "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1"},
		secret: "ANTHROPIC_API_KEY", keyHdr: "x-api-key", key: key, pathPref: "/v1/messages",
	})
}

// TestE2EExecutorGemini: `gemini -p` as an executor. Its key comes from
// ~/.gemini/.env (a file under HOME, which Gemini CLI reads without
// overriding its environment); GOOGLE_GEMINI_BASE_URL, the fake model,
// through the allow-list, with GEMINI_CLI_TRUST_WORKSPACE (in a folder it
// does not trust, Gemini CLI reads no .env and has no key);
// GEMINI_API_KEY set in memvault's environment never passes (had it
// passed, it would win over the file's).
func TestE2EExecutorGemini(t *testing.T) {
	gemini := e2etest.HarnessBin(t, "MEMVAULT_E2E_GEMINI", "gemini")
	if e2etest.InNetns(t) {
		return
	}
	x := newExecutorE2E(t)
	key := "from-the-dotenv-" + e2etest.RandWord("")
	writeFile(t, filepath.Join(x.Home, ".gemini", "settings.json"), `{
  "security": {"auth": {"selectedType": "gemini-api-key"}},
  "privacy": {"usageStatisticsEnabled": false},
  "general": {"disableAutoUpdate": true}
}
`)
	writeFile(t, filepath.Join(x.Home, ".gemini", ".env"), "GEMINI_API_KEY="+key+"\n")
	runExecutorE2E(t, x, executorCase{
		preset: "gemini", bin: gemini,
		env:    []string{"GOOGLE_GEMINI_BASE_URL", "GEMINI_CLI_TRUST_WORKSPACE"},
		set:    []string{"GOOGLE_GEMINI_BASE_URL=" + x.headers.srv.URL, "GEMINI_CLI_TRUST_WORKSPACE=true"},
		secret: "GEMINI_API_KEY", keyHdr: "x-goog-api-key", key: key, pathPref: "/v1beta/models/",
	})
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestE2EExecutorCodex: `codex exec` as an executor, its task from a
// --file, scoped to a folder that is no git repository. Its provider, the
// fake model, and its key (a bearer token) come from ~/.codex/config.toml
// under HOME; OPENAI_API_KEY set in memvault's environment never passes.
func TestE2EExecutorCodex(t *testing.T) {
	codex := e2etest.HarnessBin(t, "MEMVAULT_E2E_CODEX", "codex")
	if e2etest.InNetns(t) {
		return
	}
	x := newExecutorE2E(t)
	key := "from-the-config-" + e2etest.RandWord("")
	writeFile(t, filepath.Join(x.Home, ".codex", "config.toml"),
		e2etest.CodexConfig(x.headers.srv.URL, fmt.Sprintf("experimental_bearer_token = %q", key), ""))
	runExecutorE2E(t, x, executorCase{
		preset: "codex", bin: codex,
		secret: "OPENAI_API_KEY", keyHdr: "authorization", key: "Bearer " + key, pathPref: "/v1/responses",
		// codex exec refuses a folder outside a git repository unless
		// told (the preset tells it)
		scope: filepath.Join(x.Dir, "not-a-repo"),
	})
}
