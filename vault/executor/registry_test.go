package executor

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/fault"
	"github.com/memvault/memvault/vault/testvault"
)

// A registry edit changes only the executor's table: the comments and
// every other byte of memvault.toml stay, and removal gives the file back
// byte for byte.
func TestRegistryEditsAreByteStable(t *testing.T) {
	const orig = "# my settings\nversion = 1\nagent = \"a\" # trailing comment\n\n[lock]\ntimeout = \"10s\"\n"
	e := Entry{Name: "reader", Command: "/bin/my reader", Args: []string{"-p", "{prompt}"}, TimeoutText: "7s", Weight: 2,
		Env: []string{"OLLAMA_HOST"}, Mode: ModePlain}
	added, err := AddTo([]byte(orig), e)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(added), orig) {
		t.Fatalf("the add changed what was there:\n%s", added)
	}
	es, err := Parse(added)
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 1 {
		t.Fatalf("want one executor, got %+v", es)
	}
	got := es[0]
	if got.Name != "reader" || got.Command != e.Command || !slices.Equal(got.Args, e.Args) || got.Timeout != 7*time.Second ||
		got.Weight != 2 || !slices.Equal(got.Env, e.Env) || got.Mode != ModePlain || got.Status != StatusActive {
		t.Fatalf("read back %+v", got)
	}
	if _, err := AddTo(added, e); !errors.Is(err, fault.ErrConflict) {
		t.Fatalf("a second add of the same name: %v, want a conflict", err)
	}
	off, err := SetStatus(added, "reader", StatusInactive, "ping: timed out \"after\" 2s")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(off), orig) || len(strings.Split(string(off), "\n")) != len(strings.Split(string(added), "\n")) {
		t.Fatalf("the status edit moved lines:\n%s", off)
	}
	es, _ = Parse(off)
	if es[0].Status != StatusInactive || es[0].Reason != "ping: timed out \"after\" 2s" {
		t.Fatalf("status not set: %+v", es[0])
	}
	back, err := RemoveFrom(off, "reader")
	if err != nil {
		t.Fatal(err)
	}
	if string(back) != orig {
		t.Fatalf("remove did not give the file back:\nwant %q\ngot  %q", orig, back)
	}
	if _, err := RemoveFrom(back, "reader"); !errors.Is(err, fault.ErrNotFound) {
		t.Fatalf("removing a missing executor: %v", err)
	}
}

func TestRegistryRefuses(t *testing.T) {
	ok := Entry{Name: "x", Command: "c"}
	for name, e := range map[string]Entry{
		"bad name":     {Name: "Bad", Command: "c"},
		"dot name":     {Name: "-x", Command: "c"},
		"no command":   {Name: "x", Command: " "},
		"bad timeout":  {Name: "x", Command: "c", TimeoutText: "soon"},
		"zero timeout": {Name: "x", Command: "c", TimeoutText: "0s"},
		"weight":       {Name: "x", Command: "c", Weight: 13},
		"mode":         {Name: "x", Command: "c", Mode: "json"},
		"env name":     {Name: "x", Command: "c", Env: []string{"A=B"}},
		"secret env":   {Name: "x", Command: "c", Env: []string{"GITHUB_TOKEN"}},
		"secret lower": {Name: "x", Command: "c", Env: []string{"my_api_key"}},
		"password env": {Name: "x", Command: "c", Env: []string{"DB_PASSWORD"}},
		"credential":   {Name: "x", Command: "c", Env: []string{"GOOGLE_APPLICATION_CREDENTIALS"}},
		"memory text":  {Name: "x", Command: "c", MemoryLimitText: "plenty"},
		"memory small": {Name: "x", Command: "c", MemoryLimitText: "8MiB"},
		"ping timeout": {Name: "x", Command: "c", PingTimeoutText: "-2s"},
		"capability":   {Name: "x", Command: "c", Capabilities: []string{"Read"}},
	} {
		if _, err := AddTo(nil, e); !errors.Is(err, fault.ErrInvalid) {
			t.Errorf("%s: %v, want invalid", name, err)
		}
	}
	if _, err := AddTo(nil, ok); err != nil {
		t.Fatalf("a minimal entry: %v", err)
	}
	withLimit := ok
	withLimit.MemoryLimitText = "1536MiB"
	data, err := AddTo(nil, withLimit)
	if err != nil || !strings.Contains(string(data), `memory_limit = "1.5GiB"`) {
		t.Fatalf("a memory limit: %v\n%s", err, data)
	}
	if es, err := Parse(data); err != nil || es[0].MemoryLimit != 1536<<20 {
		t.Fatalf("read back: %+v %v", es, err)
	}
	if _, err := Parse([]byte("[executors.x]\ncommand = \"c\"\nmode = \"odd\"\n")); !errors.Is(err, fault.ErrInvalid) {
		t.Fatalf("a hand-written bad mode: %v", err)
	}
}

