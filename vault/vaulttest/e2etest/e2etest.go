// Package e2etest is the world memvault's end-to-end tests run the real
// binary in: the hooks' tests against the real harness binaries, the MCP
// server's through real clients, and the web view's in a real browser.
// They share it so that the sandbox, the fake model and the network
// namespace are written once.
//
// A World is a home, a project with a git repository and a vault holding
// one remembered fact, the memvault binary on the PATH, and a fake model
// server on 127.0.0.1 (port 0) that answers the model APIs the harnesses
// call. A harness test installs memvault into a harness with `memvault
// install`, runs the harness for a turn or two, and checks what reached the
// model and what the vault recorded. They run only when told where a
// harness is:
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
// reaches nothing but 127.0.0.1 (InNetns). Otherwise it runs directly: the
// harness is configured to talk to 127.0.0.1 only.
//
// It sits below vault/vaulttest, whose Git it uses, and imports no other
// memvault package: the tests drive memvault as its binary.
package e2etest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/memvault/memvault/vault/vaulttest"
)

// netnsEnv is set in the inner run of a test in its network namespace.
const netnsEnv = "MEMVAULT_E2E_IN_NETNS"

// builtDir is the folder of the binary builtBin made, removed by Main.
var builtDir string

// builtBin is the memvault binary built from this module, once per test
// process.
var builtBin = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "memvault-e2e-bin-")
	if err != nil {
		return "", err
	}
	builtDir = dir
	bin := filepath.Join(dir, "memvault")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/memvault/memvault/cmd/memvault").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return bin, nil
})

// Main runs a package's tests and then removes the binary they built, so
// a test process leaves nothing in the temporary folder. A package that
// uses a World calls it from its TestMain.
func Main(m *testing.M) {
	code := m.Run()
	if builtDir != "" {
		os.RemoveAll(builtDir)
	}
	os.Exit(code)
}

