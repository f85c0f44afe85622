package executor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/memvault/memvault/vault/fault"
	"github.com/memvault/memvault/vault/vaulttest"
)

// fakeBin is the fake executor (fixtures/executor/fake), built once for
// the package's tests.
var fakeBin string

func TestMain(m *testing.M) {
	if fakeBin = os.Getenv("MEMVAULT_FAKE_EXECUTOR"); fakeBin != "" {
		os.Exit(m.Run()) // built by the parent (TestIsolatedExecutorUnprivileged)
	}
	dir, err := os.MkdirTemp("", "memvault-fake-executor")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if fakeBin, err = vaulttest.BuildFakeExecutor(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// fake is a registry entry running the fake executor in mode.
func fake(mode string, args ...string) Entry {
	e := Entry{Name: "fake-" + mode, Command: fakeBin, Args: append([]string{"-mode", mode}, args...), Timeout: 10 * time.Second, Weight: 1, Mode: ModeEnvelope, Status: StatusActive}
	if mode == "plain" {
		e.Mode = ModePlain
	}
	return e
}

func TestRunAnswersAndVerifies(t *testing.T) {
	dir := t.TempDir()
	for name, e := range map[string]Entry{
		"stdin":       fake("answer"),
		"prompt arg":  fake("answer", "-prompt", "{prompt}"),
		"arg in text": fake("answer", "-prompt=[{prompt}]"),
	} {
		resp, err := Runner{}.Run(context.Background(), e, Request{Type: TypeTask, Prompt: "read the parser", Cwd: dir}, 0)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		want := "done: read the parser"
		if name == "arg in text" {
			want = "done: [read the parser]"
		}
		if resp.Summary != want || resp.Tokens == nil || *resp.Tokens != 42 || resp.By != "executor" {
			t.Fatalf("%s: %+v", name, resp)
		}
		_, sum, err := Checksum(resp.Result)
		if err != nil || sum != resp.Checksum {
			t.Fatalf("%s: the stored result does not hash to its checksum: %s vs %s (%v)", name, sum, resp.Checksum, err)
		}
	}
}

func TestPlainAdapterHashesWhatItGot(t *testing.T) {
	resp, err := Runner{}.Run(context.Background(), fake("plain"), Request{Type: TypeTask, Prompt: "say <hi> & go", Cwd: t.TempDir()}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if resp.By != "memvault" || resp.Summary != "plain answer to: say <hi> & go" || resp.Tokens != nil {
		t.Fatalf("%+v", resp)
	}
	if string(resp.Result) != `{"summary":"plain answer to: say <hi> & go"}` {
		t.Fatalf("result not canonical: %s", resp.Result)
	}
	if _, sum, _ := Checksum(resp.Result); sum != resp.Checksum {
		t.Fatal("checksum is not the result's")
	}
}

// Every error code of the runner, from a real process.
func TestRunErrorCodes(t *testing.T) {
	missing := fake("answer")
	missing.Command = filepath.Join(t.TempDir(), "no-such-executor")
	slow := fake("hang", "-notify", vaulttest.NotifySocket(t, func(string) string { return "" }))
	for _, c := range []struct {
		e       Entry
		timeout time.Duration
		code    string
		class   error
		says    string
	}{
		{fake("crash"), 0, CodeCrash, nil, "boom"},
		{fake("garbage"), 0, CodeMalformed, nil, "malformed"},
		{fake("badsum"), 0, CodeChecksum, fault.ErrCorrupt, "checksum mismatch"},
		{fake("error"), 0, CodeExecutor, nil, "no_model: the model is not loaded"},
		{fake("huge"), 0, CodeTooLarge, fault.ErrInvalid, "output too large"},
		{missing, 0, CodeSpawn, fault.ErrNotFound, "cannot start"},
		{slow, 300 * time.Millisecond, CodeTimeout, fault.ErrBusy, "timed out"},
		{fake("sleep"), 300 * time.Millisecond, CodeTimeout, fault.ErrBusy, "timed out"},
	} {
		resp, err := Runner{}.Run(context.Background(), c.e, Request{Type: TypeTask, Prompt: "x", Cwd: t.TempDir()}, c.timeout)
		if err == nil {
			t.Errorf("%s: no error, got %+v", c.e.Name, resp)
			continue
		}
		if CodeOf(err) != c.code || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %q (code %q), want code %q saying %q", c.e.Name, err, CodeOf(err), c.code, c.says)
		}
		if c.class != nil && !errors.Is(err, c.class) {
			t.Errorf("%s: %v is not of class %v", c.e.Name, err, c.class)
		}
	}
}

// What the envelope parser refuses, without a process.
func TestEnvelopeShapes(t *testing.T) {
	good := func(result string) string {
		_, sum, err := Checksum([]byte(result))
		if err != nil {
			t.Fatal(err)
		}
		return `{"ok":true,"result":` + result + `,"checksum":"` + sum + `"}`
	}
	// a result written with other spacing and key order hashes the same
	_, sum, _ := Checksum([]byte(`{"summary":"s","tokens":1}`))
	if _, err := parseEnvelope("x", []byte(`  {"checksum":"`+sum+`", "result": { "tokens" : 1 , "summary":"s"}, "ok": true}`+"\n")); err != nil {
		t.Fatalf("a reordered result: %v", err)
	}
	for name, out := range map[string]string{
		"empty":           "",
		"two values":      good(`{"summary":"s"}`) + good(`{"summary":"s"}`),
		"no ok":           `{"result":{"summary":"s"},"checksum":"` + strings.Repeat("0", 64) + `"}`,
		"ok false bare":   `{"ok":false}`,
		"result array":    `{"ok":true,"result":["s"],"checksum":"` + strings.Repeat("0", 64) + `"}`,
		"no summary":      good(`{"tokens":3}`),
		"blank summary":   good(`{"summary":"  "}`),
		"summary number":  good(`{"summary":3}`),
		"negative tokens": good(`{"summary":"s","tokens":-1}`),
		"float tokens":    good(`{"summary":"s","tokens":1.5}`),
		"short checksum":  `{"ok":true,"result":{"summary":"s"},"checksum":"abc"}`,
		"upper checksum":  strings.ToUpper(good(`{"summary":"s"}`)),
	} {
		if _, err := parseEnvelope("x", []byte(out)); CodeOf(err) != CodeMalformed {
			t.Errorf("%s: %v, want malformed", name, err)
		}
	}
	big := good(`{"summary":"` + strings.Repeat("a", MaxSummary+1) + `"}`)
	if _, err := parseEnvelope("x", []byte(big)); CodeOf(err) != CodeTooLarge {
		t.Errorf("a summary over the bound: %v", err)
	}
	bulky := good(`{"summary":"s","extra":"` + strings.Repeat("b", MaxResult) + `"}`)
	if _, err := parseEnvelope("x", []byte(bulky)); CodeOf(err) != CodeTooLarge {
		t.Errorf("a result over the bound: %v", err)
	}
	// one changed byte of the result, the checksum kept
	tampered := strings.Replace(good(`{"summary":"the parser is fine"}`), "fine", "find", 1)
	if _, err := parseEnvelope("x", []byte(tampered)); CodeOf(err) != CodeChecksum {
		t.Errorf("a tampered result: %v", err)
	}
}

// A *_TOKEN (or any credential-looking name) set in the parent never
// reaches the executor, even allow-listed by a hand-edited registry; the
// allow-list's other names do, and PWD is the task's folder.
func TestSecretsNeverReachTheExecutor(t *testing.T) {
	t.Setenv("MEMVAULT_TEST_TOKEN", "tok-123")
	t.Setenv("DEPLOY_API_KEY", "key-456")
	t.Setenv("FAKE_ALLOWED", "yes")
	t.Setenv("FAKE_NOT_ALLOWED", "no")
	t.Setenv("MEMVAULT_DIR", "/somewhere")
	e := fake("env")
	e.Env = []string{"FAKE_ALLOWED", "MEMVAULT_TEST_TOKEN", "DEPLOY_API_KEY"} // as if hand-edited: AddTo refuses these
	dir := t.TempDir()
	resp, err := Runner{}.Run(context.Background(), e, Request{Type: TypeTask, Prompt: "x", Cwd: dir}, 0)
	if err != nil {
		t.Fatal(err)
	}
	env := resp.Summary
	for _, bad := range []string{"tok-123", "key-456", "FAKE_NOT_ALLOWED", "MEMVAULT_DIR", "TOKEN", "API_KEY"} {
		if strings.Contains(env, bad) {
			t.Errorf("the executor saw %q:\n%s", bad, env)
		}
	}
	for _, good := range []string{"FAKE_ALLOWED=yes", "PWD=" + dir, "PATH="} {
		if !strings.Contains(env, good) {
			t.Errorf("the executor did not see %q:\n%s", good, env)
		}
	}
}

// A timeout kills the executor's whole process group: the grandchild it
// started is gone too.
func TestTimeoutKillsTheProcessGroup(t *testing.T) {
	pids := make(chan int, 1)
	sock := vaulttest.NotifySocket(t, func(msg string) string {
		if n, err := strconv.Atoi(strings.TrimPrefix(msg, "pid ")); err == nil {
			pids <- n
		}
		return ""
	})
	_, err := Runner{}.Run(context.Background(), fake("hang", "-notify", sock), Request{Type: TypeTask, Prompt: "x", Cwd: t.TempDir()}, 3*time.Second)
	if CodeOf(err) != CodeTimeout {
		t.Fatalf("want a timeout, got %v", err)
	}
	var pid int
	select {
	case pid = <-pids:
	default:
		t.Fatal("the fake did not start its grandchild before its timeout")
	}
	// Killed, it may stay a zombie until init reaps it: gone or a zombie
	// both mean it runs no more.
	for i := 0; !gone(pid); i++ {
		if i == 100 {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("the grandchild %d outlived the timeout", pid)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func gone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	// pid (comm) STATE …: comm may hold spaces and parentheses
	i := bytes.LastIndexByte(stat, ')')
	return i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z'
}

func TestPing(t *testing.T) {
	for _, e := range []Entry{fake("answer"), fake("plain")} {
		caps, err := (Runner{}).Ping(context.Background(), e, t.TempDir())
		if err != nil || strings.Join(caps, ",") != DefaultCapability {
			t.Errorf("%s: %q %v", e.Name, caps, err)
		}
	}
	for _, e := range []Entry{fake("garbage"), fake("crash"), fake("badsum")} {
		if _, err := (Runner{}).Ping(context.Background(), e, t.TempDir()); err == nil {
			t.Errorf("%s: a failing executor passed its ping", e.Name)
		}
	}
	req, _ := json.Marshal(Request{Protocol: 1, Type: TypePing, Prompt: "ping", Cwd: "/d"})
	if string(req) != `{"protocol":1,"type":"ping","prompt":"ping","cwd":"/d"}` {
		t.Errorf("the request envelope changed: %s", req)
	}
}

// The capabilities a ping finds: an envelope executor's reply names them
// (sorted, without repeats); one that names none, or a plain one, has what
// it was registered with, else the default; a reply naming them badly
// fails the ping as malformed.
func TestPingCapabilities(t *testing.T) {
	dir := t.TempDir()
	declared := fake("plain")
	declared.Capabilities = []string{"read", "code"}
	silent := fake("answer")
	silent.Capabilities = []string{"read"}
	for _, c := range []struct {
		e    Entry
		want string
	}{
		{fake("answer", "-caps", "summarise,read,code,read"), "code,read,summarise"},
		{silent, "read"},
		{declared, "read,code"},
		{fake("plain"), DefaultCapability},
	} {
		caps, err := (Runner{}).Ping(context.Background(), c.e, dir)
		if err != nil || strings.Join(caps, ",") != c.want {
			t.Errorf("%s %q: got %q %v, want %s", c.e.Name, c.e.Args, caps, err, c.want)
		}
	}
	for _, e := range []Entry{fake("badcaps"), fake("answer", "-caps", "Read"), fake("answer", "-caps", "a,,b"),
		fake("answer", "-caps", strings.Repeat("x,", 40)+"y")} {
		if _, err := (Runner{}).Ping(context.Background(), e, dir); CodeOf(err) != CodeMalformed {
			t.Errorf("%s %q: %v, want malformed", e.Name, e.Args, err)
		}
	}
}

// Cancelling the context (memvault interrupted) kills the executor's
// group as a timeout does, and is not retried.
func TestCancelKillsTheProcessGroup(t *testing.T) {
	pids := make(chan int, 1)
	sock := vaulttest.NotifySocket(t, func(msg string) string {
		if n, err := strconv.Atoi(strings.TrimPrefix(msg, "pid ")); err == nil {
			pids <- n
		}
		return ""
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := Runner{}.Run(ctx, fake("hang", "-notify", sock), Request{Type: TypeTask, Prompt: "x", Cwd: t.TempDir()}, time.Minute)
		done <- err
	}()
	pid := <-pids // the grandchild is running
	cancel()
	if err := <-done; CodeOf(err) != CodeCrash || !strings.Contains(err.Error(), "stopped") {
		t.Fatalf("want a stop, got %v", err)
	}
	for i := 0; !gone(pid); i++ {
		if i == 100 {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("the grandchild %d outlived the cancel", pid)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// The executor's own disk and memory: a full device is `disk`, tried once
// (exit class i/o); under a memory_limit the process's address space is
// bounded (its /proc/self/limits says so), a run that fits answers, and one
// that allocates past it is `memory_limit`, tried once (exit class invalid);
// the same words on stderr without a limit are a crash.
func TestRunDiskAndMemoryClasses(t *testing.T) {
	dir := t.TempDir()
	run := func(e Entry) (*Response, error) {
		t.Helper()
		return Runner{}.Run(context.Background(), e, Request{Type: TypeTask, Prompt: "p", Cwd: dir}, 0)
	}
	_, err := run(fake("diskfull"))
	if CodeOf(err) != CodeDisk || !strings.Contains(err.Error(), "no space left on device") || !errors.Is(err, fault.ErrIO) || Retried(CodeDisk) != 1 {
		t.Fatalf("a full device: %v (code %s)", err, CodeOf(err))
	}

	const limit = 2560 << 20 // a Go program reserves over 1 GiB of address space as it starts
	limited := func(mode string, args ...string) Entry {
		e := fake(mode, args...)
		e.MemoryLimit = limit
		return e
	}
	resp, err := run(limited("limits"))
	if err != nil || !strings.Contains(resp.Summary, fmt.Sprintf("Max address space %d %d bytes", limit, limit)) {
		t.Fatalf("the limit was not set on the process: %v %+v", err, resp)
	}
	if resp, err := run(limited("answer")); err != nil || resp.Summary != "done: p" {
		t.Fatalf("a run within the limit: %v %+v", err, resp)
	}
	_, err = run(limited("hog", "-mb", "3072"))
	if CodeOf(err) != CodeMemoryLimit || !strings.Contains(err.Error(), "memory_limit of 2.5GiB") || !errors.Is(err, fault.ErrInvalid) ||
		Retried(CodeMemoryLimit) != 1 {
		t.Fatalf("a run past the limit: %v (code %s)", err, CodeOf(err))
	}
	oom := Entry{Name: "says-oom", Command: "sh", Args: []string{"-c", "cat >/dev/null; echo 'fatal error: out of memory' >&2; exit 2"}, Mode: ModePlain}
	if _, err := run(oom); CodeOf(err) != CodeCrash {
		t.Fatalf("out of memory without a memory_limit: %v (code %s), want crash", err, CodeOf(err))
	}
	oom.MemoryLimit = limit
	if _, err := run(oom); CodeOf(err) != CodeMemoryLimit {
		t.Fatalf("out of memory under a memory_limit: %v (code %s)", err, CodeOf(err))
	}
}

// diskFailure reads the disk's errors off stderr; a permission refused
// is the disk's only when the working folder is not writable.
func TestDiskFailureClassifier(t *testing.T) {
	yes, no := func() bool { return true }, func() bool { return false }
	for _, c := range []struct {
		stderr   string
		writable func() bool
		disk     bool
	}{
		{"write out.json: no space left on device", yes, true},
		{"Error: ENOSPC: no space left on device, write", yes, true},
		{"open /x/y: read-only file system", yes, true},
		{"fatal: Disk quota exceeded", yes, true},
		{"read: input/output error", yes, true},
		{"open ./session.json: permission denied", no, true},
		{"EACCES: permission denied, mkdir '.cache'", no, true},
		{"open ./session.json: permission denied", yes, false},
		{"boom", no, false},
		{"", no, false},
	} {
		if got := diskFailure(c.stderr, c.writable) != ""; got != c.disk {
			t.Errorf("%q (writable %v): disk %v, want %v", c.stderr, c.writable(), got, c.disk)
		}
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"1GiB": 1 << 30, "1.5GiB": 3 << 29, "512MiB": 512 << 20, "2G": 2 << 30, "64M": 64 << 20,
		"1048576": 1 << 20, " 3 TiB ": 3 << 40} {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("%q: %d %v, want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "lots", "1GB", "-1GiB", "0", "1e30GiB", "GiB", "1 2MiB"} {
		if _, err := ParseSize(in); !errors.Is(err, fault.ErrInvalid) {
			t.Errorf("%q: %v, want invalid", in, err)
		}
	}
	if FormatSize(1280<<20) != "1.25GiB" || FormatSize(1<<30) != "1GiB" || FormatSize(1000) != "1000" {
		t.Errorf("FormatSize: %s %s %s", FormatSize(1280<<20), FormatSize(1<<30), FormatSize(1000))
	}
}