// The environment holds the base set, the locale, the allow-list and PWD,
// and never a name that looks like a credential, allow-listed or not.
func TestEnvironIsSanitised(t *testing.T) {
	parent := []string{"PATH=/bin", "HOME=/h", "PWD=/elsewhere", "LC_ALL=C", "LANG=en", "MEMVAULT_DIR=/v", "GIT_DIR=/g",
		"OPENAI_API_KEY=sk", "GITHUB_TOKEN=t", "MY_SECRET=s", "OLLAMA_HOST=h:1", "AWS_SECRET_ACCESS_KEY=x",
		"PATH=/usr/bin", "NOT_LISTED=1", "SSH_AUTH_SOCK=/s", "Db_Password=p"}
	got := Environ(parent, []string{"OLLAMA_HOST", "GITHUB_TOKEN", "Db_Password"}, "/work")
	want := []string{"HOME=/h", "LANG=en", "LC_ALL=C", "OLLAMA_HOST=h:1", "PATH=/usr/bin", "PWD=/work"}
	if !slices.Equal(got, want) {
		t.Fatalf("Environ:\ngot  %q\nwant %q", got, want)
	}
}

func TestBackoffAndRetries(t *testing.T) {
	if Backoff(1, nil) != 100*time.Millisecond || Backoff(2, nil) != 200*time.Millisecond || Backoff(9, nil) != 2*time.Second {
		t.Fatalf("backoff: %v %v %v", Backoff(1, nil), Backoff(2, nil), Backoff(9, nil))
	}
	for code, n := range map[string]int{CodeCrash: 3, CodeTimeout: 3, CodeMalformed: 3, CodeChecksum: 3,
		CodeLockTimeout: 5, CodeAuditWrite: 3, CodeSpawn: 1, CodeTooLarge: 1, CodeExecutor: 1} {
		if Retried(code) != n {
			t.Errorf("Retried(%s) = %d, want %d", code, Retried(code), n)
		}
	}
}

func TestPresets(t *testing.T) {
	for _, name := range Presets() {
		var args []string
		switch name {
		case "ollama":
			args = []string{"llama3.2"}
		case "generic":
			args = []string{"my-cli", "--quiet"}
		}
		e, err := Preset(name, args)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		e.Name = "x"
		data, err := AddTo(nil, e)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		es, err := Parse(data)
		if err != nil || len(es) != 1 {
			t.Fatalf("%s: %v %v", name, es, err)
		}
		got := es[0]
		if got.Mode != ModePlain || !slices.ContainsFunc(got.Args, func(a string) bool { return strings.Contains(a, "{prompt}") }) {
			t.Errorf("%s: %+v", name, got)
		}
		if name != "generic" && (got.Timeout != 5*time.Minute || !slices.Equal(got.Ping, []string{"--version"}) || got.PingTimeout != PresetPingTimeout) {
			t.Errorf("%s: timeout %v, ping %q within %v", name, got.Timeout, got.Ping, got.PingTimeout)
		}
		// A task is never read as an option: "{prompt}" follows "--", or
		// is the value of a --flag= argument, and is the last argument.
		if name == "generic" {
			continue
		}
		i := slices.IndexFunc(got.Args, func(a string) bool { return strings.Contains(a, "{prompt}") })
		switch a := got.Args[i]; {
		case i != len(got.Args)-1:
			t.Errorf("%s: the prompt is not the last argument: %q", name, got.Args)
		case a == "{prompt}" && (i == 0 || got.Args[i-1] != "--"):
			t.Errorf("%s: the prompt does not follow --, so a task starting with - is an option: %q", name, got.Args)
		case a != "{prompt}" && !(strings.HasPrefix(a, "--") && strings.HasSuffix(a, "={prompt}")):
			t.Errorf("%s: the prompt argument %q is neither after -- nor a --flag= value", name, a)
		}
	}
	if e, _ := Preset("ollama", []string{"llama3.2"}); !slices.Equal(e.Args, []string{"run", "llama3.2", "--", "{prompt}"}) {
		t.Errorf("ollama: %q", e.Args)
	}
	if e, _ := Preset("generic", []string{"cli", "--in={prompt}"}); !slices.Equal(e.Args, []string{"--in={prompt}"}) {
		t.Errorf("generic with {prompt} given: %q", e.Args)
	}
	for name, args := range map[string][]string{"nope": nil, "ollama": nil, "generic": nil, "claude-code": {"extra"}} {
		if _, err := Preset(name, args); !errors.Is(err, fault.ErrInvalid) {
			t.Errorf("%s %q: %v", name, args, err)
		}
	}
}

