package executor

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/memvault/memvault/vault/canonical"
)

// Request is what an executor is asked (the request envelope).
type Request struct {
	Protocol int    `json:"protocol"`
	Type     string `json:"type"` // task or ping
	ID       string `json:"id,omitempty"`
	Prompt   string `json:"prompt"`
	Cwd      string `json:"cwd"`
}

// Request types.
const (
	TypeTask = "task"
	TypePing = "ping"
)

// Response is a verified answer.
type Response struct {
	Result   json.RawMessage // the result object, canonical
	Summary  string
	Tokens   *int64
	Checksum string // hex SHA-256 of Result
	By       string // who computed the checksum: executor or memvault
}

// Runner runs executors. Env is the environment they are sanitised from
// (os.Environ() when nil).
type Runner struct {
	Env []string
}

// Run runs e once on req within timeout (e.Timeout when 0) and verifies
// what it answers. Its errors are *Error with the taxonomy's codes.
func (r Runner) Run(ctx context.Context, e Entry, req Request, timeout time.Duration) (*Response, error) {
	if timeout <= 0 {
		timeout = e.Timeout
	}
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	req.Protocol = 1
	if req.Cwd == "" {
		req.Cwd, _ = os.Getwd()
	}
	out, err := r.spawn(ctx, e, req, timeout)
	if err != nil {
		return nil, err
	}
	if e.Mode == ModePlain {
		return plainResponse(e.Name, out)
	}
	return parseEnvelope(e.Name, out)
}

// spawn runs the command and returns its stdout, bounded.
func (r Runner) spawn(ctx context.Context, e Entry, req Request, timeout time.Duration) ([]byte, error) {
	args := slices.Clone(e.Args)
	inArgs := false
	for i, a := range args {
		if strings.Contains(a, "{prompt}") {
			args[i] = strings.ReplaceAll(a, "{prompt}", req.Prompt)
			inArgs = true
		}
	}
	var stdin []byte
	switch {
	case inArgs:
	case e.Mode == ModePlain:
		stdin = []byte(req.Prompt)
	default:
		stdin, _ = json.Marshal(req)
	}
	env := r.Env
	if env == nil {
		env = os.Environ()
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, e.Command, args...)
	cmd.Dir = req.Cwd
	cmd.Env = Environ(env, e.Env, req.Cwd)
	cmd.Stdin = bytes.NewReader(stdin)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if e.Isolate == IsolateNet {
		if err := NetIsolationAvailable(); err != nil {
			return nil, errorf(CodeSpawn, err, "executor %s: isolate net: not available here: %v", e.Name, err)
		}
		netIsolation(cmd.SysProcAttr)
	}
	cmd.Cancel = func() error { return killGroup(cmd) }
	cmd.WaitDelay = 500 * time.Millisecond
	stdout := &bounded{limit: MaxOutput, over: cancel}
	stderr := &tail{keep: stderrKeep}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Start(); err != nil {
		return nil, errorf(CodeSpawn, err, "executor %s: cannot start %s: %v", e.Name, e.Command, unwrapExec(err))
	}
	if e.MemoryLimit > 0 {
		// Right after the exec: what it reserved before this is not
		// counted until it asks for more. A process already gone needs
		// no limit.
		if err := limitMemory(cmd.Process.Pid, e.MemoryLimit); err != nil && !errors.Is(err, syscall.ESRCH) {
			_ = killGroup(cmd)
			_ = cmd.Wait()
			return nil, errorf(CodeSpawn, err, "executor %s: cannot set its memory limit: %v", e.Name, err)
		}
	}
	werr := cmd.Wait()
	// Whatever happened, nothing of the group outlives the run.
	_ = killGroup(cmd)
	switch {
	case stdout.exceeded:
		return nil, errorf(CodeTooLarge, nil, "executor %s: output too large: over %d bytes", e.Name, MaxOutput)
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return nil, errorf(CodeTimeout, ctx.Err(), "executor %s: timed out after %s", e.Name, timeout)
	case ctx.Err() != nil:
		return nil, errorf(CodeCrash, ctx.Err(), "executor %s: stopped: %v", e.Name, ctx.Err())
	}
	var exit *exec.ExitError
	if errors.As(werr, &exit) {
		msg := "executor " + e.Name + ": " + exit.ProcessState.String()
		text := stderr.text()
		if line := lineWith(text, oomWords()); e.MemoryLimit > 0 && line != "" {
			return nil, &Error{Code: CodeMemoryLimit, Err: werr,
				Msg: fmt.Sprintf("%s: out of memory under its memory_limit of %s: %s", msg, FormatSize(e.MemoryLimit), line)}
		}
		if line := diskFailure(text, func() bool { return syscall.Access(cmd.Dir, 2 /* W_OK */) == nil }); line != "" {
			return nil, &Error{Code: CodeDisk, Msg: msg + ": disk failure: " + line, Err: werr}
		}
		if last := stderr.lastLine(); last != "" {
			msg += ": " + last
		}
		return nil, &Error{Code: CodeCrash, Msg: msg, Err: werr}
	}
	if werr != nil && !errors.Is(werr, exec.ErrWaitDelay) {
		return nil, errorf(CodeCrash, werr, "executor %s: %v", e.Name, werr)
	}
	return stdout.buf.Bytes(), nil
}

