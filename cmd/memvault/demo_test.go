package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestDemo runs the README's first command, `bash fixtures/demo.sh`, as a
// new user would (it builds memvault with CGO_ENABLED=0 and plays a Claude
// Code session through the hooks), and checks that what it shows is there:
// the remembered fact in the context session start injects, MEMORY.md with
// the session's decision, a recall hit, and git log subjects a person can
// read. It also checks that the demo leaves nothing behind: not its
// temporary folder, not a file in the repository.
func TestDemo(t *testing.T) {
	t.Parallel()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash not installed")
	}
	repo, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	before := rootEntries(t, repo)
	tmp := t.TempDir()
	cmd := exec.Command(bash, filepath.Join("fixtures", "demo.sh"))
	cmd.Dir = repo
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	out, err := cmd.CombinedOutput()
	text := string(out)
	if err != nil {
		t.Fatalf("bash fixtures/demo.sh: %v\n%s", err, text)
	}
	fail := func(format string, args ...any) {
		t.Helper()
		t.Errorf(format, args...)
	}
	defer func() {
		if t.Failed() {
			t.Logf("the demo's output:\n%s", text)
		}
	}()

	steps := demoSteps(text)
	step := func(n string) string {
		s, ok := steps[n]
		if !ok {
			fail("the demo has no step %s", n)
		}
		return s
	}

	// 5: session start injects the context, holding a fact remembered
	// before the session, and the usage note with the control lines.
	start := step("5")
	if !strings.Contains(start, "$ memvault hook claude-code session-start < SessionStart payload") {
		fail("step 5 does not run the session-start hook")
	}
	for _, want := range []string{
		"    - the deploy key rotates on Fridays (`e_", // MEMORY.md's note, injected
		"    - use Bleve for the search index: no cgo", // the thread head's decision
		"    DECISION: what was decided",               // the usage note
	} {
		if !strings.Contains(start, want) {
			fail("the injected context (step 5) lacks %q", want)
		}
	}
	if strings.Contains(start, `\n`) || strings.Contains(start, `"additionalContext"`) {
		fail("the injected context (step 5) is shown as raw JSON, not as text")
	}

	// 7: the reply's control lines are committed at the end of the turn.
	if !strings.Contains(step("7"), "    commit: decision: retry Stripe webhooks 5 times") {
		fail("the stop hook (step 7) did not commit the reply's decision")
	}
	// 8: after the compaction the decision is injected again.
	if !strings.Contains(step("8"), "- retry Stripe webhooks 5 times (because Stripe retries for 3 days itself)") {
		fail("the context after compaction (step 8) lacks the session's decision")
	}

	// 10: MEMORY.md holds what the session decided and promised.
	memory := step("10")
	for _, want := range []string{
		"$ cat .memory/MEMORY.md",
		"# MEMORY",
		"## Decisions",
		"- retry Stripe webhooks 5 times (because Stripe retries for 3 days itself) (project:shop, `e_",
		"- [ ] fix the webhook before Friday's key rotation (project:shop, `e_",
		"- the deploy key rotates on Fridays (`e_",
	} {
		if !strings.Contains(memory, want) {
			fail("MEMORY.md (step 10) lacks %q", want)
		}
	}
	if !strings.Contains(step("11"), "# project:shop") || !strings.Contains(step("12"), "# CONTINUITY") {
		fail("the thread head (step 11) or CONTINUITY.md (step 12) is not shown")
	}

	// 13: the hand edit is committed as the person's.
	if !strings.Contains(step("13"), "(your uncommitted edit was committed first)") {
		fail("the refresh after the hand edit (step 13) did not commit it first")
	}

	// 14: recall finds the decision among the rows, and the hand edit.
	recall := step("14")
	if !regexp.MustCompile(`(?m)^structured\n  e_[0-9a-z]+  decision  project:shop  ledger/\S+\n      retry Stripe webhooks 5 times`).MatchString(recall) {
		fail("recall (step 14) does not list the decision first among the rows")
	}
	if !strings.Contains(recall, "Dana owns the Stripe account") {
		fail("recall (step 14) does not find the hand-written section")
	}

	// 15: git log reads as what was remembered, without session ids or
	// bookkeeping: the session is its decision, its compaction, its done
	// and its end, named by its summary (docs/HOOKS.md, "Commits").
	history := step("15")
	_, log, _ := strings.Cut(history, "$ git -C .memory log")
	log, _, _ = strings.Cut(log, "\n$ ")
	for _, bad := range []string{"session.started", "continuity.session", "transcript: ", "bookkeeping: "} {
		if strings.Contains(log, bad) {
			fail("git log (step 15) holds a bookkeeping subject %q", bad)
		}
	}
	for _, want := range []string{
		"init: memvault vault",
		"fact: the deploy key rotates on Fridays",
		"session: Stripe webhooks fail every Friday",
		"decision: retry Stripe webhooks 5 times",
		"done: add a test for the retry cap",
		"head.edited: hand edit of MEMORY.md",
	} {
		if !strings.Contains(log, want) {
			fail("git log (step 15) lacks the subject %q", want)
		}
	}
	if strings.Contains(log, "5b0e7c2a") {
		fail("git log (step 15) names the session's id in a subject")
	}
	if !strings.Contains(history, "ok: ") {
		fail("memvault verify (step 15) did not say ok")
	}
	// the project's repository ignores the vault
	_, status, _ := strings.Cut(history, "$ git status --short\n")
	if strings.Contains(status, ".memory") {
		fail("git status of the project shows the vault: %s", status)
	}

	// Nothing is left behind: the temporary folder is gone, and the
	// repository has no new file (the binary is built in the temp folder).
	m := regexp.MustCompile(`the demo's folder (\S+) is removed now`).FindStringSubmatch(text)
	if m == nil {
		fail("the demo does not name its folder")
	} else if _, err := os.Stat(m[1]); !os.IsNotExist(err) {
		fail("the demo left its folder %s behind (%v)", m[1], err)
	}
	if left, _ := os.ReadDir(tmp); len(left) > 0 {
		fail("the demo left %d entries in TMPDIR", len(left))
	}
	if after := rootEntries(t, repo); !slices.Equal(before, after) {
		fail("the demo changed the repository's top folder: %v, then %v", before, after)
	}
}

// demoSteps splits the demo's output at its step headings
// ("======== 5. … ========") into the text of each step, by number.
func demoSteps(text string) map[string]string {
	steps := map[string]string{}
	re := regexp.MustCompile(`(?m)^======== (\d+)\. .* ========$`)
	idx := re.FindAllStringSubmatchIndex(text, -1)
	for i, m := range idx {
		end := len(text)
		if i+1 < len(idx) {
			end = idx[i+1][0]
		}
		steps[text[m[2]:m[3]]] = text[m[1]:end]
	}
	return steps
}

// rootEntries lists the names in the repository's top folder.
func rootEntries(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}
