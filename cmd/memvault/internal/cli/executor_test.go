package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memvault/memvault/vault/executor"
	"github.com/memvault/memvault/vault/vaulttest"
)

// The executor commands and delegate on a real vault, with sh as the
// executor: a refused registration leaves memvault.toml as it was, add
// and remove give the file back byte for byte, a failing ping is recorded
// as the reason, and a delegation's failure is recorded with its tries and
// its exit code.
func TestExecutorCommands(t *testing.T) {
	isolate(t)
	dir := t.TempDir()
	vaultDir := filepath.Join(dir, ".memory")
	mv := mvAt(t, vaultDir)
	mv(0, "init")
	toml := filepath.Join(vaultDir, "memvault.toml")
	orig, err := os.ReadFile(toml)
	if err != nil {
		t.Fatal(err)
	}
	same := func(what string) {
		t.Helper()
		now, _ := os.ReadFile(toml)
		if !bytes.Equal(now, orig) {
			t.Fatalf("%s changed memvault.toml:\n%s", what, now)
		}
	}

	mv(2, "executor", "add", "leaky", "--env", "GITHUB_TOKEN", "--", "sh", "-c", "cat")
	same("a refused --env")
	mv(2, "executor", "add", "Bad/Name", "--", "sh")
	mv(2, "executor", "add", "lonely")
	mv(2, "delegate", "--concurrency", "13", "x")
	mv(3, "delegate", "no executor yet")
	same("the refusals")

	out := mv(0, "executor", "add", "echo", "--plain", "--", "sh", "-c", "cat; echo")
	if !strings.Contains(out, "echo added: active") {
		t.Fatalf("add: %s", out)
	}
	mv(4, "executor", "add", "echo", "--", "sh")
	out = mv(0, "executor", "add", "mute", "--timeout", "1s", "--", "sh", "-c", "exit 7")
	if !strings.Contains(out, "inactive: ping: executor mute: exit status 7") {
		t.Fatalf("a failing ping: %s", out)
	}
	mv(4, "delegate", "--executor", "mute", "x") // inactive
	out = mv(0, "executor", "list")
	if !strings.Contains(out, "echo") || !strings.Contains(out, "inactive (ping: executor mute") {
		t.Fatalf("list: %s", out)
	}

	out = mv(0, "delegate", "--executor", "echo", "--global", "--json", "summarise <the> parser & lexer")
	var rep delegateReport
	if err := json.Unmarshal([]byte(strings.SplitN(out, "\n", 2)[0]), &rep); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if !rep.OK || rep.Kind != "executor.delegated" || rep.Summary != "summarise <the> parser & lexer" || len(rep.Attempts) != 1 {
		t.Fatalf("delegate: %+v", rep)
	}
	out = mv(0, "ledger", rep.ID, "--json")
	for _, want := range []string{`"source": "executor"`, `"checksum_by": "memvault"`, `"kind": "executor.delegated"`} {
		if !strings.Contains(out, want) {
			t.Fatalf("the event lacks %s:\n%s", want, out)
		}
	}

	// an executor that answers its ping and crashes on a task: three
	// tries, recorded as failed, exit 1
	mv(0, "executor", "ping", "mute") // still inactive: recorded, exit 0
	mv(0, "executor", "remove", "mute")
	mv(0, "executor", "add", "crashy", "--plain", "--", "sh", "-c", `p=$(cat); [ "$p" = ping ] && echo pong || { echo boom >&2; exit 3; }`)
	out = mv(1, "delegate", "--executor", "crashy", "--global", "read it")
	if !strings.Contains(out, "failed after 3 tries") || !strings.Contains(out, "boom") {
		t.Fatalf("a crashing executor: %s", out)
	}
	out = mv(0, "ledger", "--kind", "executor.failed", "--json")
	if strings.Count(out, `"code": "crash"`) != 4 { // three tries and the last error
		t.Fatalf("the failed delegation's tries:\n%s", out)
	}

	mv(0, "executor", "remove", "crashy")
	mv(0, "executor", "remove", "echo")
	same("adding and removing the executors")
	mv(3, "executor", "remove", "echo")
	mv(3, "executor", "show", "echo")
	mv(0, "verify")
}

