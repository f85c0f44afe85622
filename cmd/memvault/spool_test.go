package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gofrs/flock"

	"github.com/memvault/memvault/vault/vaulttest"
)

// hookShape is how one harness sends a prompt and the reply its stop
// carries: the native event names and payload fields of fixtures/hooks/
// (OpenCode and OpenClaw through the plugins memvault installs, which send
// the runtime's field names).
type hookShape struct {
	harness, promptEvent, stopEvent string
	prompt                          func(text string) map[string]any
	reply                           func(text string) map[string]any
}

func hookShapes() []hookShape {
	plain := func(field string) func(string) map[string]any {
		return func(text string) map[string]any { return map[string]any{field: text} }
	}
	return []hookShape{
		{"claude-code", "UserPromptSubmit", "Stop", func(text string) map[string]any {
			return map[string]any{"prompt": text, "prompt_id": "pid-" + strings.ReplaceAll(text, " ", "-"), "permission_mode": "default"}
		}, plain("last_assistant_message")},
		{"codex", "UserPromptSubmit", "Stop", plain("prompt"), plain("last_assistant_message")},
		{"gemini", "BeforeAgent", "AfterAgent", func(text string) map[string]any {
			return map[string]any{"prompt": "<hook_context>an earlier hook's context</hook_context>\n\n" + text}
		}, plain("prompt_response")},
		{"opencode", "chat.message", "session.idle", plain("prompt"), plain("last_assistant_message")},
		{"openclaw", "before_prompt_build", "agent_end", plain("prompt"), plain("last_assistant_message")},
	}
}

// spoolRig is a vault, a project folder and a private HOME for hook runs.
type spoolRig struct {
	t                 *testing.T
	home, vault, proj string
}

func newSpoolRig(t *testing.T) *spoolRig {
	dir := t.TempDir()
	r := &spoolRig{t: t, home: filepath.Join(dir, "home"), vault: filepath.Join(dir, "vault"), proj: filepath.Join(dir, "proj")}
	for _, d := range []string{r.home, r.proj} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := r.cmd(nil, "init").CombinedOutput(); err != nil {
		t.Fatalf("init: %v\n%s", err, out)
	}
	return r
}

func (r *spoolRig) cmd(stdin []byte, args ...string) *exec.Cmd {
	cmd := memvaultCmd(r.t, r.home, append([]string{"--vault", r.vault}, args...)...)
	cmd.Dir = r.proj
	cmd.Env = append(cmd.Env, "GIT_CONFIG_NOSYSTEM=1", "MEMVAULT_THREAD=", "MEMVAULT_SESSION=", "MEMVAULT_HARNESS=")
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	return cmd
}

// hook runs one hook event; a hook always exits 0, and errs says why not.
func (r *spoolRig) hook(harness, event, session string, fields map[string]any) error {
	p := map[string]any{"session_id": session, "cwd": r.proj, "hook_event_name": event}
	for k, v := range fields {
		p[k] = v
	}
	data, _ := json.Marshal(p)
	if out, err := r.cmd(data, "hook", harness, event).CombinedOutput(); err != nil {
		return fmt.Errorf("hook %s %s: %v\n%s", harness, event, err, out)
	}
	return nil
}

