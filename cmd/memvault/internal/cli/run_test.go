package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/testvault"
)

// The commands run directly: options and an env made by hand, a vault in
// t.TempDir(), and no urfave/cli. What the command line adds (flags into
// options, the vault opened, the lock and the commit) is the root's, and
// the testscripts cover it end to end.

// testRun is an env on buffers for the vault v, as the root builds one.
type testRun struct {
	env
	out, err *bytes.Buffer
}

func newTestRun(t *testing.T, v *vault.Vault, name, stdin string) testRun {
	t.Helper()
	var out, errb bytes.Buffer
	return testRun{env: env{stdin: strings.NewReader(stdin), stdout: &out, stderr: &errb, name: name,
		vaultDir: v.Root, userUmask: -1}, out: &out, err: &errb}
}

// testVault is a new vault, with the process kept away from the person's
// git configuration and MEMVAULT_* variables.
func testVault(t *testing.T) *vault.Vault {
	t.Helper()
	isolate(t)
	return testvault.New(t)
}

// remember records text as the given kind through remember's own
// preparation and the root's commit, and returns the event's id.
func remember(t *testing.T, v *vault.Vault, kind string, text ...string) string {
	t.Helper()
	r := newTestRun(t, v, "remember", "")
	opts := rememberOptions{kind: kind, text: text, rowThreadOptions: rowThreadOptions{global: true}}
	work, err := prepareRemember(context.Background(), opts, r.env, v)
	if err != nil {
		t.Fatalf("remember %q: %v", text, err)
	}
	if err := commitWork(r.env, v, opts.writeOptions, work); err != nil {
		t.Fatalf("remember %q: %v", text, err)
	}
	id := strings.TrimSpace(r.out.String())
	if !regexp.MustCompile(`^e_[0-9a-z]{26}$`).MatchString(id) {
		t.Fatalf("remember printed %q, want the event's id", r.out)
	}
	return id
}

func TestRunRemember(t *testing.T) {
	v := testVault(t)
	id := remember(t, v, "decision", "use", "WAL", "for", "the", "ledger")
	st, err := v.LoadState()
	if err != nil {
		t.Fatal(err)
	}
	row := st.Get(id)
	if row == nil || row.Kind != "decision" || row.Text != "use WAL for the ledger" || row.Thread != "" {
		t.Fatalf("row %s: %+v", id, row)
	}

	// "-" reads the text from stdin; a kind remember does not take is a
	// usage error before anything is written.
	r := newTestRun(t, v, "remember", "from stdin\n")
	work, err := prepareRemember(context.Background(), rememberOptions{kind: "fact", text: []string{"-"},
		rowThreadOptions: rowThreadOptions{thread: "project:shop"}}, r.env, v)
	if err != nil {
		t.Fatal(err)
	}
	if err := commitWork(r.env, v, writeOptions{json: true}, work); err != nil {
		t.Fatal(err)
	}
	var evs []vault.Event
	if err := json.Unmarshal(r.out.Bytes(), &evs); err != nil || len(evs) != 1 || evs[0].Text != "from stdin" || evs[0].Thread != "project:shop" {
		t.Fatalf("--json: %v %s", err, r.out)
	}
	_, err = prepareRemember(context.Background(), rememberOptions{kind: "factt", text: []string{"x"}}, r.env, v)
	var usage *usageError
	if !errors.As(err, &usage) || !strings.Contains(err.Error(), "did you mean fact?") {
		t.Fatalf("kind factt: %v", err)
	}
}

