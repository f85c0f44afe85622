package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/gofrs/flock"
	"github.com/rogpeppe/go-internal/testscript"

	"github.com/memvault/memvault/cmd/memvault/internal/cli"
	"github.com/memvault/memvault/index"
	"github.com/memvault/memvault/vault"
)

func TestMain(m *testing.M) {
	// Under -race every memvault the tests start is this race-built
	// binary, and the race runtime sleeps a second before each process
	// exits (GORACE atexit_sleep_ms, default 1000) so that late reports
	// get out: most of the race suite's time was spent in that sleep. A
	// race is still reported, and still fails the command with exit 66.
	if os.Getenv("GORACE") == "" {
		os.Setenv("GORACE", "atexit_sleep_ms=0")
	}
	// A memvault the tests start leaves the heads as a write left them,
	// as before the refresh after a write (hooks/afterwrite.go): no
	// detached worker commits behind a test's back or writes into a
	// folder it removes. The tests of that refresh turn it on.
	if os.Getenv("MEMVAULT_REFRESH") == "" {
		os.Setenv("MEMVAULT_REFRESH", "off")
	}
	// Likewise a hook runs its queued jobs (a session end's summary,
	// refresh and commit) itself, so that a test reads them when the hook
	// returns; hooks_worker.txtar tests the detached worker's way.
	if os.Getenv("MEMVAULT_JOBS") == "" {
		os.Setenv("MEMVAULT_JOBS", "inline")
	}
	testscript.Main(cleanupM{m}, map[string]func(){
		"memvault": func() { os.Exit(cli.Main(os.Args[1:])) },
		"rsswrap":  rsswrap,
	})
}