func (r *spoolRig) mustRun(args ...string) string {
	r.t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := r.cmd(nil, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		r.t.Fatalf("memvault %s: %v\n%s%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// messages returns the texts of a session's stored messages, in order.
func (r *spoolRig) messages(session string) []string {
	r.t.Helper()
	out, err := r.cmd(nil, "transcript", "show", "--session", session, "--json").Output()
	if err != nil {
		return nil
	}
	var msgs []struct{ Text string }
	if err := json.Unmarshal(out, &msgs); err != nil {
		r.t.Fatalf("transcript show %s: %v", session, err)
	}
	var texts []string
	for _, m := range msgs {
		texts = append(texts, m.Text)
	}
	return texts
}

func (r *spoolRig) hookLog() string {
	data, _ := os.ReadFile(filepath.Join(r.vault, ".logs", "hooks.log"))
	return string(data)
}

// lockVault holds the vault lock as another process would, until release.
func (r *spoolRig) lockVault() (release func()) {
	r.t.Helper()
	fl := flock.New(filepath.Join(r.vault, ".locks", "vault.lock"))
	if err := fl.Lock(); err != nil {
		r.t.Fatal(err)
	}
	return func() { fl.Unlock() }
}

// checkSettled fails unless the spool is empty and the vault verifies,
// with git's checker satisfied and nothing for git status to show but,
// when pending, transcripts whose last lines (or all of them) wait for
// their session's next commit (the prompt flow makes none).
func (r *spoolRig) checkSettled(pending bool) {
	r.t.Helper()
	var left []string
	filepath.WalkDir(filepath.Join(r.vault, ".spool"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() != ".gitignore" {
			left = append(left, p)
		}
		return nil
	})
	if len(left) > 0 {
		r.t.Errorf("the spool still holds %v", left)
	}
	r.mustRun("verify")
	if !vaulttest.HasGit() {
		return
	}
	git := vaulttest.Git{Dir: r.vault, Env: vaulttest.Sandbox(r.home)}
	git.Run(r.t, "fsck", "--strict")
	for _, line := range strings.Split(git.Run(r.t, "status", "--porcelain"), "\n") {
		if line != "" && !(pending && (strings.HasPrefix(line, " M transcripts/") || strings.HasPrefix(line, "?? transcripts/"))) {
			r.t.Errorf("git status shows %q", line)
		}
	}
}

// With the vault lock held, every harness's prompt and stop hooks spool
// what they carry; one write after the release stores it all, each
// message once and in the order the hooks ran.
func TestBusyHooksLoseNothing(t *testing.T) {
	t.Parallel()
	r := newSpoolRig(t)
	release := r.lockVault()
	want := map[string][]string{}
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for _, h := range hookShapes() {
		session := "busy-" + h.harness
		for turn := 1; turn <= 2; turn++ {
			want[session] = append(want[session], fmt.Sprintf("%s prompt %d", h.harness, turn), fmt.Sprintf("%s reply %d", h.harness, turn))
		}
		texts := want[session]
		wg.Add(1)
		go func() { // harnesses in parallel: each hook waits its whole wait
			defer wg.Done()
			for i, text := range texts {
				event, fields := h.promptEvent, h.prompt(text)
				if i%2 == 1 {
					event, fields = h.stopEvent, h.reply(text)
				}
				if err := r.hook(h.harness, event, session, fields); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	log := r.hookLog()
	for session := range want {
		if got := r.messages(session); len(got) > 0 {
			t.Fatalf("session %s stored %q while the vault was locked", session, got)
		}
		if n := strings.Count(log, session+": vault busy: held by pid "); n < 4 {
			t.Errorf("hooks.log names the holder %d times for %s, want at least 4:\n%s", n, session, log)
		}
	}
	if n := strings.Count(log, "is spooled and goes in with the next write"); n != 20 {
		t.Errorf("hooks.log reports %d spooled messages, want 20:\n%s", n, log)
	}
	release()

	r.mustRun("remember", "the next write")
	for session, texts := range want {
		if got := r.messages(session); !slices.Equal(got, texts) {
			t.Errorf("session %s holds %q, want %q", session, got, texts)
		}
	}
	r.checkSettled(false)
}

// Under load (writers, renders, and a holder that keeps the lock longer
// than any hook waits, now and then), sessions of every harness's hook
// shape send prompts and replies: none is lost or doubled, and each
// session's are in order. A Claude Code session with a transcript file is
// imported as well, where a spooled prompt and the harness's own copy must
// still make one message. MEMVAULT_SPOOL_SECONDS sets the length (default
// 3 s, 2 s with -short); docs/RELIABILITY.md has the long runs.
func TestBusyHooksUnderLoad(t *testing.T) {
	t.Parallel()
	secs := tortureSize(t, "MEMVAULT_SPOOL_SECONDS", 2, 3)
	r := newSpoolRig(t)
	stop := time.Now().Add(time.Duration(secs) * time.Second)
	var mu sync.Mutex
	sent := map[string][]string{}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	worker := func(body func(i int) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; time.Now().Before(stop); i++ {
				if err := body(i); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for _, h := range hookShapes() {
		session := "load-" + h.harness
		worker(func(i int) error {
			prompt, reply := fmt.Sprintf("%s prompt %d", h.harness, i), fmt.Sprintf("%s reply %d", h.harness, i)
			if err := r.hook(h.harness, h.promptEvent, session, h.prompt(prompt)); err != nil {
				return err
			}
			if err := r.hook(h.harness, h.stopEvent, session, h.reply(reply)); err != nil {
				return err
			}
			mu.Lock()
			sent[session] = append(sent[session], prompt, reply)
			mu.Unlock()
			return nil
		})
	}
	// Claude Code as it runs: the harness writes its transcript, the stop
	// imports it.
	cc := &rig{t: t, home: r.home, proj: r.proj}
	var ccSent []string
	worker(func(i int) error {
		const session = "load-cc-transcript"
		prompt, reply := fmt.Sprintf("cc prompt %d", i), fmt.Sprintf("cc reply %d", i)
		cc.addCCPrompt(session, prompt, i)
		if err := r.hook("claude-code", "UserPromptSubmit", session, map[string]any{"prompt": prompt,
			"transcript_path": cc.ccTranscript(session)}); err != nil {
			return err
		}
		cc.addCCReply(session, reply, i)
		if err := r.hook("claude-code", "Stop", session, map[string]any{"transcript_path": cc.ccTranscript(session)}); err != nil {
			return err
		}
		mu.Lock()
		ccSent = append(ccSent, prompt, reply)
		mu.Unlock()
		return nil
	})
	for w := range 2 {
		worker(func(i int) error {
			if out, err := r.cmd(nil, "remember", fmt.Sprintf("writer %d fact %d", w, i)).CombinedOutput(); err != nil {
				return fmt.Errorf("remember: %v\n%s", err, out)
			}
			return nil
		})
	}
	worker(func(i int) error {
		if out, err := r.cmd(nil, "render").CombinedOutput(); err != nil {
			return fmt.Errorf("render: %v\n%s", err, out)
		}
		return nil
	})
	holds := 0
	worker(func(i int) error {
		// Longer than a stop waits (700 ms): a render on a large vault, a
		// sync's merge.
		release := r.lockVault()
		time.Sleep(800 * time.Millisecond)
		release()
		holds++
		time.Sleep(400 * time.Millisecond)
		return nil
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	// Stops the load left busy import again; one more write folds the rest.
	r.hook("claude-code", "Stop", "load-cc-transcript", map[string]any{"transcript_path": cc.ccTranscript("load-cc-transcript")})
	r.mustRun("remember", "the last write")
	lost, doubled, messages := 0, 0, 0
	for session, texts := range sent {
		got := r.messages(session)
		messages += len(texts)
		if !slices.Equal(got, texts) {
			for _, w := range texts {
				switch n := count(got, w); {
				case n == 0:
					lost++
				case n > 1:
					doubled++
				}
			}
			t.Errorf("session %s holds %q,\nwant %q", session, got, texts)
		}
	}
	got := r.messages("load-cc-transcript")
	for _, w := range ccSent {
		switch n := count(got, w); {
		case n == 0:
			lost++
			t.Errorf("Claude Code session: %q is lost", w)
		case n > 1:
			doubled++
			t.Errorf("Claude Code session: %q is stored %d times", w, n)
		}
	}
	if len(got) != len(ccSent) {
		t.Errorf("Claude Code session holds %d messages, want %d: %q", len(got), len(ccSent), got)
	}
	spooled := strings.Count(r.hookLog(), "is spooled and goes in with the next write")
	r.checkSettled(true)
	t.Logf("%d s: %d messages from %d hook sessions, %d through the Claude Code transcript; %d spooled; %d lock holds of 800 ms; %d lost, %d doubled",
		secs, messages, len(sent), len(ccSent), spooled, holds, lost, doubled)
	if spooled == 0 {
		t.Error("no hook met a busy vault: the test tried nothing")
	}
}

func count(texts []string, s string) int {
	n := 0
	for _, t := range texts {
		if t == s {
			n++
		}
	}
	return n
}