func TestRunLedger(t *testing.T) {
	v := testVault(t)
	first := remember(t, v, "fact", "the build uses go 1.26")
	second := remember(t, v, "decision", "keep the CLI thin")

	r := newTestRun(t, v, "ledger", "")
	if err := runLedger(context.Background(), ledgerOptions{kind: "decision", json: true}, r.env, v); err != nil {
		t.Fatal(err)
	}
	var rows []struct {
		ID, Kind, Text string
	}
	if err := json.Unmarshal(r.out.Bytes(), &rows); err != nil || len(rows) != 1 || rows[0].ID != second {
		t.Fatalf("--kind decision --json: %v %s", err, r.out)
	}

	// --limit 1 shows the newest, and says so on stderr.
	r = newTestRun(t, v, "ledger", "")
	opts := ledgerOptions{limitOptions: limitOptions{limit: 1, limitSet: true}}
	if err := runLedger(context.Background(), opts, r.env, v); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(r.out.String(), second) || strings.Contains(r.out.String(), first) {
		t.Errorf("--limit 1 printed %q", r.out)
	}
	if want := "showing the newest 1 of "; !strings.Contains(r.err.String(), want) {
		t.Errorf("--limit 1: stderr %q lacks %q", r.err, want)
	}

	// An id prefix picks one event; a negative limit is a usage error.
	r = newTestRun(t, v, "ledger", "")
	if err := runLedger(context.Background(), ledgerOptions{ids: []string{first[:20]}}, r.env, v); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(r.out.String(), "the build uses go 1.26") || strings.Contains(r.out.String(), second) {
		t.Errorf("ledger %s printed %q", first[:20], r.out)
	}
	err := runLedger(context.Background(), ledgerOptions{limitOptions: limitOptions{limit: -1, limitSet: true}}, r.env, v)
	if err == nil || err.Error() != "ledger: --limit must be 0 (all) or more" {
		t.Errorf("--limit -1: %v", err)
	}
}

func TestRunRecall(t *testing.T) {
	v := testVault(t)
	id := remember(t, v, "decision", "the ledger is written with fsync before rename")
	remember(t, v, "fact", "lunch is at noon")

	r := newTestRun(t, v, "recall", "")
	opts := recallOptions{limit: 5, allThreads: true, json: true, query: []string{"fsync", "rename"}}
	if err := runRecall(context.Background(), opts, r.env, v); err != nil {
		t.Fatal(err)
	}
	var hits []struct{ ID, Text string }
	if err := json.Unmarshal(r.out.Bytes(), &hits); err != nil || len(hits) == 0 || hits[0].ID != id {
		t.Fatalf("recall fsync rename: %v %s", err, r.out)
	}
	for _, h := range hits {
		if strings.Contains(h.Text, "lunch") {
			t.Errorf("recall fsync rename found %q", h.Text)
		}
	}

	// Nothing found is said on stderr; a limit under 1 is refused.
	r = newTestRun(t, v, "recall", "")
	if err := runRecall(context.Background(), recallOptions{limit: 5, allThreads: true, query: []string{"zeppelin"}}, r.env, v); err != nil {
		t.Fatal(err)
	}
	if r.out.Len() != 0 || !strings.Contains(r.err.String(), "memvault: nothing found") {
		t.Errorf("recall zeppelin: stdout %q, stderr %q", r.out, r.err)
	}
	if err := runRecall(context.Background(), recallOptions{query: []string{"x"}}, r.env, v); err == nil || !strings.Contains(err.Error(), "--limit must be 1 or more") {
		t.Errorf("--limit 0: %v", err)
	}
}