func TestConcurrencySetting(t *testing.T) {
	v := testvault.New(t)
	if n, err := Concurrency(v); err != nil || n != DefaultConcurrency {
		t.Fatalf("unset: %d %v", n, err)
	}
	toml := filepath.Join(v.Root, "memvault.toml")
	orig, _ := os.ReadFile(toml)
	for text, want := range map[string]int{"[delegate]\nconcurrency = 8\n": 8, "[delegate]\nconcurrency = 2\n": -1, "[delegate]\nconcurrency = 13\n": -1} {
		if err := os.WriteFile(toml, append(append([]byte(nil), orig...), text...), 0o600); err != nil {
			t.Fatal(err)
		}
		v2, err := vault.Open(v.Root)
		if err != nil {
			t.Fatal(err)
		}
		n, err := Concurrency(v2)
		if want < 0 && !errors.Is(err, fault.ErrInvalid) || want > 0 && n != want {
			t.Errorf("%q: %d %v", text, n, err)
		}
	}
}

// SetCapabilities rewrites the list alone, written on one line or over
// several with comments around it, and refuses a table without one or a
// bad name, leaving the file to the caller as it was.
func TestSetCapabilitiesIsByteStable(t *testing.T) {
	const head = "# mine\n[executors.r]\ncommand = \"c\"\n"
	const tail = "\nmode = \"plain\" # kept\n"
	for _, list := range []string{`["summarise"]`, "[\n  \"a\", # first\n  \"b\",\n]"} {
		orig := head + "capabilities = " + list + tail
		got, err := SetCapabilities([]byte(orig), "r", []string{"write", "read", "write"})
		if err != nil {
			t.Fatalf("%q: %v", list, err)
		}
		if want := head + `capabilities = ["read", "write"]` + tail; string(got) != want {
			t.Fatalf("%q:\ngot  %q\nwant %q", list, got, want)
		}
		es, err := Parse(got)
		if err != nil || strings.Join(es[0].Caps(), ",") != "read,write" {
			t.Fatalf("read back %+v %v", es, err)
		}
	}
	if _, err := SetCapabilities([]byte(head), "r", []string{"read"}); !errors.Is(err, fault.ErrInvalid) {
		t.Fatalf("a table without capabilities: %v", err)
	}
	if _, err := SetCapabilities([]byte(head+"capabilities = []\n"), "r", []string{"Read"}); !errors.Is(err, fault.ErrInvalid) {
		t.Fatalf("a bad name: %v", err)
	}
	if _, err := SetCapabilities([]byte(head+"capabilities = []\n"), "s", []string{"read"}); !errors.Is(err, fault.ErrNotFound) {
		t.Fatalf("no such executor: %v", err)
	}
	if _, err := Parse([]byte(head + "capabilities = [\"no way\"]\n")); !errors.Is(err, fault.ErrInvalid) {
		t.Fatalf("a hand-written bad capability: %v", err)
	}
}

// What add, a status change and remove write through Edit is what the
// rest of the process reads at once, without opening the vault again:
// the registry, the summariser and the concurrency named beside it, and
// the executor gone after its removal.
func TestRegistryEditsAreReadAtOnce(t *testing.T) {
	v := testvault.New(t)
	edit := func(subject string, f func([]byte) ([]byte, error)) {
		t.Helper()
		if _, err := v.Update(vault.TxOptions{}, func(tx *vault.Tx) error { return Edit(tx, subject, f) }); err != nil {
			t.Fatal(err)
		}
	}
	edit("executor add r", func(data []byte) ([]byte, error) {
		out, err := AddTo(data, Entry{Name: "r", Command: "/bin/r", TimeoutText: "3s"})
		return append(out, "\n[summarise]\nexecutor = \"r\"\n\n[delegate]\nconcurrency = 7\n"...), err
	})
	if e, err := Pick(v, ""); err != nil || e.Name != "r" || e.Command != "/bin/r" || e.Timeout != 3*time.Second {
		t.Fatalf("after add: %+v %v", e, err)
	}
	if cfg, on, err := Summariser(v); err != nil || !on || cfg.Executor != "r" {
		t.Fatalf("summariser after add: %+v %v %v", cfg, on, err)
	}
	if n, err := Concurrency(v); err != nil || n != 7 {
		t.Fatalf("concurrency after add: %d %v", n, err)
	}
	edit("executor ping r", func(data []byte) ([]byte, error) { return SetStatus(data, "r", StatusInactive, "ping: gone") })
	if _, err := Active(v); !errors.Is(err, fault.ErrNotFound) {
		t.Fatalf("after the status change: %v, want none active", err)
	}
	if _, err := SummaryEntry(v, SummariseConfig{Executor: "r"}); CodeOf(err) != CodeInactive {
		t.Fatalf("summary entry after the status change: %v", err)
	}
	edit("executor remove r", func(data []byte) ([]byte, error) { return RemoveFrom(data, "r") })
	if es, err := List(v); err != nil || len(es) != 0 {
		t.Fatalf("after remove: %+v %v", es, err)
	}
	if _, err := SummaryEntry(v, SummariseConfig{Executor: "r"}); CodeOf(err) != CodeUnregistered {
		t.Fatalf("summary entry after remove: %v", err)
	}
}