// memvaultBin returns the memvault binary the hooks will run.
func memvaultBin(t *testing.T) string {
	t.Helper()
	if b := os.Getenv("MEMVAULT_E2E_BIN"); b != "" {
		return b
	}
	bin, err := builtBin()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// HarnessBin returns the harness path from envVar, or skips the test.
func HarnessBin(t *testing.T, envVar, name string) string {
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

// InNetns re-runs the calling test inside a private network namespace with
// only loopback up, and reports true when the caller should return (the
// inner run did the work). In the inner run, or where namespaces are not
// available, it returns false and the test goes on here.
func InNetns(t *testing.T) bool {
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

// World is one end-to-end test's world: a home, a project with a git repo
// and a vault, the memvault binary and the fake model. Its fields are the
// test's to read; Env is the environment of every command it runs, which
// a test extends with Setenv and PrependPath.
type World struct {
	T      *testing.T
	Dir    string // the test's folder, holding Home, Proj and requests.jsonl
	Home   string
	Proj   string
	Bin    string // the memvault binary
	Model  *FakeModel
	Env    []string
	Mark   string // a word only the remembered fact contains
	FactID string // the remembered fact's id
}

// RandWord is prefix and ten random hex digits: a word only the test that
// made it can have put anywhere.
func RandWord(prefix string) string {
	b := make([]byte, 5)
	rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// New makes a World: a clean environment (nothing of the caller's harness,
// git or vault setup), memvault on its PATH, a git repository and a vault
// in the project, and one global fact remembered.
func New(t *testing.T) *World {
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
	e := &World{T: t, Dir: dir, Bin: memvaultBin(t)}
	// The hooks and writes start memvault's detached job worker, which may
	// still be writing the vault (a summary, a head refresh, the index
	// catch-up) when the test ends: wait for it, as `memvault jobs run`
	// does, before the folder is removed (cleanups run last first, and the
	// temporary folder's was registered above).
	t.Cleanup(func() {
		if _, err := os.Stat(filepath.Join(e.Proj, ".memory")); err == nil {
			_, _ = e.MemvaultErr("jobs", "run")
		}
	})
	e.Home = filepath.Join(e.Dir, "home")
	e.Proj = filepath.Join(e.Dir, "proj")
	for _, d := range []string{e.Home, e.Proj} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	e.Model = newFakeModel(t, filepath.Join(e.Dir, "requests.jsonl"))
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
			e.Env = append(e.Env, kv)
		}
	}
	e.Env = append(e.Env, "HOME="+e.Home, "PWD="+e.Proj, "GIT_AUTHOR_NAME=e2e", "GIT_AUTHOR_EMAIL=e2e@example.invalid",
		"GIT_COMMITTER_NAME=e2e", "GIT_COMMITTER_EMAIL=e2e@example.invalid")
	// memvault on PATH, as a person has it: project-scope hooks run it from
	// there (docs/HOOKS.md, "Installing").
	e.PrependPath(filepath.Dir(e.Bin))
	e.Git("init", "-q")
	e.Memvault("init")
	e.Mark = RandWord("zqmark")
	// A global fact: MEMORY.md lists it (in the project folder a row
	// would otherwise belong to the project's thread).
	e.FactID = strings.TrimSpace(e.Memvault("remember", "--global", "The deployment codeword is "+e.Mark+"."))
	return e
}

// Setenv adds NAME=VALUE pairs to the environment of what the world runs.
func (e *World) Setenv(kv ...string) { e.Env = append(e.Env, kv...) }

// PrependPath puts dir first on the PATH of what the world runs.
func (e *World) PrependPath(dir string) {
	for i, kv := range e.Env {
		if p, ok := strings.CutPrefix(kv, "PATH="); ok {
			e.Env[i] = "PATH=" + dir + string(os.PathListSeparator) + p
		}
	}
}

// UseNode24 puts the Node of $NODE24 (a binary or its folder), when it is
// set, first on the PATH: OpenClaw needs a newer Node than the machine's.
func (e *World) UseNode24() {
	node24 := os.Getenv("NODE24")
	if node24 == "" {
		return
	}
	if info, err := os.Stat(node24); err == nil && !info.IsDir() {
		node24 = filepath.Dir(node24)
	}
	e.PrependPath(node24)
}

// Git runs git in the project and fails the test on error.
func (e *World) Git(args ...string) string {
	e.T.Helper()
	return vaulttest.Git{Dir: e.Proj, Env: e.Env}.Run(e.T, args...)
}

// Memvault runs the memvault CLI in the project and fails the test on error.
func (e *World) Memvault(args ...string) string {
	e.T.Helper()
	out, err := e.MemvaultErr(args...)
	if err != nil {
		e.T.Fatalf("memvault %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// MemvaultErr runs the memvault CLI in the project: its stdout, or its
// stdout and stderr with the error.
func (e *World) MemvaultErr(args ...string) (string, error) {
	cmd := exec.Command(e.Bin, args...)
	cmd.Dir = e.Proj
	cmd.Env = e.Env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil {
		return stdout.String() + stderr.String(), err
	}
	return stdout.String(), nil
}

// Hook runs `memvault hook` with a payload, as a harness would.
func (e *World) Hook(harness, event string, payload map[string]any) string {
	e.T.Helper()
	data, _ := json.Marshal(payload)
	cmd := exec.Command(e.Bin, "hook", harness, event)
	cmd.Dir = e.Proj
	cmd.Env = e.Env
	cmd.Stdin = bytes.NewReader(data)
	out, err := cmd.Output()
	if err != nil {
		e.T.Fatalf("memvault hook %s %s: %v", harness, event, err)
	}
	return string(out)
}

// RunResult is what a harness run printed, how it ended and how long it
// took.
type RunResult struct {
	Stdout, Stderr string
	Err            error
	Took           time.Duration
}

// Run runs a harness command in the project with a timeout; its whole
// process group is killed when the time is up.
func (e *World) Run(timeout time.Duration, name string, args ...string) RunResult {
	e.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = e.Proj
	cmd.Env = e.Env
	cmd.Stdin = nil // /dev/null: Codex waits on an open stdin
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	r := RunResult{Stdout: stdout.String(), Stderr: stderr.String(), Err: err, Took: time.Since(start)}
	if cmd.Process != nil {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // leftovers of the group
	}
	e.T.Logf("ran %s %s: %v in %.1fs", filepath.Base(name), strings.Join(args, " "), err, r.Took.Seconds())
	if ctx.Err() != nil {
		e.T.Fatalf("%s timed out after %s\nstdout: %s\nstderr: %s", filepath.Base(name), timeout, ClipHead(r.Stdout), ClipHead(r.Stderr))
	}
	return r
}

// ClipHead is the first 3000 bytes of s, for a failure's message.
func ClipHead(s string) string {
	if len(s) > 3000 {
		return s[:3000] + "…"
	}
	return s
}

// MustRun is Run that fails the test unless the command exits 0.
func (e *World) MustRun(timeout time.Duration, name string, args ...string) RunResult {
	e.T.Helper()
	r := e.Run(timeout, name, args...)
	if r.Err != nil {
		e.T.Fatalf("%s %s: %v\nstdout: %s\nstderr: %s", filepath.Base(name), strings.Join(args, " "), r.Err, ClipHead(r.Stdout), ClipHead(r.Stderr))
	}
	return r
}

// Install runs `memvault install <harness>` and returns its output.
func (e *World) Install(harness string, args ...string) string {
	e.T.Helper()
	out := e.Memvault(append([]string{"install", harness}, args...)...)
	e.T.Logf("memvault install %s: %s", harness, strings.TrimSpace(out))
	return out
}

// Sessions is `memvault sessions --json`.
func (e *World) Sessions() []map[string]any {
	e.T.Helper()
	var rows []map[string]any
	out := e.Memvault("sessions", "--json")
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		e.T.Fatalf("sessions --json: %v\n%s", err, out)
	}
	return rows
}

// Nodes is `memvault nodes --json` of a kind, of one session when session
// is not empty.
func (e *World) Nodes(kind, session string) []map[string]any {
	e.T.Helper()
	args := []string{"nodes", "--json", "--kind", kind}
	if session != "" {
		args = append(args, "--session", session)
	}
	out := e.Memvault(args...)
	var rows []map[string]any
	if strings.TrimSpace(out) == "null" {
		return nil
	}
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		e.T.Fatalf("nodes --json: %v\n%s", err, out)
	}
	return rows
}

// Ledger is `memvault ledger --json` of one kind.
func (e *World) Ledger(kind string) []map[string]any {
	e.T.Helper()
	out := e.Memvault("ledger", "--json", "--kind", kind)
	var rows []map[string]any
	if strings.TrimSpace(out) == "null" {
		return nil
	}
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		e.T.Fatalf("ledger --json: %v\n%s", err, out)
	}
	return rows
}

// RequireFsck asserts the vault's git repository is sound and the ledger verifies.
func (e *World) RequireFsck() {
	e.T.Helper()
	cmd := exec.Command("git", "-C", filepath.Join(e.Proj, ".memory"), "fsck", "--strict")
	cmd.Env = e.Env
	if out, err := cmd.CombinedOutput(); err != nil {
		e.T.Fatalf("git fsck of the vault: %v\n%s", err, out)
	}
	cmd = exec.Command("git", "-C", filepath.Join(e.Proj, ".memory"), "status", "--porcelain")
	cmd.Env = e.Env
	if out, err := cmd.CombinedOutput(); err != nil {
		e.T.Fatalf("git status of the vault: %v\n%s", err, out)
	} else if s := strings.TrimSpace(string(out)); s != "" {
		e.T.Logf("vault work tree after the run (uncommitted):\n%s", s)
	}
	if out, err := e.MemvaultErr("verify"); err != nil {
		e.T.Fatalf("memvault verify: %v\n%s", err, out)
	}
}
