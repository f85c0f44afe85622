package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/memvault/memvault/cmd/memvault/internal/cli"
	"github.com/memvault/memvault/vault/vaulttest"
)

// The vault is private (docs/RELIABILITY.md): folders 0700, files 0600,
// executables (git's hooks) 0700, git's objects and the other read-only
// files git writes beside them 0400. allowedMode says which of these the
// path rel (slash-separated, relative to the vault root) falls under.
func allowedMode(rel string, dir bool) fs.FileMode {
	switch {
	case dir:
		return 0o700
	case strings.HasPrefix(rel, ".git/hooks/"):
		return 0o700
	case gitReadOnly.MatchString(rel):
		return 0o400
	}
	return 0o600
}

// gitReadOnly matches the files git makes read-only: loose objects, packs
// and their indexes, the commit-graph and the multi-pack index.
var gitReadOnly = regexp.MustCompile(`^\.git/objects/(` +
	`[0-9a-f]{2}/[0-9a-f]{38,62}` +
	`|pack/pack-[0-9a-f]{40,64}\.(pack|idx|rev|bitmap|mtimes)` +
	`|pack/multi-pack-index` +
	`|info/commit-graph|info/commit-graphs/.*)$`)

// wideModes walks the vault at root and returns a line for every file or
// folder whose mode is wider than allowedMode, the root included: a bit
// the rule does not allow, or a setuid, setgid or sticky bit.
func wideModes(root string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if info.Mode()&fs.ModeSymlink != 0 {
			return nil // a link's own mode means nothing
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		allowed := allowedMode(rel, info.IsDir())
		special := info.Mode() & (fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky)
		if perm := info.Mode().Perm(); perm&^allowed != 0 || special != 0 {
			out = append(out, fmt.Sprintf("%s is %04o%s; the rule allows %04o", rel, perm, specialBits(special), allowed))
		}
		return nil
	})
	return out, err
}

func specialBits(m fs.FileMode) string {
	if m == 0 {
		return ""
	}
	return " (" + m.String() + ")"
}

// modes DIR fails when a file or folder of the vault at DIR is wider than
// the rule (allowedMode), and writes each such path to stderr; ! modes DIR
// fails when none is.
func cmdModes(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: modes DIR")
	}
	wide, err := wideModes(ts.MkAbs(args[0]))
	ts.Check(err)
	for _, w := range wide {
		fmt.Fprintln(ts.Stderr(), w)
	}
	switch {
	case len(wide) > 0 && !neg:
		ts.Fatalf("modes wider than the rule:\n%s", strings.Join(wide, "\n"))
	case len(wide) == 0 && neg:
		ts.Fatalf("no mode wider than the rule")
	}
}

// modesRig is a vault inside a project repository, a bare hub to sync
// with and a second clone writing to it, and a Claude Code session; every
// memvault it runs runs with umask 000, so that a mode memvault leaves to
// the umask comes out world-writable and is caught.
type modesRig struct {
	t                              *testing.T
	dir, home, proj, vault, hub, b string
	covered, reported              map[string]bool
}

