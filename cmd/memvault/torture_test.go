package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/memvault/memvault/vault/vaulttest"
)

// The torture tests run the real memvault binary (the test binary, through
// testscript.Main) as separate processes, kill them at random points, or run
// eight of them at once, and then check the vault the way a person would:
// memvault verify, git fsck, every file whole, nothing acknowledged lost.
// Their sizes are small by default so that CI's go test -race ./... stays
// quick (under -race, where every process costs several times more, the
// -short sizes; .ci/run runs them again without -race at their default
// sizes); docs/RELIABILITY.md gives the commands for the long runs.

// tortureSize picks the number of rounds (or seconds): env overrides, else
// short under -short or -race, else def.
func tortureSize(t *testing.T, env string, short, def int) int {
	t.Helper()
	if s := os.Getenv(env); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("%s=%q: want a positive number", env, s)
		}
		return n
	}
	if testing.Short() || raceEnabled {
		return short
	}
	return def
}

// tortureSeed is logged so that a failing run can be replayed with
// MEMVAULT_TORTURE_SEED.
func tortureSeed(t *testing.T) uint64 {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("MEMVAULT_TORTURE_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("MEMVAULT_TORTURE_SEED=%q: %v", s, err)
		}
		seed = n
	}
	t.Logf("seed %d (replay with MEMVAULT_TORTURE_SEED=%d)", seed, seed)
	return seed
}

// rig is a vault under test, with a private HOME and a project folder the
// hook payloads name as their cwd.
type rig struct {
	t                      *testing.T
	bin                    string // the memvault it runs (binary_test.go)
	dir, home, vault, proj string
	lockTimeout            string
}

// newRig makes a rig that runs bin: racingMemvault(t) for the tests of
// processes at once, plainMemvault(t) for the tests of behaviour.
func newRig(t *testing.T, bin string) *rig {
	t.Helper()
	dir := t.TempDir()
	r := &rig{t: t, bin: bin, dir: dir, home: filepath.Join(dir, "home"), vault: filepath.Join(dir, "vault"),
		proj: filepath.Join(dir, "proj"), lockTimeout: "30s"}
	if err := makeHome(r.home); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(r.proj, 0o700); err != nil {
		t.Fatal(err)
	}
	if out, err := r.cmd(context.Background(), "init").CombinedOutput(); err != nil {
		t.Fatalf("init: %v\n%s", err, out)
	}
	return r
}

// cmd prepares memvault ARGS against the rig's vault, in its own process
// group so that a kill reaches anything it started.
func (r *rig) cmd(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, r.bin, append([]string{"--vault", r.vault}, args...)...)
	cmd.Dir = r.proj
	cmd.Env = append(os.Environ(), "HOME="+r.home, "GIT_CONFIG_NOSYSTEM=1", "TZ=UTC",
		"MEMVAULT_LOCK_TIMEOUT="+r.lockTimeout, "MEMVAULT_AGENT=", "MEMVAULT_DIR=", "MEMVAULT_THREAD=",
		"MEMVAULT_SESSION=", "MEMVAULT_HARNESS=")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// run runs memvault and fails the test unless it exits 0.