// rsswrap runs its arguments as a command and writes the command's peak
// resident memory, in KiB, to the file MEMVAULT_RSS_OUT names. A child's
// ru_maxrss starts at its parent's high-water mark (Linux carries it over
// at exec), so a child of this large test process cannot be measured
// directly; this small wrapper process can.
func rsswrap() {
	cmd := exec.Command(os.Args[1], os.Args[2:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	err := cmd.Run()
	if cmd.ProcessState == nil {
		fmt.Fprintln(os.Stderr, "rsswrap:", err)
		os.Exit(127)
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		os.WriteFile(os.Getenv("MEMVAULT_RSS_OUT"), []byte(fmt.Sprint(ru.Maxrss)), 0o600)
	}
	os.Exit(cmd.ProcessState.ExitCode())
}

// -update rewrites the golden files inside the scripts from what the
// commands print now: review the diff before committing it.
var update = flag.Bool("update", false, "rewrite golden files in testdata/script")

func TestScripts(t *testing.T) {
	t.Parallel()
	// The scripts test behaviour: their memvault is plainMemvault
	// (binary_test.go), first on each script's PATH.
	bin := filepath.Dir(plainMemvault(t))
	testscript.Run(t, testscript.Params{
		Dir:                 filepath.Join("testdata", "script"),
		UpdateScripts:       *update,
		RequireExplicitExec: false,
		Setup: func(env *testscript.Env) error {
			env.Setenv("PATH", bin+string(filepath.ListSeparator)+env.Getenv("PATH"))
			return setupScript(env)
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"snapshot":  cmdSnapshot,
			"unchanged": cmdUnchanged,
			"tamper":    cmdTamper,
			"lines":     cmdLines,
			"lockvault": cmdLockVault,
			"normids":   cmdNormIDs,
			"context":   cmdContext,
			"modes":     cmdModes,
			// oldmapping DIR marks an index as built with mapping version 0.
			"oldmapping": func(ts *testscript.TestScript, neg bool, args []string) {
				ix, err := index.Open(ts.MkAbs(args[0]), false, time.Second)
				ts.Check(err)
				ix.Meta.Version = 0
				ts.Check(ix.SaveMeta())
				ts.Check(ix.Close())
			},
		},
		Condition: func(cond string) (bool, error) {
			if cond == "git" {
				_, err := exec.LookPath("git")
				return err == nil, nil
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
	})
}

// makeHome makes a private HOME whose .gitconfig gives git an identity and
// branch main, as on a person's machine.
func makeHome(home string) error {
	if err := os.MkdirAll(home, 0o700); err != nil {
		return err
	}
	gitconfig := "[user]\n\tname = Test Person\n\temail = person@example.com\n[init]\n\tdefaultBranch = main\n"
	return os.WriteFile(filepath.Join(home, ".gitconfig"), []byte(gitconfig), 0o600)
}

// setupScript gives every script a private HOME with a git identity, so that
// scripts can commit by hand with the git CLI and nothing touches the real
// HOME or the machine's git configuration.
func setupScript(env *testscript.Env) error {
	home := filepath.Join(env.WorkDir, "home")
	if err := makeHome(home); err != nil {
		return err
	}
	env.Setenv("HOME", home)
	env.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	env.Setenv("MEMVAULT_LOCK_TIMEOUT", "30s")
	env.Setenv("MEMVAULT_REFRESH", "off") // as TestMain says; a script turns it on with env
	env.Setenv("MEMVAULT_JOBS", "inline") // likewise
	env.Setenv("TZ", "UTC")
	env.Setenv("GORACE", os.Getenv("GORACE")) // see TestMain
	fixtures, err := filepath.Abs(filepath.Join("..", "..", "fixtures", "transcripts"))
	if err != nil {
		return err
	}
	env.Setenv("FIXTURES", fixtures)
	hooksDir, err := filepath.Abs(filepath.Join("..", "..", "fixtures", "hooks"))
	if err != nil {
		return err
	}
	env.Setenv("HOOKS", hooksDir)
	return nil
}

// vaultDigest hashes every file of the vault that is content or git state,
// skipping the derived folders (.state, .locks, .logs, .index), which may
// legitimately change when a command fails.
func vaultDigest(root string) (string, error) {
	var lines []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		switch rel {
		case ".state", ".locks", ".logs", ".index":
			return filepath.SkipDir
		}
		if d.IsDir() {
			lines = append(lines, rel+"/")
			return nil
		}
		if d.Type()&fs.ModeSymlink != 0 { // a link is its target, never followed
			target, err := os.Readlink(p)
			lines = append(lines, rel+" -> "+target)
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		info, _ := d.Info()
		lines = append(lines, fmt.Sprintf("%s %o %x", rel, info.Mode().Perm(), sum[:8]))
		return nil
	})
	sort.Strings(lines)
	sum := sha256.Sum256([]byte(strings.Join(lines, "\n")))
	return hex.EncodeToString(sum[:]), err
}

// snapshot NAME [DIR] records the state of the vault (default .memory).
func cmdSnapshot(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 1 || len(args) > 2 {
		ts.Fatalf("usage: snapshot NAME [VAULT]")
	}
	dir := ".memory"
	if len(args) == 2 {
		dir = args[1]
	}
	d, err := vaultDigest(ts.MkAbs(dir))
	ts.Check(err)
	ts.Setenv("SNAPSHOT_"+args[0], d)
}

// unchanged NAME [DIR] fails unless the vault is exactly as snapshot NAME
// recorded it: same files, same bytes, same modes, same git objects and refs.
func cmdUnchanged(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 1 || len(args) > 2 {
		ts.Fatalf("usage: unchanged NAME [VAULT]")
	}
	dir := ".memory"
	if len(args) == 2 {
		dir = args[1]
	}
	d, err := vaultDigest(ts.MkAbs(dir))
	ts.Check(err)
	same := d == ts.Getenv("SNAPSHOT_"+args[0])
	if same == neg {
		if neg {
			ts.Fatalf("vault unchanged since snapshot %s", args[0])
		}
		ts.Fatalf("vault changed since snapshot %s", args[0])
	}
}

// tamper FILE LINE flips one byte inside the text of line LINE of FILE,
// the way a careless hand edit or disk corruption would.
func cmdTamper(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: tamper FILE LINE")
	}
	p := ts.MkAbs(args[0])
	data, err := os.ReadFile(p)
	ts.Check(err)
	lines := strings.SplitAfter(string(data), "\n")
	var n int
	fmt.Sscan(args[1], &n)
	if n < 1 || n > len(lines) {
		ts.Fatalf("tamper: no line %d", n)
	}
	l := lines[n-1]
	i := strings.Index(l, `"text":"`)
	if i < 0 {
		ts.Fatalf("tamper: line %d has no text", n)
	}
	b := []byte(l)
	b[i+8] ^= 0x01
	lines[n-1] = string(b)
	ts.Check(os.WriteFile(p, []byte(strings.Join(lines, "")), 0o600))
}

// context [-max N] FILE writes the context the last command printed to
// FILE: a hook's additionalContext when its stdout is JSON, else the text
// itself, without the final newline. With -max it fails when the context
// is longer than N characters.
func cmdContext(ts *testscript.TestScript, neg bool, args []string) {
	limit := -1
	if len(args) == 3 && args[0] == "-max" {
		_, err := fmt.Sscan(args[1], &limit)
		ts.Check(err)
		args = args[2:]
	}
	if neg || len(args) != 1 {
		ts.Fatalf("usage: context [-max N] FILE")
	}
	out := ts.ReadFile("stdout")
	text := strings.TrimSuffix(out, "\n")
	var hook struct {
		Out struct {
			Context string `json:"additionalContext"`
		} `json:"hookSpecificOutput"`
	}
	if strings.HasPrefix(out, "{") {
		ts.Check(json.Unmarshal([]byte(out), &hook))
		text = hook.Out.Context
	}
	if n := utf8.RuneCountInString(text); limit >= 0 && n > limit {
		ts.Fatalf("the context has %d characters, over %d", n, limit)
	}
	ts.Check(os.WriteFile(ts.MkAbs(args[0]), []byte(text), 0o600))
}

// lines FILE N fails unless FILE has exactly N newline-terminated lines.
func cmdLines(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: lines FILE N")
	}
	data, err := os.ReadFile(ts.MkAbs(args[0]))
	ts.Check(err)
	got := fmt.Sprint(strings.Count(string(data), "\n"))
	if (got == args[1]) == neg {
		ts.Fatalf("%s has %s lines, want %s%s", args[0], got, map[bool]string{true: "not ", false: ""}[neg], args[1])
	}
}

// lockvault VAULT takes the vault lock the way another memvault process
// would and writes a lease naming it (this process: $HOLDER_PID, command
// holdlock, agent holder, session s-hold, since now); the lock is held until
// "lockvault -release VAULT" or the end of the script. -stale writes a lease
// naming a process that does not hold the lock (pid 4242 on testhost), as a
// killed holder leaves it; -tx holds the lock inside a real transaction of
// the command render, whose lease memvault writes itself.
func cmdLockVault(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 1 || len(args) > 2 || len(args) == 2 && !slices.Contains([]string{"-release", "-stale", "-tx"}, args[0]) {
		ts.Fatalf("usage: lockvault [-release|-stale|-tx] VAULT")
	}
	mode := ""
	if len(args) == 2 {
		mode = args[0]
	}
	root := ts.MkAbs(args[len(args)-1])
	key := "lock:" + root
	heldMu.Lock()
	defer heldMu.Unlock()
	if mode == "-release" {
		if release, ok := heldLocks[key]; ok {
			release()
			delete(heldLocks, key)
		}
		return
	}
	ts.Setenv("HOLDER_PID", strconv.Itoa(os.Getpid()))
	var release func()
	if mode == "-tx" {
		v, err := vault.Open(root)
		ts.Check(err)
		held, done, finished := make(chan struct{}), make(chan struct{}), make(chan error, 1)
		go func() {
			_, err := v.Update(vault.TxOptions{Command: "render", LockTimeout: 10 * time.Second}, func(*vault.Tx) error {
				close(held)
				<-done
				return nil
			})
			finished <- err
		}()
		select {
		case <-held:
		case err := <-finished:
			ts.Fatalf("lockvault -tx: %v", err)
		}
		release = func() {
			close(done)
			<-finished
		}
	} else {
		fl := flock.New(filepath.Join(root, ".locks", "vault.lock"))
		ts.Check(fl.Lock())
		release = func() { fl.Unlock() }
		host, _ := os.Hostname()
		lease := fmt.Sprintf(`{"pid":%d,"host":%q,"agent":"holder","session":"s-hold","command":"holdlock","since":%q}`,
			os.Getpid(), host, time.Now().UTC().Format(time.RFC3339Nano))
		if mode == "-stale" {
			lease = `{"pid":4242,"host":"testhost","agent":"holder","session":"s-hold","command":"holdlock","since":"2026-01-01T00:00:00Z"}`
		}
		ts.Check(os.WriteFile(filepath.Join(root, ".locks", "vault.lease.json"), []byte(lease), 0o600))
	}
	heldLocks[key] = release
	ts.Defer(func() {
		heldMu.Lock()
		defer heldMu.Unlock()
		if release, ok := heldLocks[key]; ok {
			release()
			delete(heldLocks, key)
		}
	})
}

var (
	heldMu    sync.Mutex
	heldLocks = map[string]func(){}
)

// normids IN OUT copies IN to OUT with everything that differs from run to
// run replaced by stable placeholders: event ids become E1, E2… and node ids
// N1, N2… in order of first appearance, hashes H, timestamps TS (except the
// fixtures' own, of fixtureDay) and ledger segment names SEG. Golden files then compare structure and content.
func cmdNormIDs(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: normids IN OUT")
	}
	data := ts.ReadFile(args[0])
	names := map[string]string{}
	counts := map[byte]int{}
	data = idRE.ReplaceAllStringFunc(data, func(id string) string {
		if n, ok := names[id]; ok {
			return n
		}
		counts[id[0]]++
		n := fmt.Sprintf("%c%d", id[0]-'a'+'A', counts[id[0]])
		names[id] = n
		return n
	})
	data = hashRE.ReplaceAllString(data, "H")
	data = segRE.ReplaceAllString(data, "ledger/SEG.jsonl")
	data = tsRE.ReplaceAllStringFunc(data, func(t string) string {
		if strings.HasPrefix(t, fixtureDay) {
			return t // from a transcript fixture: stable
		}
		return "TS"
	})
	ts.Check(os.WriteFile(ts.MkAbs(args[1]), []byte(data), 0o600))
}

// fixtureDay is the date of the messages in the scripts' transcript fixtures.
const fixtureDay = "2020-01-15"

var (
	idRE   = regexp.MustCompile(`\b[enm]_[0-9a-z]{26}\b`)
	hashRE = regexp.MustCompile(`\b[0-9a-f]{64}\b|\b[0-9a-f]{40}\b`)
	segRE  = regexp.MustCompile(`ledger/\d{4}/\d\d/\d\d(-\d+)?\.jsonl`)
	tsRE   = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z`)
)
