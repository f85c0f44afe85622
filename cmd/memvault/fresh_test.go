package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Heads never behind (issue 34, docs/HEADS.md "Freshness"): after a write
// of the real binary, from the command line, the MCP server or a stop
// hook that recorded memory, no head is stale for long. Each write below
// is followed by a poll of `status --json` and `threads --json` for at
// most freshWithin: the heads it changed are current on disk, with the new
// row, and nothing reports a stale head. The writer returned before the
// refresh ran (the detached worker did it).

// freshWithin is how long a test waits for the heads after a write: the
// promise is a second; the rest is room for a loaded test machine.
const freshWithin = 5 * time.Second

// freshRig is a rig whose memvault refreshes the heads after a write as a
// person's does (TestMain turns it off for the other tests).
type freshRig struct {
	*rig
	env []string
}

func newFreshRig(t *testing.T) *freshRig {
	r := &freshRig{rig: newRig(t, plainMemvault(t)), env: []string{"MEMVAULT_REFRESH=background"}}
	t.Cleanup(r.waitWorker)
	return r
}

// do runs memvault with the rig's refresh setting and returns stdout,
// stderr and whether it exited 0.
func (r *freshRig) do(args ...string) (string, string, bool) {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := r.cmd(ctx, args...)
	cmd.Env = append(cmd.Env, r.env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return stdout.String(), stderr.String(), err == nil
}

func (r *freshRig) must(args ...string) string {
	r.t.Helper()
	out, errOut, ok := r.do(args...)
	if !ok {
		r.t.Fatalf("memvault %s: failed\n%s%s", strings.Join(args, " "), out, errOut)
	}
	return out
}

// staleNow lists what status and threads report stale, "" when nothing.
func (r *freshRig) staleNow() string {
	r.t.Helper()
	var st struct {
		Stale []string `json:"stale_heads"`
	}
	if err := json.Unmarshal([]byte(r.run("status", "--json")), &st); err != nil {
		r.t.Fatalf("status --json: %v", err)
	}
	var raw []map[string]any
	if err := json.Unmarshal([]byte(r.run("threads", "--json")), &raw); err != nil {
		r.t.Fatalf("threads --json: %v", err)
	}
	var bad []string
	bad = append(bad, st.Stale...)
	for _, th := range raw {
		if s, _ := th["head_state"].(string); s != "fresh" {
			bad = append(bad, th["key"].(string)+" "+s)
		}
	}
	return strings.Join(bad, ", ")
}

// waitFresh polls until nothing is stale and every head names holds want,
// and fails after freshWithin; it returns how long it took from since.
func (r *freshRig) waitFresh(what string, since time.Time, want string, heads ...string) time.Duration {
	r.t.Helper()
	deadline := since.Add(freshWithin)
	for {
		stale, missing := r.staleNow(), ""
		for _, h := range heads {
			if data, _ := os.ReadFile(filepath.Join(r.vault, h)); !bytes.Contains(data, []byte(want)) {
				missing += " " + h
			}
		}
		if stale == "" && missing == "" {
			took := time.Since(since)
			r.t.Logf("%s: heads current %s after the write returned", what, took.Round(time.Millisecond))
			return took
		}
		if time.Now().After(deadline) {
			log, _ := r.git("log", "--format=%h %s", "-8")
			r.t.Fatalf("%s: %s after the write, stale: [%s]; without %q:%s\nhook log:\n%s\ngit log:\n%s", what, freshWithin, stale,
				want, missing, r.hookLogTail(0), log)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitWorker waits for the detached worker to end, so that nothing writes
// into the test's folder once it is removed.
func (r *freshRig) waitWorker() {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		var q struct {
			Worker struct {
				Running bool `json:"running"`
			} `json:"worker"`
			Jobs []json.RawMessage `json:"jobs"`
		}
		out, _, ok := r.do("jobs", "--json")
		if ok && json.Unmarshal([]byte(out), &q) == nil && !q.Worker.Running {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (r *freshRig) commitSubjects() []string {
	return strings.Split(strings.TrimSpace(r.mustGit("log", "--format=%s")), "\n")
}

// After a command line write: MEMORY.md, the thread's head and
// CONTINUITY.md hold the new row within a second or so, and status and
// threads report nothing stale; a person's edit to MEMORY.md made right
// after a write is kept beside the new row; twenty writes in a row make a
// few refreshes, not twenty, each named after the write it follows; a
// write that fails, or a MEMVAULT_REFRESH that means nothing, queues and
// starts nothing and leaves the vault as it was.
func TestHeadsNeverBehindCLI(t *testing.T) {
	t.Parallel()
	r := newFreshRig(t)
	r.run("continuity", "init")
	r.run("render")
	all := []string{"MEMORY.md", "CONTINUITY.md", "threads/project/alpha.md"}

	start := time.Now()
	r.must("remember", "--kind", "decision", "--thread", "project:alpha", "use sqlite for the cache")
	r.waitFresh("remember", start, "use sqlite for the cache", all...)
	r.waitWorker() // its commit lands after the files and the ledger
	if s := r.commitSubjects()[0]; !strings.HasPrefix(s, "heads: MEMORY.md") || !strings.Contains(s, "project:alpha after decision: use sq") {
		t.Errorf("the refresh's commit is %q: want it named after what the heads gained", s)
	}

	// decide is a protocol write: CONTINUITY.md in its own commit, the
	// other heads after it.
	start = time.Now()
	r.must("decide", "--thread", "project:alpha", "--decision", "retry webhooks five times", "--rationale", "the provider drops")
	r.waitFresh("decide", start, "retry webhooks five times", all...)

	// A hand edit right after a write is kept, and the row lands beside it.
	r.must("remember", "--kind", "decision", "--thread", "project:alpha", "the cache lives in /var/cache/alpha")
	start = time.Now()
	mem := filepath.Join(r.vault, "MEMORY.md")
	data, err := os.ReadFile(mem)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(mem, append(data, []byte("\nA note of my own, kept by hand.\n")...), 0o600); err != nil {
		t.Fatal(err)
	}
	r.waitFresh("hand edit", start, "the cache lives in /var/cache/alpha", "MEMORY.md")
	if data, _ := os.ReadFile(mem); !bytes.Contains(data, []byte("A note of my own, kept by hand.")) {
		t.Errorf("the hand edit made during the refresh is gone:\n%s", data)
	}

	// A burst.
	before := len(r.commitSubjects())
	burst := time.Now()
	for i := range 20 {
		r.must("remember", "--kind", "fact", "--thread", "project:alpha", "burst row "+string(rune('a'+i)))
	}
	took := time.Since(burst)
	r.waitFresh("burst", time.Now(), "burst row t", all[2]) // from the last write
	r.waitWorker()
	refreshes := 0
	for _, s := range r.commitSubjects()[:len(r.commitSubjects())-before] {
		if strings.HasPrefix(s, "heads: ") || strings.HasPrefix(s, "refresh: ") {
			refreshes++
		}
	}
	// One refresh per settle at most (hooks/afterwrite.go, 200 ms), and a
	// last one after the burst: on a quiet machine, where the 20 writes take
	// about a second, a handful; on a loaded one, where each write takes
	// longer than the settle, more, but never one per write.
	most := min(int(took/(200*time.Millisecond))+2, 19)
	t.Logf("20 writes in %s made %d refreshes (at most %d)", took.Round(time.Millisecond), refreshes, most)
	if refreshes < 1 || refreshes > most {
		t.Errorf("20 writes in %s made %d refreshes: want one or a few, at most %d", took.Round(time.Millisecond), refreshes, most)
	}

	// A write that fails starts nothing; a bad setting is refused first.
	head := r.mustGit("rev-parse", "HEAD")
	if _, _, ok := r.do("remember", "--kind", "no such kind!", "x"); ok {
		t.Fatal("remember with a bad kind succeeded")
	}
	r.env = []string{"MEMVAULT_REFRESH=sometimes"}
	_, errOut, ok := r.do("remember", "--kind", "fact", "not written")
	if ok || !strings.Contains(errOut, "MEMVAULT_REFRESH") || strings.Count(strings.TrimSpace(errOut), "\n") > 1 {
		t.Errorf("MEMVAULT_REFRESH=sometimes: ok=%v, stderr %q: want a short error naming it", ok, errOut)
	}
	if got := r.mustGit("rev-parse", "HEAD"); got != head {
		t.Errorf("a failed write changed the branch: %s → %s", head, got)
	}
	if jobs, _ := os.ReadDir(filepath.Join(r.vault, ".state", "jobs")); len(jobs) != 0 {
		t.Errorf("a failed write queued %d jobs", len(jobs))
	}
}

// After an MCP write tool and after a stop hook whose reply recorded a
// decision, the heads are current within a second or so, CONTINUITY.md
// included.
func TestHeadsNeverBehindMCPAndStop(t *testing.T) {
	t.Parallel()
	r := newFreshRig(t)
	r.run("continuity", "init")
	r.run("render")

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := r.cmd(ctx, "mcp")
	cmd.Env = append(cmd.Env, r.env...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	call := func(req string) string {
		t.Helper()
		if _, err := io.WriteString(stdin, req+"\n"); err != nil {
			t.Fatal(err)
		}
		if !sc.Scan() {
			t.Fatalf("no answer to %s", req)
		}
		return sc.Text()
	}
	call(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	io.WriteString(stdin, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
	start := time.Now()
	ans := call(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"remember","arguments":` +
		`{"kind":"decision","text":"queue the exports nightly","thread":"project:beta"}}}`)
	if strings.Contains(ans, `"isError":true`) || strings.Contains(ans, `"error"`) {
		t.Fatalf("remember over MCP: %s", ans)
	}
	r.waitFresh("mcp remember", start, "queue the exports nightly", "MEMORY.md", "CONTINUITY.md", "threads/project/beta.md")
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("memvault mcp: %v", err)
	}

	// A stop hook whose reply holds a control line.
	hook := func(event, name, session string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		c := r.cmd(ctx, "hook", "claude-code", event)
		c.Env = append(c.Env, r.env...)
		c.Stdin = bytes.NewReader(r.payload(name, session, nil))
		if out, err := c.CombinedOutput(); err != nil {
			t.Fatalf("hook %s: %v\n%s", event, err, out)
		}
	}
	hook("session-start", "SessionStart", "s1")
	r.addCCPrompt("s1", "which queue?", 1)
	hook("prompt-submit", "UserPromptSubmit", "s1")
	r.addCCReply("s1", "Settled.\nDECISION: use the redis queue for webhooks\n", 2)
	start = time.Now()
	hook("stop", "Stop", "s1")
	r.waitFresh("stop", start, "use the redis queue for webhooks", "MEMORY.md", "CONTINUITY.md")
}