// Tasks as JSON lines on stdin: dependencies run in order and say so; a
// bad line, an unknown id or a cycle is refused before anything runs.
func TestDelegateTasksFromStdin(t *testing.T) {
	isolate(t)
	vaultDir := filepath.Join(t.TempDir(), ".memory")
	mv := func(want int, stdin string, args ...string) (string, string) {
		t.Helper()
		var out, errOut bytes.Buffer
		code := Run(append([]string{"--vault", vaultDir}, args...), strings.NewReader(stdin), &out, &errOut)
		if code != want {
			t.Fatalf("memvault %s: exit %d, want %d\n%s%s", strings.Join(args, " "), code, want, out.String(), errOut.String())
		}
		return out.String(), errOut.String()
	}
	mv(0, "", "init")
	mv(0, "", "executor", "add", "echo", "--plain", "--", "cat")
	before, _ := mv(0, "", "ledger", "--json")
	for name, in := range map[string]string{
		"not json":      "read the parser\n",
		"unknown field": `{"task":"x","deps":["a"]}` + "\n",
		"unknown id":    `{"id":"b","task":"x","after":["a"]}` + "\n",
		"cycle":         `{"id":"a","task":"x","after":["b"]}` + "\n" + `{"id":"b","task":"y","after":["a"]}` + "\n",
		"empty":         "\n\n",
		"blank task":    `{"id":"a","task":"  "}` + "\n",
	} {
		_, errOut := mv(2, in, "delegate", "--global", "-")
		if !strings.Contains(errOut, "delegate") {
			t.Errorf("%s: %s", name, errOut)
		}
	}
	mv(2, "", "delegate", "--mode", "eager", "x")
	if after, _ := mv(0, "", "ledger", "--json"); after != before {
		t.Fatal("a refused delegation changed the ledger")
	}
	out, errOut := mv(0, `{"id":"b","task":"compare","after":["a"]}`+"\n"+`{"id":"a","task":"read"}`+"\n", "delegate", "--global", "--mode", "concurrent", "-")
	if !strings.Contains(errOut, "sequential (task b waits for a)") {
		t.Fatalf("the mode is not said: %s", errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || !strings.HasSuffix(lines[0], "  read") || !strings.HasSuffix(lines[1], "  compare") {
		t.Fatalf("not in dependency order: %q", lines)
	}
}

// A preset: a stand-in `claude` on the PATH answers its ping by
// --version and a task by -p PROMPT.
func TestExecutorPreset(t *testing.T) {
	isolate(t)
	bin := t.TempDir()
	script := "#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'claude 9.9 (stand-in)'; exit 0; fi\n[ \"$1\" = -p ] && [ \"$2\" = -- ] || exit 5\necho \"answered: $3\"\n"
	if err := os.WriteFile(filepath.Join(bin, "claude"), []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	vaultDir := filepath.Join(t.TempDir(), ".memory")
	mv := mvAt(t, vaultDir)
	mv(0, "init")
	mv(2, "executor", "add", "c", "--preset", "claude-code", "--", "extra")
	mv(2, "executor", "add", "c", "--preset", "nope")
	mv(2, "executor", "add", "o", "--preset", "ollama")
	if out := mv(0, "executor", "add", "c", "--preset", "claude-code"); !strings.Contains(out, "c added: active") {
		t.Fatal(out)
	}
	out := mv(0, "executor", "show", "c", "--json")
	for _, want := range []string{`"command": "claude"`, `"-p"`, `"{prompt}"`, `"mode": "plain"`, `"timeout": "5m0s"`, `"--version"`, `"ping_timeout": "15s"`} {
		if !strings.Contains(out, want) {
			t.Fatalf("the preset's entry lacks %s:\n%s", want, out)
		}
	}
	if out := mv(0, "delegate", "--global", "--executor", "c", "summarise the parser"); !strings.Contains(out, "answered: summarise the parser") {
		t.Fatal(out)
	}
}

func TestDelegateAny(t *testing.T) {
	isolate(t)
	vaultDir := filepath.Join(t.TempDir(), ".memory")
	mv := mvAt(t, vaultDir)
	mv(0, "init")
	mv(3, "delegate", "--any", "x")
	mv(0, "executor", "add", "a", "--plain", "--", "sh", "-c", "cat; echo ' (a)'")
	mv(0, "executor", "add", "b", "--plain", "--", "sh", "-c", "cat; echo ' (b)'")
	mv(2, "delegate", "--any", "--executor", "a", "x")
	out := mv(0, "delegate", "--global", "--any", "--mode", "sequential", "one", "two")
	if !strings.Contains(out, "2 tasks on a, b") || !strings.Contains(out, "  one (a)") || !strings.Contains(out, "  two (b)") {
		t.Fatal(out)
	}
	out = mv(0, "audit", "--json")
	if !strings.Contains(out, `"executor": "a"`) || !strings.Contains(out, `"executor": "b"`) {
		t.Fatalf("each executor's share is not recorded:\n%s", out)
	}
}

// Capabilities: an envelope executor's ping reply names them, and a later
// ping that finds others rewrites them in place (every other byte of
// memvault.toml kept); a plain one has those add declared, else the
// default; delegate gives a task naming one only to an executor that has
// it, and refuses, changing nothing, one that none has.
func TestExecutorCapabilities(t *testing.T) {
	isolate(t)
	dir := t.TempDir()
	vaultDir := filepath.Join(dir, ".memory")
	mv := mvAt(t, vaultDir)
	reply := filepath.Join(dir, "reply.json")
	answer := func(caps ...string) {
		t.Helper()
		res, _ := json.Marshal(map[string]any{"capabilities": caps, "summary": "envelope answer"})
		_, sum, err := executor.Checksum(res)
		if err != nil {
			t.Fatal(err)
		}
		env, _ := json.Marshal(map[string]any{"ok": true, "result": json.RawMessage(res), "checksum": sum})
		if err := os.WriteFile(reply, env, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	mv(0, "init")
	answer("read", "code", "read")
	out := mv(0, "executor", "add", "env1", "--", "sh", "-c", "cat >/dev/null; cat "+reply)
	if !strings.Contains(out, "capabilities: code, read)") {
		t.Fatalf("add does not say what the ping found:\n%s", out)
	}
	if out := mv(0, "executor", "add", "p", "--plain", "--capability", "read", "--capability", "diff", "--", "cat"); !strings.Contains(out, "capabilities: diff, read)") {
		t.Fatal(out)
	}
	if out := mv(0, "executor", "add", "q", "--plain", "--", "cat"); !strings.Contains(out, "capabilities: summarise)") {
		t.Fatal(out)
	}
	mv(2, "executor", "add", "r", "--plain", "--capability", "Read", "--", "cat")
	mv(2, "executor", "add", "r", "--plain", "--memory-limit", "lots", "--", "cat")
	mv(0, "executor", "add", "m", "--plain", "--memory-limit", "2048MiB", "--", "cat")
	if out := mv(0, "executor", "show", "m"); !strings.Contains(out, "memory:  2GiB of address space\n") {
		t.Fatal(out)
	}
	toml := filepath.Join(vaultDir, "memvault.toml")
	before, _ := os.ReadFile(toml)
	if !strings.Contains(string(before), "capabilities = [\"code\", \"read\"]") {
		t.Fatalf("memvault.toml does not keep the capabilities:\n%s", before)
	}
	answer("write")
	mv(0, "executor", "ping", "env1")
	after, _ := os.ReadFile(toml)
	if want := strings.Replace(string(before), "capabilities = [\"code\", \"read\"]", "capabilities = [\"write\"]", 1); string(after) != want {
		t.Fatalf("ping did not rewrite the capabilities alone:\n%s", after)
	}
	if out := mv(0, "executor", "show", "env1"); !strings.Contains(out, "can:     write\n") {
		t.Fatal(out)
	}
	if out := mv(0, "executor", "show", "p", "--json"); !strings.Contains(out, `"capabilities": [`) || !strings.Contains(out, `"diff"`) {
		t.Fatal(out)
	}

	ledger := mv(0, "ledger", "--json")
	mv(2, "delegate", "--global", "--executor", "q", "--capability", "write", "x")
	mv(2, "delegate", "--global", "--any", "--capability", "fly", "x")
	mv(2, "delegate", "--global", "--any", "--capability", "Bad Name", "x")
	if mv(0, "ledger", "--json") != ledger {
		t.Fatal("a refused delegation changed the ledger")
	}
	out = mv(0, "delegate", "--global", "--any", "--json", "--capability", "write", "one", "two", "three")
	if strings.Count(out, `"summary":"envelope answer"`) != 3 {
		t.Fatalf("the tasks needing write did not all go to env1:\n%s", out)
	}
	var in bytes.Buffer
	in.WriteString(`{"task":"read this","capability":"diff"}` + "\n" + `{"task":"anything"}` + "\n")
	var so, se bytes.Buffer
	if code := Run([]string{"--vault", vaultDir, "delegate", "--global", "--any", "--json", "--capability", "write", "-"}, &in, &so, &se); code != 0 {
		t.Fatalf("exit %d: %s%s", code, so.String(), se.String())
	}
	if !strings.Contains(so.String(), `"summary":"read this"`) || !strings.Contains(so.String(), `"summary":"envelope answer"`) {
		t.Fatalf("a task's own capability (diff: p) or --capability's (write: env1) not followed:\n%s", so.String())
	}
}

// Tasks from a named file, one a line or JSON lines, and their scopes: a
// scoped task runs in its folder, and its event goes to that folder's
// thread (a git repository of its own here), or to the thread the task
// names. Bad input is one line on stderr, exit 2, the ledger as it was.
func TestDelegateTasksFromFile(t *testing.T) {
	isolate(t)
	dir := t.TempDir()
	vaultDir := filepath.Join(dir, ".memory")
	mv := func(want int, args ...string) (string, string) {
		t.Helper()
		code, out, errOut := runCLI(t, append([]string{"--vault", vaultDir}, args...)...)
		if code != want {
			t.Fatalf("memvault %s: exit %d, want %d\n%s%s", strings.Join(args, " "), code, want, out, errOut)
		}
		return out, errOut
	}
	write := func(name, text string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	mv(0, "init")
	mv(0, "executor", "add", "where", "--plain", "--", "sh", "-c", `p=$(cat); echo "$p in $(pwd)"`)
	sub := filepath.Join(dir, "sub")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	vaulttest.Git{Dir: sub}.Run(t, "init", "-q")
	ledger, _ := mv(0, "ledger", "--json")
	for name, args := range map[string][]string{
		"missing file":    {"--file", filepath.Join(dir, "nope.txt")},
		"a folder":        {"--file", sub},
		"file and args":   {"--file", write("one.txt", "x\n"), "y"},
		"empty":           {"--file", write("empty.txt", "\n  \n")},
		"bad json line":   {"--file", write("bad.jsonl", `{"task":"a"}`+"\n"+`{"task":`+"\n")},
		"unknown field":   {"--file", write("field.jsonl", `{"task":"a","cwd":"/"}`+"\n")},
		"not utf-8":       {"--file", write("latin.txt", "caf\xe9\n")},
		"missing scope":   {"--file", write("scope1.jsonl", `{"task":"a","scope":"`+filepath.Join(dir, "gone")+`"}`+"\n")},
		"scope not a dir": {"--file", write("scope2.jsonl", `{"task":"a","scope":"`+filepath.Join(dir, "one.txt")+`"}`+"\n")},
		"bad thread":      {"--file", write("thread.jsonl", `{"task":"a","thread":"no threads here"}`+"\n")},
		"a blank task":    {"--file", write("blank.jsonl", `{"task":"  "}`+"\n")},
	} {
		_, errOut := mv(2, append([]string{"delegate", "--global", "--executor", "where"}, args...)...)
		if lines := strings.Split(strings.TrimSpace(errOut), "\n"); len(lines) != 1 || !strings.Contains(errOut, "delegate") {
			t.Errorf("%s: want one line naming delegate, got:\n%s", name, errOut)
		}
	}
	if after, _ := mv(0, "ledger", "--json"); after != ledger {
		t.Fatal("refused delegations changed the ledger")
	}

	// one task a line
	out, _ := mv(0, "delegate", "--global", "--executor", "where", "--file", write("tasks.txt", "read the parser\n\n  read the lexer  \r\n"))
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 2 || !strings.Contains(out, "read the parser in ") || !strings.Contains(out, "read the lexer in ") {
		t.Fatalf("one task a line:\n%s", out)
	}
	// JSON lines with scopes: the folder it ran in, the thread it went to
	out, _ = mv(0, "delegate", "--executor", "where", "--json", "--file", write("scoped.jsonl",
		`{"id":"a","task":"look here","scope":"`+sub+`"}`+"\n"+
			`{"id":"b","task":"look there","scope":"`+sub+`","thread":"project:elsewhere"}`+"\n"+
			`{"id":"c","task":"and here","after":["a"]}`+"\n"))
	var reps []struct {
		Task, ID, Summary string
	}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var r struct{ Task, ID, Summary string }
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("%v: %s", err, l)
		}
		reps = append(reps, r)
	}
	if len(reps) != 3 || !strings.HasSuffix(reps[0].Summary, " in "+sub) || !strings.HasSuffix(reps[1].Summary, " in "+sub) ||
		strings.Contains(reps[2].Summary, " in "+sub+"\n") {
		t.Fatalf("the scopes were not the folders they ran in:\n%s", out)
	}
	rows, _ := mv(0, "ledger", "--json", "--kind", "executor.delegated")
	var evs []struct {
		ID, Thread string
		Data       struct{ Scope string }
	}
	if err := json.Unmarshal([]byte(rows), &evs); err != nil {
		t.Fatal(err)
	}
	threads := map[string]string{}
	scopes := map[string]string{}
	for _, e := range evs {
		threads[e.ID], scopes[e.ID] = e.Thread, e.Data.Scope
	}
	if threads[reps[0].ID] != "project:sub" || threads[reps[1].ID] != "project:elsewhere" || threads[reps[2].ID] != "" ||
		scopes[reps[0].ID] != sub || scopes[reps[2].ID] != "" {
		t.Fatalf("threads %v, scopes %v", threads, scopes)
	}
	// --file - is stdin, with the file's rules
	var so, se bytes.Buffer
	if code := Run([]string{"--vault", vaultDir, "delegate", "--global", "--executor", "where", "--file", "-"}, strings.NewReader("plain task\n"), &so, &se); code != 0 ||
		!strings.Contains(so.String(), "plain task in ") {
		t.Fatalf("--file -: exit %d\n%s%s", code, so.String(), se.String())
	}
}

// audit replay RANGE: FROM..TO, FROM.., ..TO, one ID, --since; a range
// that says nothing or names no event is refused.
func TestAuditReplayRangeCommand(t *testing.T) {
	isolate(t)
	vaultDir := filepath.Join(t.TempDir(), ".memory")
	mv := mvAt(t, vaultDir)
	mv(0, "init")
	mv(0, "executor", "add", "echo", "--plain", "--", "cat")
	mv(0, "delegate", "--global", "--mode", "sequential", "one", "two", "three")
	var rows []struct{ ID string }
	if err := json.Unmarshal([]byte(mv(0, "audit", "--json")), &rows); err != nil || len(rows) != 3 {
		t.Fatalf("%v %v", rows, err)
	}
	a, b, c := rows[0].ID, rows[1].ID, rows[2].ID
	for arg, want := range map[string]string{
		a + ".." + b: "range: " + a + ".." + b + ", 2 events",
		b + "..":     "range: " + b + ".." + c + ", 2 events",
		".." + a:     "delegations: 1, 1 results verified",
		c:            "range: " + c + ".." + c + ", 1 events",
	} {
		if out := mv(0, "audit", "replay", arg); !strings.Contains(out, want) || !strings.Contains(out, "ok: replay matches the ledger") {
			t.Errorf("audit replay %s: want %q in\n%s", arg, want, out)
		}
	}
	if out := mv(0, "audit", "replay", "--since", "1h"); !strings.Contains(out, "delegations: 3, 3 results verified") {
		t.Errorf("--since 1h:\n%s", out)
	}
	mv(2, "audit", "replay", "..")
	mv(2, "audit", "replay", a, b)
	mv(2, "audit", "replay", c+".."+a)
	mv(3, "audit", "replay", "e_"+strings.Repeat("0", 26)+"..")
}

// mvAt runs memvault on the vault at vaultDir and fails the test unless
// it exits want; it returns stdout then stderr.
func mvAt(t *testing.T, vaultDir string) func(want int, args ...string) string {
	return func(want int, args ...string) string {
		t.Helper()
		code, out, errOut := runCLI(t, append([]string{"--vault", vaultDir}, args...)...)
		if code != want {
			t.Fatalf("memvault %s: exit %d, want %d\n%s%s", strings.Join(args, " "), code, want, out, errOut)
		}
		return out + errOut
	}
}
