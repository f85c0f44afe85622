package hooks_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memvault/memvault/hooks"
	"github.com/memvault/memvault/vault/vaulttest/e2etest"
)

// The OpenClaw plugin memvault installs, loaded by node with a stub of
// OpenClaw's plugin API (testdata/openclaw-stub.mjs) and driven in the two
// orders OpenClaw 2026.9.6 fires its hooks in, against the real memvault
// binary and vault. TestE2EOpenClaw drives the real OpenClaw through both;
// this runs wherever node does.

// openClawStub is a World with the plugin installed at project scope, and
// run, which fires steps in one node process (one OpenClaw process) and
// returns what each handler returned.
func openClawStub(t *testing.T) (e *e2e, run func(steps ...any) []json.RawMessage) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not on PATH: the OpenClaw plugin cannot be loaded")
	}
	e = newE2E(t)
	e.Setenv("OPENCLAW_CONFIG_PATH=" + filepath.Join(e.Dir, "openclaw.json"))
	e.Install("openclaw")
	dir := filepath.Join(e.Proj, ".openclaw", "plugins", "memvault")
	stub, _ := filepath.Abs(filepath.Join("testdata", "openclaw-stub.mjs"))
	run = func(steps ...any) []json.RawMessage {
		t.Helper()
		data, _ := json.Marshal(steps)
		r := e.MustRun(60*time.Second, node, stub, dir, string(data))
		var out []json.RawMessage
		if err := json.Unmarshal([]byte(strings.TrimSpace(r.Stdout)), &out); err != nil || len(out) != len(steps) {
			t.Fatalf("stub output: %v\n%s\nstderr: %s", err, r.Stdout, r.Stderr)
		}
		return out
	}
	return e, run
}

// step is one hook call of the stub: [hook, event, ctx].
func (e *e2e) step(hook, session string, event map[string]any) any {
	return []any{hook, event, map[string]string{"session": session, "workspace": filepath.Join(e.Dir, "openclaw-workspace")}}
}

// promptResult is what before_prompt_build returned.
type promptResult struct {
	AppendSystemContext string `json:"appendSystemContext"`
	PrependContext      string `json:"prependContext"`
}

func (e *e2e) requireStartContext(what string, raw json.RawMessage) {
	e.T.Helper()
	var r promptResult
	json.Unmarshal(raw, &r)
	// The start context opens with hooks.UsageNote and holds MEMORY.md
	// with the remembered fact; a prompt's own context does neither.
	got := r.AppendSystemContext + "\n" + r.PrependContext
	if !strings.Contains(got, hooks.UsageNote) || !strings.Contains(got, e.Mark) {
		e.T.Errorf("%s: before_prompt_build returned no start context (its usage note and the marker %s): %s", what, e.Mark, raw)
	}
}

func history(n int) []any {
	var msgs []any
	for i := range n {
		msgs = append(msgs, map[string]any{"role": "user", "content": fmt.Sprintf("earlier prompt %d", i)},
			map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": "earlier answer"}}})
	}
	return msgs
}

func TestOpenClawPluginGatewayOrder(t *testing.T) {
	e, run := openClawStub(t)
	// The Gateway: session_start before the first before_prompt_build,
	// every turn in the same process, session_end at its shutdown.
	word := e2etest.RandWord("promptword")
	out := run(
		e.step("session_start", "gw", map[string]any{"sessionId": "gw", "sessionKey": "agent:main:explicit:gw"}),
		e.step("before_prompt_build", "gw", map[string]any{"prompt": "first turn " + word, "messages": []any{}}),
		e.step("agent_end", "gw", map[string]any{"messages": history(1), "success": true}),
		e.step("before_prompt_build", "gw", map[string]any{"prompt": "second turn", "messages": history(1)}),
		e.step("agent_end", "gw", map[string]any{"messages": history(2), "success": true}),
		e.step("session_end", "gw", map[string]any{"sessionId": "gw", "reason": "shutdown"}),
	)
	if string(out[0]) != "null" {
		t.Errorf("session_start returned %s: it cannot inject anything", out[0])
	}
	e.requireStartContext("Gateway, first prompt", out[1])
	// prependContext is not kept in OpenClaw's history: the start context
	// goes with every prompt.
	e.requireStartContext("Gateway, second prompt", out[3])
	if got := e.sessionStarts("gw"); len(got) != 1 || got[0] != "startup" {
		t.Errorf("session.started events of the Gateway session: %v, want one, source startup", got)
	}
	e.requirePromptInTranscript("gw", word)
	e.waitWorker()
	e.requireSummary("gw", func() {
		run(e.step("before_prompt_build", "trigger", map[string]any{"prompt": "trigger", "messages": []any{}}))
	})

	// A Gateway session that resumes another: source resume.
	run(e.step("session_start", "gw2", map[string]any{"sessionId": "gw2", "resumedFrom": "gw"}),
		e.step("before_prompt_build", "gw2", map[string]any{"prompt": "go on", "messages": history(2)}),
		e.step("agent_end", "gw2", map[string]any{"messages": history(3), "success": true}))
	if got := e.sessionStarts("gw2"); len(got) != 1 || got[0] != "resume" {
		t.Errorf("session.started events of the resumed Gateway session: %v, want one, source resume", got)
	}
	e.RequireFsck()
}

func TestOpenClawPluginLocalOrder(t *testing.T) {
	e, run := openClawStub(t)
	// `openclaw agent --local`: no session_start, a new process per turn,
	// the session's history loaded from OpenClaw's store.
	out := run(e.step("before_prompt_build", "loc", map[string]any{"prompt": "first turn", "messages": []any{}}),
		e.step("agent_end", "loc", map[string]any{"messages": history(1), "success": true}))
	e.requireStartContext("--local, first run", out[0])
	out = run(e.step("before_prompt_build", "loc", map[string]any{"prompt": "second turn", "messages": history(1)}),
		e.step("agent_end", "loc", map[string]any{"messages": history(2), "success": true}))
	e.requireStartContext("--local, second run", out[0])
	// A run that compacts before its turn, its compaction hooks in a
	// second instance of the module (OpenClaw imports it again there).
	out = run(e.step("2:before_compaction", "loc", map[string]any{}),
		e.step("2:after_compaction", "loc", map[string]any{}),
		e.step("before_prompt_build", "loc", map[string]any{"prompt": "after compaction", "messages": history(1)}),
		e.step("before_prompt_build", "loc", map[string]any{"prompt": "same run", "messages": history(2)}))
	e.requireStartContext("--local, after compaction", out[2])
	e.requireStartContext("--local, the prompt after that", out[3])
	// One session.started per OpenClaw process that starts the session:
	// the first run, the run that continues it, the compaction.
	if got := strings.Join(e.sessionStarts("loc"), ","); got != "startup,resume,compact" {
		t.Errorf("session.started sources of the --local session: %s, want startup,resume,compact", got)
	}
	if len(e.Nodes("compaction", "loc")) != 1 {
		t.Errorf("want one compaction node for the --local session, got %d", len(e.Nodes("compaction", "loc")))
	}
	e.RequireFsck()
}

// waitWorker waits (up to 20 s) for the background worker a hook started
// to let go of the vault's jobs: what a session end queued is then done.
func (e *e2e) waitWorker() {
	for range 200 {
		if len(e.jobs()) == 0 {
			if _, err := os.Stat(filepath.Join(e.Proj, ".memory", "MEMORY.md")); err == nil {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
}
