package bench

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// BenchmarkHooks times the two hook events on a harness's critical path,
// as whole processes, on a vault with 10k nodes and 5k sessions: the
// prompt-submit that runs before every prompt (goal p50 ≤ 30 ms) and the
// session-start (goal ≤ 50 ms). The anchor is `git status` in the vault,
// about the least a git-based tool does per call.
func BenchmarkHooks(b *testing.B) {
	bin := memvaultBinary(b)
	sessions := 5000
	if s := os.Getenv("MEMVAULT_BENCH_SESSIONS"); s != "" {
		fmt.Sscan(s, &sessions)
	}
	root, _ := lineageVault(b, sessions)
	run(b, root, bin, "--vault", root, "render")
	run(b, root, bin, "--vault", root, "reindex")
	payload := func(event, extra string) []byte {
		return []byte(fmt.Sprintf(`{"session_id":"bench-session","transcript_path":"","cwd":%q,"hook_event_name":%q%s}`, root, event, extra))
	}
	hook := func(event string, stdin []byte) func(int) *exec.Cmd {
		return func(i int) *exec.Cmd {
			cmd := exec.Command(bin, "--vault", root, "hook", "claude-code", event)
			cmd.Stdin = bytes.NewReader(stdin)
			return cmd
		}
	}
	b.Run("session-start", func(b *testing.B) {
		timeProcesses(b, hook("session-start", payload("SessionStart", `,"source":"startup"`)))
	})
	// A head a row reached since its last render (its refresh queued, or
	// deferred behind a lease) is rendered from the ledger for the
	// injection: each timed start follows an untimed remember.
	b.Run("session-start-stale-head", func(b *testing.B) {
		remember := func(i int) {
			cmd := exec.Command(bin, "--vault", root, "remember", "--kind", "decision", fmt.Sprintf("decision %d of the bench", i))
			cmd.Env = benchEnv()
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("remember: %v\n%s", err, out)
			}
		}
		timeProcessesAfter(b, remember, hook("session-start", payload("SessionStart", `,"source":"compact"`)))
	})
	b.Run("prompt-submit", func(b *testing.B) {
		timeProcesses(b, func(i int) *exec.Cmd {
			p := payload("UserPromptSubmit", fmt.Sprintf(`,"prompt":"how did approach %d work out for the migration task"`, i))
			return hook("prompt-submit", p)(i)
		})
	})
	// In a live session every turn ends with a stop that imports the
	// harness's transcript, which appends to the ledger: the next prompt
	// finds every cache keyed by the ledger one write behind. Each timed
	// prompt here follows such a stop (untimed), as in a session.
	b.Run("prompt-submit-after-stop", func(b *testing.B) {
		transcript := filepath.Join(b.TempDir(), "session.jsonl")
		stop := func(i int) {
			line := fmt.Sprintf(`{"type":"user","uuid":"u%[1]d","sessionId":"bench-session","timestamp":"2026-11-22T10:00:00Z","message":{"role":"user","content":"turn %[1]d of the migration"}}`+"\n"+
				`{"type":"assistant","uuid":"a%[1]d","sessionId":"bench-session","timestamp":"2026-11-22T10:00:01Z","message":{"role":"assistant","content":[{"type":"text","text":"did step %[1]d of the migration"}]}}`+"\n", i)
			f, err := os.OpenFile(transcript, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
			if err != nil {
				b.Fatal(err)
			}
			f.WriteString(line)
			f.Close()
			cmd := hook("stop", []byte(fmt.Sprintf(`{"session_id":"bench-session","transcript_path":%q,"cwd":%q,"hook_event_name":"Stop"}`, transcript, root)))(i)
			cmd.Env = benchEnv()
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("stop: %v\n%s", err, out)
			}
		}
		timeProcessesAfter(b, stop, func(i int) *exec.Cmd {
			p := payload("UserPromptSubmit", fmt.Sprintf(`,"prompt":"how did approach %d work out for the migration task"`, i))
			return hook("prompt-submit", p)(i)
		})
	})
	b.Run("git-status", func(b *testing.B) {
		timeProcesses(b, func(int) *exec.Cmd { return exec.Command("git", "-C", root, "status", "--porcelain") })
	})
	if data, err := os.ReadFile(root + "/.logs/hooks.log"); err == nil && len(bytes.TrimSpace(data)) > 0 {
		b.Logf("hooks.log:\n%s", strings.TrimSpace(string(data)))
	}
}