func TestRunStatus(t *testing.T) {
	v := testVault(t)
	remember(t, v, "fact", "one")
	remember(t, v, "fact", "two")
	r := newTestRun(t, v, "status", "")
	if err := runStatus(context.Background(), statusOptions{jsonOnly{json: true}}, r.env, v); err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Agent  string `json:"agent"`
		Events int    `json:"events"`
	}
	if err := json.Unmarshal(r.out.Bytes(), &rep); err != nil || rep.Events < 2 || rep.Agent != v.Config.Agent {
		t.Fatalf("status --json: %v %s", err, r.out)
	}

	// The env's agent (--agent) is the one reported; a bad one is refused.
	r = newTestRun(t, v, "status", "")
	r.agent = "reviewer"
	if err := runStatus(context.Background(), statusOptions{}, r.env, v); err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^agent: +reviewer$`).MatchString(r.out.String()) {
		t.Errorf("status with agent reviewer:\n%s", r.out)
	}
	r.agent = "no such/agent"
	if err := runStatus(context.Background(), statusOptions{}, r.env, v); !errors.Is(err, vault.ErrInvalid) {
		t.Errorf("agent %q: %v", r.agent, err)
	}
}

func TestRunNextAndDone(t *testing.T) {
	v := testVault(t)
	next := continuityWrite(runNext)
	done := continuityWrite(runDone)
	global := rowThreadOptions{global: true}
	for _, text := range []string{"write the parser", "test the parser"} {
		r := newTestRun(t, v, "next", "")
		if err := next(context.Background(), nextOptions{rowThreadOptions: global, text: strings.Fields(text)}, r.env); err != nil {
			t.Fatalf("next %s: %v", text, err)
		}
	}
	status := func() string {
		r := newTestRun(t, v, "status", "")
		if err := runContinuityStatus(context.Background(), continuityStatusOptions{}, r.env, v); err != nil {
			t.Fatal(err)
		}
		return r.out.String()
	}
	if s := status(); !strings.Contains(s, "task:       write the parser") || !strings.Contains(s, "next:       2. test the parser") {
		t.Fatalf("after two next:\n%s", s)
	}

	// done 1 takes the current task off the queue; --json prints the result.
	r := newTestRun(t, v, "done", "")
	opts := doneOptions{rowThreadOptions: global, text: []string{"1"}}
	opts.json = true
	if err := done(context.Background(), opts, r.env); err != nil {
		t.Fatal(err)
	}
	if !json.Valid(r.out.Bytes()) {
		t.Errorf("done --json printed %q", r.out)
	}
	if s := status(); !strings.Contains(s, "task:       test the parser") || strings.Contains(s, "write the parser") {
		t.Errorf("after done 1:\n%s", s)
	}

	// --thread and --global together are refused before anything is written.
	r = newTestRun(t, v, "next", "")
	both := rowThreadOptions{thread: "project:shop", global: true}
	if err := next(context.Background(), nextOptions{rowThreadOptions: both, text: []string{"x"}}, r.env); err == nil ||
		err.Error() != "next: --thread and --global do not go together" {
		t.Errorf("--thread with --global: %v", err)
	}
}

func TestRunExport(t *testing.T) {
	v := testVault(t)
	r := newTestRun(t, v, "remember", "")
	rows := rememberOptions{kind: "decision", text: []string{"ship", "it"}, rowThreadOptions: rowThreadOptions{thread: "project:shop"}}
	work, err := prepareRemember(context.Background(), rows, r.env, v)
	if err != nil {
		t.Fatal(err)
	}
	if err := commitWork(r.env, v, writeOptions{}, work); err != nil {
		t.Fatal(err)
	}
	opts := exportOptions{format: "md", thread: "project:shop", messages: 50}

	r = newTestRun(t, v, "export", "")
	if err := runExport(context.Background(), opts, r.env, v); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(r.out.String(), "ship it") {
		t.Errorf("export --thread project:shop:\n%s", r.out)
	}

	// With -o the file is written and stdout describes it; --json alone
	// is the export as JSON, which a --format md given contradicts.
	file := filepath.Join(t.TempDir(), "shop.json")
	withFile := opts
	withFile.format, withFile.output, withFile.json = "json", file, true
	r = newTestRun(t, v, "export", "")
	if err := runExport(context.Background(), withFile, r.env, v); err != nil {
		t.Fatal(err)
	}
	var rep exportReport
	if err := json.Unmarshal(r.out.Bytes(), &rep); err != nil || rep.File != file || rep.Events == 0 {
		t.Fatalf("export -o: %v %s", err, r.out)
	}
	if data, err := os.ReadFile(file); err != nil || !json.Valid(data) {
		t.Errorf("%s: %v", file, err)
	}
	asJSON := opts
	asJSON.json = true
	r = newTestRun(t, v, "export", "")
	if err := runExport(context.Background(), asJSON, r.env, v); err != nil || !json.Valid(r.out.Bytes()) {
		t.Errorf("export --json: %v %s", err, r.out)
	}
	asJSON.formatSet = true
	if err := runExport(context.Background(), asJSON, r.env, v); err == nil || !strings.Contains(err.Error(), "cannot be --format md") {
		t.Errorf("export --json --format md: %v", err)
	}
}