func newModesRig(t *testing.T) *modesRig {
	dir := t.TempDir()
	r := &modesRig{t: t, dir: dir, home: filepath.Join(dir, "home"), proj: filepath.Join(dir, "proj"),
		hub: filepath.Join(dir, "hub.git"), b: filepath.Join(dir, "b", ".memory"), covered: map[string]bool{}, reported: map[string]bool{}}
	r.vault = filepath.Join(r.proj, ".memory")
	if err := makeHome(r.home); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(r.proj, 0o700); err != nil {
		t.Fatal(err)
	}
	// The editor `memvault edit` opens: it adds a line, as a person would.
	editor := filepath.Join(dir, "append.sh")
	if err := os.WriteFile(editor, []byte("printf '\\n- a line added in the editor\\n' >> \"$1\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r.git(r.proj, "init", "-q")
	r.git(dir, "init", "-q", "--bare", r.hub)
	return r
}

func (r *modesRig) env() []string {
	return append(vaulttest.Sandbox(r.home), "TZ=UTC", "MEMVAULT_LOCK_TIMEOUT=30s",
		"MEMVAULT_AGENT=tester", "MEMVAULT_DIR=", "MEMVAULT_THREAD=", "MEMVAULT_SESSION=", "MEMVAULT_HARNESS=",
		"VISUAL=", "EDITOR=sh "+filepath.Join(r.dir, "append.sh"))
}

// mv runs memvault on the vault at root from the project folder, with
// umask 000, and returns its stdout; it fails the test unless memvault
// exits 0.
func (r *modesRig) mv(root, stdin string, args ...string) string {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	bin := plainMemvault(r.t)
	// sh sets the umask and execs memvault: nothing of the test process's
	// own umask reaches it.
	cmd := exec.CommandContext(ctx, "sh", append([]string{"-c", `umask 000 && exec "$0" "$@"`, bin, "--vault", root}, args...)...)
	cmd.Dir = r.proj
	cmd.Env = r.env()
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		r.t.Fatalf("memvault %s: %v\n%s%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// run runs memvault command on the rig's vault, then walks the vault and
// fails on every path wider than the rule, naming the command.
func (r *modesRig) run(command string, args ...string) string {
	r.t.Helper()
	return r.runIn(command, "", args...)
}

func (r *modesRig) runIn(command, stdin string, args ...string) string {
	r.t.Helper()
	out := r.mv(r.vault, stdin, args...)
	r.covered[command] = true
	wide, err := wideModes(r.vault)
	if err != nil {
		r.t.Fatal(err)
	}
	for _, w := range wide {
		// each path once, after the command that widened it
		if path, _, _ := strings.Cut(w, " is "); !r.reported[path] {
			r.reported[path] = true
			r.t.Errorf("after memvault %s: %s", strings.Join(args, " "), w)
		}
	}
	return out
}

func (r *modesRig) git(dir string, args ...string) string {
	r.t.Helper()
	return vaulttest.Git{Dir: dir, Env: vaulttest.Sandbox(r.home)}.Run(r.t, args...)
}

// hook runs a Claude Code hook event for session s-hook with the payload's
// extra fields.
func (r *modesRig) hook(event string, extra map[string]any) {
	r.t.Helper()
	p := map[string]any{"session_id": "s-hook", "cwd": r.proj, "hook_event_name": event,
		"transcript_path": r.transcript(), "permission_mode": "default"}
	for k, v := range extra {
		p[k] = v
	}
	data, _ := json.Marshal(p)
	r.runIn("hook", string(data), "hook", "claude-code", event)
}

func (r *modesRig) transcript() string {
	return filepath.Join(r.home, ".claude", "projects", "proj", "s-hook.jsonl")
}

// turn appends one line of the session's Claude Code transcript, as the
// harness does before it runs the hook.
func (r *modesRig) turn(role, text string, n int) {
	r.t.Helper()
	p := r.transcript()
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		r.t.Fatal(err)
	}
	line, _ := json.Marshal(map[string]any{"type": role, "sessionId": "s-hook", "cwd": r.proj,
		"uuid": fmt.Sprintf("s-hook-%c%d", role[0], n), "timestamp": time.Now().UTC().Format(time.RFC3339Nano),
		"message": map[string]any{"role": role, "content": text}})
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		r.t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(append(line, '\n')); err != nil {
		r.t.Fatal(err)
	}
}

// wantMode fails unless the file at p has mode want.
func (r *modesRig) wantMode(p string, want fs.FileMode, why string) {
	r.t.Helper()
	info, err := os.Stat(p)
	if err != nil {
		r.t.Fatal(err)
	}
	if got := info.Mode().Perm(); got != want {
		r.t.Errorf("%s is %04o, want %04o: %s", p, got, want, why)
	}
}

// edit rewrites the vault's file rel with f, keeping its mode, as a
// person's editor does.
func (r *modesRig) edit(rel string, f func(string) string) {
	r.t.Helper()
	p := filepath.Join(r.vault, filepath.FromSlash(rel))
	data, err := os.ReadFile(p)
	if err != nil {
		r.t.Fatal(err)
	}
	next := f(string(data))
	if next == string(data) {
		r.t.Fatalf("edit of %s changed nothing", rel)
	}
	if err := os.WriteFile(p, []byte(next), 0o600); err != nil {
		r.t.Fatal(err)
	}
}

// notRun are the commands this test does not run, each with the reason.
var notRun = map[string]string{
	// git runs it inside a person's merge on its own temporary copies; it
	// writes only git's copy of the file, whose mode it keeps
	// (fileio.WriteKeepMode), and the person's git decides the rest.
	"merge-driver": "run by git inside a person's merge",
	// they print what the binary holds and open no file
	"help":    "prints the help; opens nothing",
	"version": "prints the build; opens nothing",
	// it serves until interrupted; its pages only read, and its two
	// writes (--write) are the transactions of commitment close and
	// resolve, which this test runs
	"serve": "serves until interrupted; its writes are commitment close's and resolve's",
}

// TestModesAfterEveryCommand runs every command memvault has, each as a
// person or a harness would, with umask 000, and after each one walks the
// vault: a file or folder wider than the rule fails the test with the path
// and the command. Writers memvault does not control are in it: git's gc,
// fetch, push and merge (sync with both engines), Bleve's index (recall,
// reindex), go-git's packs. Files of the person's own outside the vault
// keep the mode their umask or their owner gave them.
func TestModesAfterEveryCommand(t *testing.T) {
	t.Parallel()
	if !hasGit() {
		t.Skip("needs the git binary")
	}
	r := newModesRig(t)
	first := func(out string) string { return strings.Fields(out)[0] }

	r.run("init", "init")
	id := first(r.run("remember", "remember", "--thread", "project:proj", "the first fact about the parser"))
	r.run("remember", "remember", "--global", "--kind", "decision", "a global decision")
	c := first(r.run("commitment open", "commitment", "open", "ship the parser"))
	r.run("commitment close", "commitment", "close", c)
	r.run("commitment show", "commitment", "show", c)
	r.run("claim", "claim", "commitment.closed", `{"id":"`+c+`"}`)
	r.run("reflect", "reflect", `{"text":"closing it early kept the parser small"}`)
	r.run("policy set", "policy", "set", "blocker", "cli,hook")
	r.run("policy show", "policy", "show")
	r.run("executor add", "executor", "add", "echo", "--plain", "--", "cat")
	r.run("executor list", "executor", "list")
	r.run("executor show", "executor", "show", "echo")
	r.run("executor ping", "executor", "ping", "echo")
	r.run("delegate", "delegate", "--executor", "echo", "read the parser")
	r.run("audit", "audit")
	r.run("audit replay", "audit", "replay")
	r.run("executor remove", "executor", "remove", "echo")
	r.run("supersede", "supersede", id, "the first fact about the parser, corrected")
	gone := first(r.run("remember", "remember", "a fact to withdraw"))
	r.run("retract", "retract", gone, "--why", "it was wrong")
	r.run("ledger", "ledger")
	r.run("replay", "replay")
	r.run("metrics", "metrics")
	exported := filepath.Join(r.dir, "proj.json")
	r.run("export", "export", "--thread", "project:proj", "--format", "json", "-o", exported)
	r.run("import", "import", exported)
	r.run("verify", "verify")
	r.run("log", "log")
	r.run("status", "status")

	// lineage
	r.run("transcript append", "transcript", "append", "--session", "s1", "--role", "user", "how do we parse dates")
	generic := filepath.Join(r.dir, "generic.jsonl")
	if err := os.WriteFile(generic, []byte(`{"id":"g-1","ts":"2026-11-22T10:00:00Z","role":"user","speaker":"alice","text":"an imported line"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r.run("transcript import", "transcript", "import", "--format", "generic", "--session", "s-import", generic)
	r.run("transcript show", "transcript", "show", "--session", "s1")
	r.run("sessions", "sessions")
	node := first(r.run("summarize", "summarize", "--session", "s1"))
	summary := filepath.Join(r.dir, "summary.txt")
	if err := os.WriteFile(summary, []byte("what the session did\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r.run("compact", "compact", "--session", "s1", "--file", summary)
	r.run("condense", "condense", "--current")
	r.run("nodes", "nodes")
	r.run("expand", "expand", node)

	// search: the Bleve index is built by the first recall, rebuilt by
	// reindex
	r.run("recall", "recall", "parser")
	r.run("reindex", "reindex")

	// a Claude Code session through its hooks
	r.hook("SessionStart", map[string]any{"source": "startup"})
	r.turn("user", "let us fix the date parser", 1)
	r.hook("UserPromptSubmit", map[string]any{"prompt": "let us fix the date parser", "prompt_id": "p-1"})
	r.turn("assistant", "NEXT: write a test for the date parser", 1)
	r.hook("Stop", map[string]any{"last_assistant_message": "NEXT: write a test for the date parser"})
	r.hook("PreCompact", map[string]any{"trigger": "manual"})
	r.hook("PostCompact", map[string]any{"trigger": "manual", "compact_summary": "fixed the parser"})
	r.hook("SessionEnd", map[string]any{"reason": "other"})
	// what the session end queued (a summary on a busy machine, a refresh)
	r.run("jobs", "jobs")
	r.run("jobs run", "jobs", "run")
	r.run("context", "context")
	// an agent's MCP session: its writes go through the same transactions
	out := r.runIn("mcp", mcpSession(
		`{"name":"remember","arguments":{"text":"a fact through MCP","kind":"decision"}}`,
		`{"name":"next","arguments":{"text":"answer through MCP"}}`,
		`{"name":"recall","arguments":{"query":"parser"}}`), "mcp")
	if strings.Count(out, `"result"`) != 4 || strings.Contains(out, `"isError":true`) {
		t.Errorf("memvault mcp answered:\n%s", out)
	}

	// heads: render, refresh, a hand edit through the editor, a conflict
	// and its resolution
	r.run("render", "render", "--all-threads")
	r.run("refresh", "refresh", "--on", "session-end")
	r.run("threads", "threads")
	r.run("threads show", "threads", "show", "project:proj")
	r.run("edit", "edit")
	// (the person and the render both change the line of project:proj in
	// Threads: the person rewrites it, a new blocker changes its state)
	r.edit("MEMORY.md", func(s string) string {
		return regexp.MustCompile(`(?m)^- project:proj: .*$`).ReplaceAllString(s, "- project:proj: the person's summary")
	})
	r.run("remember", "remember", "--thread", "project:proj", "--kind", "blocker", "--session", "s5", "the second blocker")
	r.run("refresh", "refresh", "--on", "session-end", "--session", "s5")
	r.run("resolve", "resolve", "--theirs", "MEMORY.md")

	// the protocol
	r.run("continuity init", "continuity", "init")
	r.run("learn", "learn", "--error", "ran the tests without the db", "--prevention", "start the db first")
	r.run("decide", "decide", "--decision", "use WAL", "--rationale", "fewer fsyncs")
	r.run("goal", "goal", "ship the parser")
	r.run("next", "next", "write the date tests")
	r.run("done", "done", "1")
	r.run("continuity status", "continuity", "status")
	r.run("continuity learnings", "continuity", "learnings")
	r.run("continuity decisions", "continuity", "decisions")
	r.run("continuity budget", "continuity", "budget")
	r.run("continuity audit", "continuity", "audit")
	r.run("continuity index", "continuity", "index")

	// the installers: the vault's git hooks are private; a harness's new
	// settings and a project's new hook get the person's umask (000 here,
	// so 0644 and 0755 as memvault asks), and a file that was there keeps
	// the mode its owner gave it
	gemini := filepath.Join(r.proj, ".gemini", "settings.json")
	if err := os.MkdirAll(filepath.Dir(gemini), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(gemini, []byte(`{"theme": "dark"}`+"\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(gemini, 0o640); err != nil {
		t.Fatal(err)
	}
	r.run("install", "install", "git", "--vault", "--project")
	r.run("install", "install", "claude-code")
	r.run("install", "install", "gemini")
	r.wantMode(filepath.Join(r.proj, ".claude"), 0o755, "a new folder of the person's gets their umask")
	r.wantMode(filepath.Join(r.proj, ".claude", "settings.json"), 0o644, "a new file of the person's gets their umask")
	r.wantMode(gemini, 0o640, "a file of the person's keeps its mode")
	r.wantMode(filepath.Join(r.proj, ".git", "hooks", "post-commit"), 0o755, "a project's new hook gets the person's umask")
	r.wantMode(filepath.Join(r.vault, ".git", "hooks", "pre-commit"), 0o700, "the vault's hooks are private")
	r.run("doctor", "doctor")
	r.git(r.proj, "commit", "-q", "--allow-empty", "-m", "a code commit") // its post-commit hook records it
	r.run("hook", "hook", "git", "post-commit")
	r.run("uninstall", "uninstall", "claude-code")
	r.run("uninstall", "uninstall", "gemini")
	r.wantMode(gemini, 0o640, "a file of the person's keeps its mode")
	r.run("uninstall", "uninstall", "git", "--project")

	// sync with a local remote, on git and on go-git: push into an empty
	// hub, then fetch and merge what a second clone pushed
	r.run("sync", "sync", "--engine", "git", r.hub)
	r.git(r.dir, "clone", "-q", r.hub, r.b)
	for i, engine := range []string{"git", "go-git"} {
		r.mv(r.b, "", "remember", fmt.Sprintf("written in the second clone, %d", i))
		r.mv(r.b, "", "sync", "--engine", engine)
		out := r.run("sync", "sync", "--engine", engine, r.hub)
		if !strings.Contains(out, "merged") && !strings.Contains(out, "fast-forwarded") {
			t.Errorf("sync --engine %s took nothing from the hub:\n%s", engine, out)
		}
		r.run("remember", "remember", fmt.Sprintf("written after the sync, %d", i))
	}

	// gc on both engines, each with loose objects to pack
	r.run("gc", "gc", "--engine", "git")
	r.run("remember", "remember", "a fact after git's gc")
	r.run("gc", "gc", "--engine", "go-git")

	// repair: a ledger line changed by hand is restored from the commit,
	// the changed segment kept under .logs/
	r.edit(ledgerSegment(t, r.vault), func(s string) string {
		return strings.Replace(s, "a fact after git", "a fact after gits", 1)
	})
	r.run("repair", "repair")
	r.run("verify", "verify")
	vaulttest.Fsck(t, r.vault)

	for _, c := range cli.Commands() {
		if !r.covered[c] && notRun[c] == "" {
			t.Errorf("memvault %s is not run by this test: add it, or say in notRun why not", c)
		}
	}
}

// mcpSession is what a client writes to memvault mcp: the handshake, then
// one tools/call per argument, each the call's params.
func mcpSession(calls ...string) string {
	lines := []string{`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18",` +
		`"capabilities":{},"clientInfo":{"name":"modes","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`}
	for i, c := range calls {
		lines = append(lines, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":%s}`, i+1, c))
	}
	return strings.Join(lines, "\n") + "\n"
}

// ledgerSegment returns the vault's newest ledger segment, relative to root.
func ledgerSegment(t *testing.T, root string) string {
	t.Helper()
	var last string
	filepath.WalkDir(filepath.Join(root, "ledger"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".jsonl") && p > last {
			last = p
		}
		return nil
	})
	if last == "" {
		t.Fatal("no ledger segment")
	}
	rel, _ := filepath.Rel(root, last)
	return filepath.ToSlash(rel)
}