func unwrapExec(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var ee *exec.Error
	if errors.As(err, &ee) {
		return ee.Err
	}
	return err
}

// killGroup kills the process group of cmd's process (its pgid is its pid:
// Setpgid), grandchildren included.
func killGroup(cmd *exec.Cmd) error {
	if cmd.Process == nil || cmd.Process.Pid <= 0 {
		return nil
	}
	err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

// bounded keeps at most limit bytes; past them it calls over once and
// refuses the rest.
type bounded struct {
	buf      bytes.Buffer
	limit    int
	exceeded bool
	over     func()
}

var errTooLarge = errors.New("output too large")

func (b *bounded) Write(p []byte) (int, error) {
	if b.exceeded {
		return 0, errTooLarge
	}
	if b.buf.Len()+len(p) > b.limit {
		b.exceeded = true
		b.over()
		return 0, errTooLarge
	}
	return b.buf.Write(p)
}

// tail keeps the last keep bytes written, and the first headKeep (a
// runtime's fatal error comes first, its stack after it).
type tail struct {
	head []byte
	buf  []byte
	keep int
	n    int // bytes written
}

const headKeep = 1 << 10

func (t *tail) Write(p []byte) (int, error) {
	if len(t.head) < headKeep {
		t.head = append(t.head, p[:min(len(p), headKeep-len(t.head))]...)
	}
	t.n += len(p)
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.keep {
		t.buf = append([]byte(nil), t.buf[len(t.buf)-t.keep:]...)
	}
	return len(p), nil
}

// text is what was kept: the head and the tail, once when they overlap.
func (t *tail) text() string {
	if t.n <= len(t.buf) {
		return string(t.buf)
	}
	return string(t.head) + "\n…\n" + string(t.buf)
}

// What, said on an executor's stderr, names a failure of its memory or
// of its disk (lower case; the messages of libc's strerror, Go's, Node's,
// Python's).
func oomWords() []string {
	return []string{"out of memory", "cannot allocate memory", "failed to reserve", "bad_alloc", "memoryerror", "enomem", "allocation failed"}
}

func diskWords() []string {
	return []string{"no space left on device", "enospc", "disk quota exceeded", "edquot", "read-only file system", "erofs", "input/output error", "eio:"}
}

func denyWords() []string { return []string{"permission denied", "eacces"} }

// diskFailure is the line of an executor's stderr that names a disk
// failure: the device full, the quota spent, a read-only file system, an
// I/O error, or a permission refused while its working folder is not
// writable (writable says); "" when there is none.
func diskFailure(stderr string, writable func() bool) string {
	if line := lineWith(stderr, diskWords()); line != "" {
		return line
	}
	if line := lineWith(stderr, denyWords()); line != "" && !writable() {
		return line + " (its working folder is not writable)"
	}
	return ""
}

// lineWith is the first line of text holding one of words, any case,
// clipped; "" when none does.
func lineWith(text string, words []string) string {
	for _, line := range strings.Split(text, "\n") {
		low := strings.ToLower(line)
		for _, w := range words {
			if strings.Contains(low, w) {
				return clip(strings.TrimSpace(strings.ToValidUTF8(line, "?")), 300)
			}
		}
	}
	return ""
}

func (t *tail) lastLine() string {
	s := strings.TrimSpace(strings.ToValidUTF8(string(t.buf), "?"))
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return clip(s, 300)
}

// clip cuts s to at most n bytes on a rune boundary, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// Checksum is the hex SHA-256 of the canonical JSON of result.
func Checksum(result []byte) (canon []byte, sum string, err error) {
	canon, err = canonical.Of(result)
	if err != nil {
		return nil, "", err
	}
	h := sha256.Sum256(canon)
	return canon, hex.EncodeToString(h[:]), nil
}

// plainResponse wraps a plain executor's text as a result and hashes it.
func plainResponse(name string, out []byte) (*Response, error) {
	if !utf8.Valid(out) {
		return nil, errorf(CodeMalformed, nil, "executor %s: output is not valid utf-8", name)
	}
	text := strings.TrimSpace(string(out))
	if text == "" {
		return nil, errorf(CodeMalformed, nil, "executor %s: no output", name)
	}
	if len(text) > MaxSummary {
		return nil, errorf(CodeTooLarge, nil, "executor %s: summary too large: %d bytes, at most %d", name, len(text), MaxSummary)
	}
	raw, _ := json.Marshal(map[string]string{"summary": text})
	canon, sum, err := Checksum(raw)
	if err != nil {
		return nil, errorf(CodeMalformed, err, "executor %s: %v", name, err)
	}
	return &Response{Result: canon, Summary: text, Checksum: sum, By: "memvault"}, nil
}

// parseEnvelope checks a response envelope: its shape, then its checksum.
func parseEnvelope(name string, out []byte) (*Response, error) {
	bad := func(format string, args ...any) error {
		return errorf(CodeMalformed, nil, "executor %s: malformed response: "+format, append([]any{name}, args...)...)
	}
	var env struct {
		OK       *bool           `json:"ok"`
		Result   json.RawMessage `json:"result"`
		Checksum string          `json:"checksum"`
		Error    *struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	trimmed := bytes.TrimSpace(out)
	if len(trimmed) == 0 {
		return nil, bad("no output")
	}
	if _, err := canonical.Decode(trimmed); err != nil {
		return nil, bad("not one JSON value: %s", clip(err.Error(), 200))
	}
	if err := json.Unmarshal(trimmed, &env); err != nil {
		return nil, bad("%s", clip(err.Error(), 200))
	}
	switch {
	case env.OK == nil:
		return nil, bad("no \"ok\"")
	case !*env.OK:
		if env.Error == nil {
			return nil, bad("\"ok\": false without \"error\"")
		}
		return nil, errorf(CodeExecutor, nil, "executor %s: %s: %s", name, clip(env.Error.Code, 64), clip(env.Error.Message, 300))
	}
	var res struct {
		Summary *string      `json:"summary"`
		Tokens  *json.Number `json:"tokens"`
	}
	if len(env.Result) == 0 || env.Result[0] != '{' || json.Unmarshal(env.Result, &res) != nil {
		return nil, bad("\"result\" is not an object with a string \"summary\"")
	}
	if res.Summary == nil || strings.TrimSpace(*res.Summary) == "" {
		return nil, bad("no \"result.summary\"")
	}
	if len(*res.Summary) > MaxSummary {
		return nil, errorf(CodeTooLarge, nil, "executor %s: summary too large: %d bytes, at most %d", name, len(*res.Summary), MaxSummary)
	}
	var tokens *int64
	if res.Tokens != nil {
		n, err := res.Tokens.Int64()
		if err != nil || n < 0 {
			return nil, bad("\"result.tokens\" %s is not a non-negative integer", res.Tokens.String())
		}
		tokens = &n
	}
	if len(env.Checksum) != 64 || strings.Trim(env.Checksum, "0123456789abcdef") != "" {
		return nil, bad("\"checksum\" is not 64 lower-case hex digits")
	}
	canon, sum, err := Checksum(env.Result)
	if err != nil {
		return nil, bad("%v", err)
	}
	if len(canon) > MaxResult {
		return nil, errorf(CodeTooLarge, nil, "executor %s: result too large: %d bytes, at most %d", name, len(canon), MaxResult)
	}
	if sum != env.Checksum {
		return nil, errorf(CodeChecksum, nil, "executor %s: checksum mismatch: the result hashes to %s, the executor says %s", name, sum[:12], env.Checksum[:12])
	}
	return &Response{Result: canon, Summary: *res.Summary, Tokens: tokens, Checksum: sum, By: "executor"}, nil
}

// Ping checks that e answers a ping within its ping timeout (PingTimeout
// unless the entry says) with a valid response (docs/EXECUTORS.md, "The
// protocol"); an entry with Ping arguments is run with them instead, in
// plain mode. It returns e's capabilities: those an envelope executor's
// reply names (result.capabilities), else those e has (Caps).
func (r Runner) Ping(ctx context.Context, e Entry, dir string) ([]string, error) {
	pinged := e
	if len(e.Ping) > 0 {
		pinged.Args, pinged.Mode = e.Ping, ModePlain
	}
	timeout := e.PingTimeout
	if timeout <= 0 {
		timeout = PingTimeout
	}
	resp, err := r.Run(ctx, pinged, Request{Type: TypePing, Prompt: TypePing, Cwd: dir}, timeout)
	if err != nil {
		return nil, err
	}
	if pinged.Mode == ModeEnvelope {
		var res struct {
			Capabilities *[]string `json:"capabilities"`
		}
		if err := json.Unmarshal(resp.Result, &res); err != nil {
			return nil, errorf(CodeMalformed, err, "executor %s: malformed response: \"result.capabilities\" is not a list of strings", e.Name)
		}
		if res.Capabilities != nil {
			caps, err := checkCapabilities(*res.Capabilities)
			if err != nil {
				return nil, errorf(CodeMalformed, err, "executor %s: malformed response: %v", e.Name, err)
			}
			if len(caps) > 0 {
				return caps, nil
			}
		}
	}
	return e.Caps(), nil
}