func (r *rig) run(args ...string) string {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := r.cmd(ctx, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		r.t.Fatalf("memvault %s: %v\n%s%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// git runs the git CLI in the vault, as the rig's person; ok reports
// whether it exited 0.
func (r *rig) git(args ...string) (string, bool) {
	out, err := r.gitCLI().Try(args...)
	return out, err == nil
}

func (r *rig) mustGit(args ...string) string {
	r.t.Helper()
	return r.gitCLI().Run(r.t, args...)
}

func (r *rig) gitCLI() vaulttest.Git {
	return vaulttest.Git{Dir: r.vault, Env: vaulttest.Sandbox(r.home)}
}

func hasGit() bool { return vaulttest.HasGit() }

// payload builds a Claude Code hook payload like those in
// fixtures/hooks/claude-code, for this rig's project folder.
func (r *rig) payload(event, session string, extra map[string]any) []byte {
	p := map[string]any{"session_id": session, "cwd": r.proj, "hook_event_name": event,
		"transcript_path": r.ccTranscript(session), "permission_mode": "default"}
	for k, v := range extra {
		p[k] = v
	}
	data, _ := json.Marshal(p)
	return data
}

func (r *rig) ccTranscript(session string) string {
	return filepath.Join(r.home, ".claude", "projects", "proj", session+".jsonl")
}

// addCCPrompt appends one user turn to the session's Claude Code transcript,
// the way the harness does before it runs the prompt hook.
func (r *rig) addCCPrompt(session, text string, n int) {
	r.t.Helper()
	r.addCCLine(session, "user", text, n)
}

// addCCReply appends one assistant reply to the session's Claude Code
// transcript, the way the harness does before it runs the stop hook.
func (r *rig) addCCReply(session, text string, n int) {
	r.t.Helper()
	r.addCCLine(session, "assistant", text, n)
}

func (r *rig) addCCLine(session, role, text string, n int) {
	r.t.Helper()
	p := r.ccTranscript(session)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		r.t.Fatal(err)
	}
	line, _ := json.Marshal(map[string]any{"type": role, "sessionId": session, "cwd": r.proj,
		"uuid": fmt.Sprintf("%s-%c%d", session, role[0], n), "timestamp": time.Now().UTC().Format(time.RFC3339Nano),
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

// hookLogLines counts the lines of .logs/hooks.log: a hook that exits 0 but
// logged a line failed open.
func (r *rig) hookLogLines() int {
	data, _ := os.ReadFile(filepath.Join(r.vault, ".logs", "hooks.log"))
	return bytes.Count(data, []byte("\n"))
}

func (r *rig) hookLogTail(from int) string {
	data, _ := os.ReadFile(filepath.Join(r.vault, ".logs", "hooks.log"))
	lines := strings.SplitAfter(string(data), "\n")
	if from > len(lines) {
		return ""
	}
	return strings.Join(lines[from:], "")
}

// ledgerTexts returns the text of every event, as memvault reads them.
func (r *rig) ledgerTexts() map[string]bool {
	r.t.Helper()
	var rows []struct{ Text string }
	if err := json.Unmarshal([]byte(r.run("ledger", "--json")), &rows); err != nil {
		r.t.Fatalf("ledger --json: %v", err)
	}
	texts := map[string]bool{}
	for _, row := range rows {
		texts[row.Text] = true
	}
	return texts
}

// transcriptText returns the texts of a session's stored messages, joined.
func (r *rig) transcriptText(session string) string {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := r.cmd(ctx, "transcript", "show", "--session", session, "--json").Output()
	if err != nil {
		return ""
	}
	return string(out)
}

// checkWhole fails unless every complete ledger line parses as an event
// and every head is a whole file. A torn (unterminated) last line is allowed
// only when allowTorn: a crash mid-append may leave one, and the next
// writer repairs it.
func (r *rig) checkWhole(allowTorn bool) {
	r.t.Helper()
	err := filepath.WalkDir(r.vault, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(r.vault, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			switch rel {
			case ".git", ".index", ".state", ".locks", ".logs":
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasPrefix(d.Name(), ".") && strings.Contains(d.Name(), ".tmp-") {
			return nil // a temporary file a killed writer left: never read
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		switch {
		case strings.HasPrefix(rel, "ledger/") && strings.HasSuffix(rel, ".jsonl"),
			strings.HasPrefix(rel, "transcripts/") && strings.HasSuffix(rel, ".jsonl"):
			lines := strings.SplitAfter(string(data), "\n")
			for i, l := range lines {
				if l == "" {
					continue
				}
				if !strings.HasSuffix(l, "\n") {
					if !allowTorn || !strings.HasPrefix(rel, "ledger/") {
						r.t.Errorf("%s: line %d is torn: %.80q", rel, i+1, l)
					}
					continue
				}
				var obj map[string]any
				if err := json.Unmarshal([]byte(l), &obj); err != nil {
					r.t.Errorf("%s: line %d does not parse: %v", rel, i+1, err)
				}
			}
		case strings.HasSuffix(rel, ".md"):
			if len(data) == 0 || data[len(data)-1] != '\n' || !utf8.Valid(data) || bytes.IndexByte(data, 0) >= 0 {
				// A head is rewritten in place under a lease; a kill inside
				// the rewrite may tear it, and its journal lets the next
				// transaction put it back (vault/headjournal.go).
				if _, err := os.Stat(filepath.Join(r.vault, ".locks", "head-writes", rel+".json")); allowTorn && err == nil {
					return nil
				}
				r.t.Errorf("%s is not a whole head (%d bytes)", rel, len(data))
			}
		}
		return nil
	})
	if err != nil {
		r.t.Fatal(err)
	}
}

// checkRepo runs memvault verify and git fsck.
func (r *rig) checkRepo() {
	r.t.Helper()
	r.run("verify")
	if hasGit() {
		out := r.mustGit("fsck", "--strict", "--no-dangling")
		if strings.Contains(out, "error") || strings.Contains(out, "warning") {
			r.t.Fatalf("git fsck:\n%s", out)
		}
	}
}

// committedContains reports, for each needle, whether the tree at HEAD
// holds it (in any file under the given folder).
func (r *rig) committedContains(folder string, needles []string) map[string]bool {
	r.t.Helper()
	found := map[string]bool{}
	if !hasGit() || len(needles) == 0 {
		return found
	}
	out := r.mustGit("ls-tree", "-r", "--name-only", "HEAD", "--", folder)
	for _, f := range strings.Fields(out) {
		data := r.mustGit("show", "HEAD:"+f)
		for _, n := range needles {
			if strings.Contains(data, n) {
				found[n] = true
			}
		}
	}
	return found
}

// killOp is one kind of write the crash torture interrupts.
type killOp struct {
	name string
	// start prepares the command for round n; ack is called when it exited
	// 0 (and, for hooks, logged nothing), to record what must be kept.
	start func(r *rig, n int) (args []string, stdin []byte, ack func(*acks))
}

// acks is what acknowledged writes promised: ledger texts that must be in
// the ledger (and committed), transcript texts per session that must be
// stored, and those of them that must also be committed.
type acks struct {
	ledger     []string
	transcript map[string][]string // session -> texts on disk
	committed  map[string][]string // session -> texts committed
}

func (a *acks) addT(session, text string, committed bool) {
	a.transcript[session] = append(a.transcript[session], text)
	if committed {
		a.committed[session] = append(a.committed[session], text)
	}
}

func crashOps(r *rig) []killOp {
	genericFile := filepath.Join(r.dir, "generic.jsonl")
	return []killOp{
		{"remember", func(r *rig, n int) ([]string, []byte, func(*acks)) {
			text := fmt.Sprintf("crash-remember-%d", n)
			return []string{"remember", "--kind", "decision", "--thread", "project:proj", text}, nil,
				func(a *acks) { a.ledger = append(a.ledger, text) }
		}},
		{"transcript-append", func(r *rig, n int) ([]string, []byte, func(*acks)) {
			text := fmt.Sprintf("crash-append-%d", n)
			return []string{"transcript", "append", "--session", "s-append", "--role", "user", text}, nil,
				func(a *acks) { a.addT("s-append", text, true) }
		}},
		{"transcript-import", func(r *rig, n int) ([]string, []byte, func(*acks)) {
			text := fmt.Sprintf("crash-import-%d", n)
			line, _ := json.Marshal(map[string]string{"id": fmt.Sprintf("g-%d", n), "ts": "2026-11-22T10:00:00Z",
				"role": "user", "speaker": "alice", "text": text})
			f, err := os.OpenFile(genericFile, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
			if err != nil {
				r.t.Fatal(err)
			}
			f.Write(append(line, '\n'))
			f.Close()
			return []string{"transcript", "import", "--format", "generic", "--session", "s-import", genericFile}, nil,
				func(a *acks) { a.addT("s-import", text, true) }
		}},
		{"hook-prompt", func(r *rig, n int) ([]string, []byte, func(*acks)) {
			text := fmt.Sprintf("crash-prompt-%d", n)
			r.addCCPrompt("s-hook", text, n)
			return []string{"hook", "claude-code", "UserPromptSubmit"},
				r.payload("UserPromptSubmit", "s-hook", map[string]any{"prompt": text, "prompt_id": fmt.Sprintf("p-%d", n)}),
				func(a *acks) { a.addT("s-hook", text, false) }
		}},
		{"hook-stop", func(r *rig, n int) ([]string, []byte, func(*acks)) {
			text := fmt.Sprintf("crash-stop-%d", n)
			r.addCCPrompt("s-hook", text, n)
			// The reply records something, so the stop commits the
			// session's transcript at once; a turn that records nothing
			// leaves it for the session's next commit, like a prompt.
			r.addCCReply("s-hook", "NEXT: follow up on "+text, n)
			return []string{"hook", "claude-code", "Stop"},
				r.payload("Stop", "s-hook", map[string]any{"last_assistant_message": "NEXT: keep going"}),
				func(a *acks) { a.addT("s-hook", text, true) }
		}},
		{"hook-session-start", func(r *rig, n int) ([]string, []byte, func(*acks)) {
			return []string{"hook", "claude-code", "SessionStart"},
				r.payload("SessionStart", "s-hook", map[string]any{"source": "resume"}), nil
		}},
		{"hook-session-end", func(r *rig, n int) ([]string, []byte, func(*acks)) {
			return []string{"hook", "claude-code", "SessionEnd"},
				r.payload("SessionEnd", "s-hook", map[string]any{"reason": "other"}), nil
		}},
		{"hook-compact", func(r *rig, n int) ([]string, []byte, func(*acks)) {
			return []string{"hook", "claude-code", "PostCompact"},
				r.payload("PostCompact", "s-hook", map[string]any{"trigger": "manual", "compact_summary": fmt.Sprintf("summary %d", n)}), nil
		}},
		{"refresh", func(r *rig, n int) ([]string, []byte, func(*acks)) {
			return []string{"refresh", "--on", "session-end"}, nil, nil
		}},
		{"learn", func(r *rig, n int) ([]string, []byte, func(*acks)) {
			text := fmt.Sprintf("crash-learn-%d", n)
			return []string{"learn", "--error", text, "--prevention", "check first " + text}, nil, nil
		}},
	}
}

// TestTortureCrash kills writers with SIGKILL at random points of their run
// and checks, after every kill, that the vault verifies, git fsck is clean,
// no file is torn, every write acknowledged so far is there, and the next
// write goes through at once. Rounds: 3 with -short, 6 by default,
// MEMVAULT_TORTURE_ROUNDS to run more (docs/RELIABILITY.md).
func TestTortureCrash(t *testing.T) {
	t.Parallel()
	rounds := tortureSize(t, "MEMVAULT_TORTURE_ROUNDS", 3, 6)
	rng := rand.New(rand.NewPCG(tortureSeed(t), 7))
	r := newRig(t, racingMemvault(t))
	// A killed writer can leave nothing that holds the next one: the vault
	// lock is a flock the kernel releases. A short wait proves it.
	r.lockTimeout = "5s"
	ops := crashOps(r)
	a := &acks{transcript: map[string][]string{}, committed: map[string][]string{}}

	// How long each op takes when left alone, so kills land inside it.
	took := map[string]time.Duration{}
	for i, op := range ops {
		d, _ := runOp(t, r, op, -1-i, 0, a)
		took[op.name] = d
	}
	r.checkWhole(false)
	r.checkRepo()

	killed, completed := 0, 0
	for n := range rounds {
		// git's index one file, split (a new shared index), split again (a
		// patch of it), in turn: a kill may land in any of those writes.
		if hasGit() {
			r.mustGit("config", "core.splitIndex", []string{"false", "true", "true"}[n%3])
		}
		op := ops[rng.IntN(len(ops))]
		delay := time.Duration(rng.Int64N(int64(took[op.name])*5/4 + 1))
		d, wasKilled := runOp(t, r, op, n, delay, a)
		if wasKilled {
			killed++
		} else {
			completed++
			took[op.name] = (took[op.name]*3 + d) / 4
		}
		if t.Failed() {
			t.Fatalf("round %d: %s (killed after %v)", n, op.name, delay)
		}
		// The state a kill left must already be sound.
		r.checkWhole(true)
		r.checkRepo()
		// The next write goes through, and repairs any torn line.
		probe := fmt.Sprintf("crash-probe-%d", n)
		r.run("remember", probe)
		a.ledger = append(a.ledger, probe)
		r.checkWhole(false)
		// and brings git's index up to HEAD, wherever the kill left it:
		// nothing shows as staged.
		if hasGit() {
			if staged := r.mustGit("diff", "--cached", "--name-status"); staged != "" {
				t.Fatalf("round %d (%s killed after %v): git's index is behind HEAD:\n%s", n, op.name, delay, staged)
			}
		}
		texts := r.ledgerTexts()
		for _, want := range a.ledger {
			if !texts[want] {
				t.Fatalf("round %d (%s killed after %v): acknowledged event %q is lost", n, op.name, delay, want)
			}
		}
		if t.Failed() {
			t.Fatalf("round %d: %s (killed after %v)", n, op.name, delay)
		}
	}
	// Acknowledged transcript lines are stored, and committed where the
	// command commits.
	for session, want := range a.transcript {
		got := r.transcriptText(session)
		for _, w := range want {
			if !strings.Contains(got, w) {
				t.Errorf("session %s: acknowledged message %q is lost", session, w)
			}
		}
	}
	for session, want := range a.committed {
		found := r.committedContains("transcripts", want)
		for _, w := range want {
			if !found[w] {
				t.Errorf("session %s: acknowledged message %q is not committed", session, w)
			}
		}
	}
	found := r.committedContains("ledger", a.ledger)
	for _, w := range a.ledger {
		if !found[w] {
			t.Errorf("acknowledged event %q is not committed", w)
		}
	}
	r.checkRepo()
	t.Logf("%d rounds: %d writers killed, %d finished first; %d acknowledged events, all kept",
		rounds, killed, completed, len(a.ledger))
}

// runOp runs op for round n, killing it after delay (0: never). It returns
// how long the process ran and whether the kill landed first.
func runOp(t *testing.T, r *rig, op killOp, n int, delay time.Duration, a *acks) (time.Duration, bool) {
	t.Helper()
	args, stdin, ack := op.start(r, n)
	logBefore := r.hookLogLines()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := r.cmd(ctx, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	begin := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var timer *time.Timer
	if delay > 0 {
		timer = time.AfterFunc(delay, func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	}
	err := cmd.Wait()
	took := time.Since(begin)
	if timer != nil {
		timer.Stop()
	}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return took, true
	}
	if err != nil {
		t.Errorf("round %d: memvault %s failed without being killed: %v\n%s", n, strings.Join(args, " "), err, out.String())
		return took, false
	}
	if args[0] == "hook" {
		if tail := r.hookLogTail(logBefore); tail != "" {
			t.Errorf("round %d: hook %s failed open after an earlier kill:\n%s", n, args[2], tail)
			return took, false
		}
	}
	if ack != nil {
		ack(a)
	}
	return took, false
}

// TestTortureConcurrent runs eight processes at once for a bounded time:
// hook events of four sessions, remember and learn, head refresh, recall
// and reindex, and a person who edits MEMORY.md by hand (saving by rename
// and in place, in turn) and commits it with git. Then, once the storm is over, nothing is lost: every prompt is
// in its session's transcript, every acknowledged event in the ledger,
// every hand edit in MEMORY.md; the chain verifies and git fsck is clean.
// No process may hang (each is bounded; a hang fails the test). Seconds: 2
// with -short, 3 by default, MEMVAULT_TORTURE_SECONDS to run longer.
func TestTortureConcurrent(t *testing.T) {
	t.Parallel()
	if !hasGit() {
		t.Skip("the hand edits are committed with the git CLI, which is not installed")
	}
	secs := tortureSize(t, "MEMVAULT_TORTURE_SECONDS", 2, 3)
	seed := tortureSeed(t)
	r := newRig(t, racingMemvault(t))
	r.lockTimeout = "120s" // people wait; hooks use their own short waits
	r.run("remember", "--thread", "project:proj", "the first decision")
	r.run("render")
	if _, err := os.Stat(filepath.Join(r.vault, "MEMORY.md")); err != nil {
		t.Fatal(err)
	}
	stop := time.Now().Add(time.Duration(secs) * time.Second)

	var mu sync.Mutex
	var remembered, hand []string
	prompts := map[string][]string{}
	procs := 0
	var wg sync.WaitGroup
	fail := make(chan string, 64)
	// exec runs one process, bounded: a process still running after two
	// minutes is a deadlock.
	exec1 := func(stdin []byte, args ...string) bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := r.cmd(ctx, args...)
		if stdin != nil {
			cmd.Stdin = bytes.NewReader(stdin)
		}
		out, err := cmd.CombinedOutput()
		mu.Lock()
		procs++
		mu.Unlock()
		if ctx.Err() != nil {
			fail <- fmt.Sprintf("memvault %s hung (killed after 2m)", strings.Join(args, " "))
			return false
		}
		if err != nil {
			fail <- fmt.Sprintf("memvault %s: %v\n%s", strings.Join(args, " "), err, out)
			return false
		}
		return true
	}
	worker := func(w int, body func(rng *rand.Rand, i int)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(w)))
			for i := 0; time.Now().Before(stop); i++ {
				body(rng, i)
			}
		}()
	}
	// Four sessions of hook events, each in the order a harness sends them.
	for w := range 4 {
		session := fmt.Sprintf("s-%d", w)
		worker(w, func(rng *rand.Rand, i int) {
			if i == 0 {
				exec1(r.payload("SessionStart", session, map[string]any{"source": "startup"}), "hook", "claude-code", "SessionStart")
			}
			text := fmt.Sprintf("prompt %d of session %s", i, session)
			r.addCCPrompt(session, text, i)
			mu.Lock()
			prompts[session] = append(prompts[session], text)
			mu.Unlock()
			exec1(r.payload("UserPromptSubmit", session, map[string]any{"prompt": text, "prompt_id": fmt.Sprintf("%s-p%d", session, i)}),
				"hook", "claude-code", "UserPromptSubmit")
			switch rng.IntN(4) {
			case 0:
				exec1(r.payload("PostCompact", session, map[string]any{"trigger": "auto", "compact_summary": text}), "hook", "claude-code", "PostCompact")
			default:
				exec1(r.payload("Stop", session, map[string]any{"last_assistant_message": "DECISION: " + text}), "hook", "claude-code", "Stop")
			}
		})
	}
	worker(4, func(rng *rand.Rand, i int) {
		text := fmt.Sprintf("concurrent remember %d", i)
		if exec1(nil, "remember", "--thread", "project:proj", "--kind", "decision", text) {
			mu.Lock()
			remembered = append(remembered, text)
			mu.Unlock()
		}
		if i%3 == 0 {
			exec1(nil, "learn", "--error", fmt.Sprintf("mistake %d", i), "--prevention", "look first")
		}
	})
	worker(5, func(rng *rand.Rand, i int) {
		switch i % 3 {
		case 0:
			exec1(nil, "refresh", "--on", "session-end")
		case 1:
			exec1(nil, "recall", "decision")
		case 2:
			exec1(nil, "reindex")
		}
	})
	worker(6, func(rng *rand.Rand, i int) {
		text := fmt.Sprintf("- hand edit %d, kept by a person", i)
		// Editors save by rename or in place, in turn.
		if r.handEdit("MEMORY.md", text, i%2 == 1) {
			mu.Lock()
			hand = append(hand, text)
			mu.Unlock()
		}
		time.Sleep(time.Duration(50+rng.IntN(150)) * time.Millisecond)
	})
	worker(7, func(rng *rand.Rand, i int) {
		exec1(nil, "transcript", "append", "--session", "s-typed", "--role", "user", fmt.Sprintf("typed %d", i))
		exec1(nil, "--agent", "other", "remember", fmt.Sprintf("other agent %d", i))
	})
	wg.Wait()
	close(fail)
	for f := range fail {
		t.Error(f)
	}
	if t.Failed() {
		t.FailNow()
	}

	// The storm is over: each session ends, heads refresh once more.
	for session := range prompts {
		exec1(r.payload("Stop", session, nil), "hook", "claude-code", "Stop")
		exec1(r.payload("SessionEnd", session, map[string]any{"reason": "other"}), "hook", "claude-code", "SessionEnd")
	}
	r.run("refresh", "--on", "session-end")

	lost := 0
	for session, want := range prompts {
		got := r.transcriptText(session)
		for _, w := range want {
			if !strings.Contains(got, w) {
				t.Errorf("session %s: prompt %q is lost", session, w)
				lost++
			}
		}
	}
	texts := r.ledgerTexts()
	for _, w := range remembered {
		if !texts[w] {
			t.Errorf("acknowledged event %q is lost", w)
			lost++
		}
	}
	memory, _ := os.ReadFile(filepath.Join(r.vault, "MEMORY.md"))
	committed := r.mustGit("show", "HEAD:MEMORY.md")
	handLost := 0
	for _, w := range hand {
		if !strings.Contains(string(memory), w) {
			// A refresh merges with the file and writes only if the file is
			// still what it merged with (fileio.ReplaceIfSame: compared and
			// rewritten under a lease that holds every other open back); a
			// rollback undoes only its own bytes.
			t.Errorf("hand edit %q is lost from MEMORY.md; commits that added or removed it:\n%s", w,
				r.mustGit("log", "--format=%h %s", "-S", w, "--", "MEMORY.md"))
			handLost++
		} else if !strings.Contains(committed, w) {
			t.Errorf("hand edit %q is in MEMORY.md but not committed", w)
		}
	}
	// The person appends under the last section, Drill down, which the
	// render changes too: both add lines, which is no conflict (merge:
	// an insertion on both sides keeps both), so none may be recorded.
	var conflicts []struct{ ID, Text string }
	if err := json.Unmarshal([]byte(r.run("ledger", "--kind", "head.conflict", "--json")), &conflicts); err != nil {
		t.Fatal(err)
	}
	for _, c := range conflicts {
		t.Errorf("spurious head.conflict %s: %s", c.ID, c.Text)
	}
	r.checkWhole(false)
	r.checkRepo()
	n := 0
	for _, w := range prompts {
		n += len(w)
	}
	t.Logf("%ds, %d processes: %d prompts in 4 sessions, %d events remembered, %d hand edits; %d lost, %d hand edits overwritten by a refresh",
		secs, procs, n, len(remembered), len(hand), lost, handLost)
}

// handEdit appends line to a head the way a person does: the editor
// replaces the file (or, inPlace, truncates and rewrites it), then git add
// and git commit, retried while memvault holds git's locks. It reports
// whether the commit landed.
func (r *rig) handEdit(head, line string, inPlace bool) bool {
	r.t.Helper()
	p := filepath.Join(r.vault, head)
	data, err := os.ReadFile(p)
	if err != nil {
		r.t.Error(err)
		return false
	}
	next := append(data, []byte(line+"\n")...)
	if inPlace {
		err = os.WriteFile(p, next, 0o600)
	} else {
		tmp := p + ".swp"
		if err = os.WriteFile(tmp, next, 0o600); err == nil {
			err = os.Rename(tmp, p)
		}
	}
	if err != nil {
		r.t.Error(err)
		return false
	}
	var last string
	for range 50 {
		out, ok := r.git("add", head)
		if ok {
			if out, ok = r.git("commit", "-q", "-m", "hand edit of "+head, "--", head); ok {
				return true
			}
		}
		last = out
		// Nothing to commit: a memvault commit took the edit in already.
		if out, ok := r.git("show", "HEAD:"+head); ok && strings.Contains(out, line) {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	now, _ := os.ReadFile(p)
	r.t.Errorf("git commit of a hand edit of %s kept failing; the line is in the file: %v; git said: %s",
		head, bytes.Contains(now, []byte(line)), strings.TrimSpace(last))
	return false
}
