package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestEveryCommandPrintsJSON runs every command that takes --json, with
// --json, on a vault that has something of each kind, and holds its
// stdout to JSON that parses: one document, or one per line. A command
// added without a step here fails the test, so none is left out.
func TestEveryCommandPrintsJSON(t *testing.T) {
	isolate(t)
	t.Setenv("EDITOR", "true")
	t.Setenv("VISUAL", "")
	dir := t.TempDir()
	vaultDir := filepath.Join(dir, ".memory")
	file := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	messages := file("generic.jsonl", `{"id":"m1","ts":"2026-11-24T08:00:00Z","role":"user","speaker":"user","text":"import the orders table"}`+"\n")
	summary := file("summary.md", "the orders table was imported\n")
	idPattern := regexp.MustCompile(`[en]_[0-9a-z]{26}`)
	ids := map[string]string{} // what a step printed, for the steps after it
	run := func(path string, args ...string) {
		t.Helper()
		for i, a := range args {
			if strings.HasPrefix(a, "$") {
				args[i] = ids[a[1:]]
			}
		}
		line := append(append([]string{"--vault", vaultDir}, strings.Fields(path)...), append(args, "--json")...)
		code, out, errOut := runCLI(t, line...)
		if code != 0 {
			t.Fatalf("memvault %s: exit %d\n%s", strings.Join(line, " "), code, errOut)
		}
		if !parsesAsJSON(out) {
			t.Errorf("memvault %s: stdout is not JSON:\n%s", strings.Join(line, " "), out)
		}
		ids[path] = idPattern.FindString(out)
	}
	done := map[string]bool{}
	step := func(path string, args ...string) {
		t.Helper()
		run(path, args...)
		done[path] = true
	}

	step("init")
	step("remember", "the deploy key rotates on Fridays")
	ids["fact"] = ids["remember"]
	step("remember", "--kind", "decision", "--thread", "project:shop", "use SQLite for the index")
	step("supersede", "$remember", "use Bleve for the index")
	step("retract", "$fact", "--why", "it rotates on Mondays")
	step("commitment open", "--thread", "project:shop", "ship the installer")
	step("commitment close", "$commitment open", "--note", "shipped")
	ids["about"] = `{"id":"` + ids["commitment open"] + `"}`
	ids["reflection"] = `{"text":"the installer took two tries","links":["` + ids["commitment open"] + `"]}`
	step("claim", "--thread", "project:shop", "commitment.closed", "$about")
	step("reflect", "--thread", "project:shop", "$reflection")
	step("commitment show", "$commitment open")
	step("transcript append", "--session", "s1", "--role", "user", "what index do we use?")
	step("transcript append", "--session", "s1", "--role", "assistant", "Bleve, with no cgo")
	step("transcript import", "--session", "s2", "--format", "generic", messages)
	step("transcript show", "--session", "s1")
	step("sessions")
	step("summarize", "--session", "s1")
	ids["node"] = ids["summarize"]
	step("compact", "--session", "s2", "--file", summary)
	step("condense")
	step("nodes")
	step("expand", "$node")
	step("recall", "index")
	step("status")
	step("ledger")
	step("replay", "--last", "5")
	step("metrics")
	step("export", "--thread", "project:shop")
	exported := filepath.Join(dir, "shop.json")
	step("export", "--thread", "project:shop", "--format", "json", "-o", exported)
	step("import", exported)
	step("log")
	step("threads")
	step("threads show", "project:shop")
	step("render", "--all-threads")
	// a conflict for resolve: stray conflict markers in a head a refresh
	// then wants to change
	head := filepath.Join(vaultDir, "threads", "project", "shop.md")
	f, err := os.OpenFile(head, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("<<<<<<< mine\nx\n=======\ny\n>>>>>>> theirs\n")
	f.Close()
	step("remember", "--thread", "project:shop", "the orders table has 2M rows")
	step("refresh", "--on", "session-end")
	step("resolve", "--theirs", "project:shop")
	step("edit", "MEMORY.md")
	step("goal", "ship the installer")
	step("next", "write the migration")
	step("done", "1")
	step("learn", "--error", "the deploy failed", "--prevention", "rotate the key first")
	step("decide", "--decision", "use WAL", "--rationale", "concurrent readers")
	for _, sub := range []string{"init", "status", "learnings", "decisions", "audit", "index", "budget"} {
		step("continuity " + sub)
	}
	step("context")
	step("verify")
	step("repair")
	step("reindex")
	step("policy set", "decision", "cli,mcp")
	step("policy show")
	// cat, in plain mode, answers with the prompt it is given
	step("executor add", "echo", "--plain", "cat")
	step("executor list")
	step("executor show", "echo")
	step("executor ping", "echo")
	step("delegate", "--executor", "echo", "--global", "read the parser")
	step("audit")
	step("audit replay")
	step("jobs")
	step("jobs run")
	step("executor remove", "echo")
	step("gc")
	step("doctor")
	step("install", "claude-code", "--dry-run")
	step("uninstall", "claude-code", "--dry-run")
	step("version")
	if _, err := exec.LookPath("git"); err == nil {
		remote := filepath.Join(dir, "remote.git")
		if out, err := exec.Command("git", "clone", "-q", "--bare", vaultDir, remote).CombinedOutput(); err != nil {
			t.Fatalf("git clone --bare: %v\n%s", err, out)
		}
		step("sync", remote)
	} else {
		done["sync"] = true // its JSON is checked where git is (CI has it)
	}

	cmds := everyCommand()
	for _, path := range Commands() {
		if lookupFlag(cmds[path].Flags, "json") != nil && !done[path] {
			t.Errorf("memvault %s takes --json and has no step here: add one", path)
		}
	}
}

// parsesAsJSON reports whether out is one JSON document, or one per line.
func parsesAsJSON(out string) bool {
	if strings.TrimSpace(out) == "" {
		return false
	}
	if json.Valid([]byte(out)) {
		return true
	}
	for _, line := range bytes.Split(bytes.TrimSpace([]byte(out)), []byte("\n")) {
		if !json.Valid(line) {
			return false
		}
	}
	return true
}
