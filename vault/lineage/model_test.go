package lineage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/executor"
	"github.com/memvault/memvault/vault/memory"
	"github.com/memvault/memvault/vault/node"
	"github.com/memvault/memvault/vault/testvault"
	"github.com/memvault/memvault/vault/transcript"
	"github.com/memvault/memvault/vault/vaulttest"
)

// fakeBuild builds the fake executor (fixtures/executor/fake) once, for
// the tests that ask it for summaries; TestMain removes it.
type fakeBuild struct {
	once sync.Once
	dir  string
	bin  string
	err  error
}

func (f *fakeBuild) get(t *testing.T) string {
	t.Helper()
	f.once.Do(func() {
		if f.dir, f.err = os.MkdirTemp("", "memvault-fake-executor"); f.err != nil {
			return
		}
		f.bin, f.err = vaulttest.BuildFakeExecutor(f.dir)
	})
	if f.err != nil {
		t.Fatal(f.err)
	}
	return f.bin
}

func (f *fakeBuild) remove() {
	if f.dir != "" {
		os.RemoveAll(f.dir)
	}
}

// theFake is built for this package's tests only, once, and never changed
// after: a test binary's own value.
var theFake = &fakeBuild{}

func TestMain(m *testing.M) {
	code := m.Run()
	theFake.remove()
	os.Exit(code)
}

// withSummariser registers the fake in mode (its arguments after) as the
// executor "fake" and names it in [summarise] with timeout; status and
// the table's text may be overridden by table ("" writes the usual one,
// "-" none).
func withSummariser(t *testing.T, v *vault.Vault, mode, status, table string, args ...string) {
	t.Helper()
	withExecutor(t, v, "fake", mode, status, table, args...)
}

// withExecutor is withSummariser with the executor's name.
func withExecutor(t *testing.T, v *vault.Vault, name, mode, status, table string, args ...string) {
	t.Helper()
	e := executor.Entry{Name: name, Command: theFake.get(t), Args: append([]string{"-mode", mode}, args...),
		Mode: executor.ModeEnvelope, Status: status, TimeoutText: "10s"}
	if mode == "plain" {
		e.Mode = executor.ModePlain
	}
	if status == executor.StatusInactive {
		e.Reason = "ping: timed out"
	}
	switch table {
	case "":
		table = "[summarise]\nexecutor = \"fake\"\ntimeout = \"2s\"\n"
	case "-":
		table = ""
	}
	_, err := v.Update(vault.TxOptions{}, func(tx *vault.Tx) error {
		return executor.Edit(tx, "summariser", func(data []byte) ([]byte, error) {
			out, err := executor.AddTo(data, e)
			return append(out, []byte("\n"+table)...), err
		})
	})
	if err != nil {
		t.Fatal(err)
	}
}

// session stores a short conversation as session s, with a secret in it.
func session(t *testing.T, v *vault.Vault, s string) transcript.Ref {
	t.Helper()
	ref := transcript.Ref{Agent: v.Config.Agent, Session: s}
	_, err := v.Update(vault.TxOptions{Session: s}, func(tx *vault.Tx) error {
		_, _, err := tx.AppendText(ref, []transcript.Message{
			{Role: transcript.RoleUser, Text: "make the parser handle unicode; the key is ghp_abcdefghijklmnopqrstuvwxyz0123456789"},
			assistant("the lexer now reads runes, not bytes"),
		})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return ref
}

// summarize runs SessionModel, then Summarize with it in a transaction.
func summarize(t *testing.T, v *vault.Vault, ref transcript.Ref) *node.Node {
	t.Helper()
	m, err := SessionModel(context.Background(), v, ref, ModelOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return summarizeWith(t, v, ref, m)
}

func summarizeWith(t *testing.T, v *vault.Vault, ref transcript.Ref, m *Model) *node.Node {
	t.Helper()
	var n *node.Node
	_, err := v.Update(vault.TxOptions{Session: ref.Session}, func(tx *vault.Tx) error {
		var err error
		n, _, err = Summarize(tx, ref, SummaryOptions{Model: m})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	full, err := node.Read(v.Files(), n)
	if err != nil {
		t.Fatal(err)
	}
	return full
}

// sound fails the test unless the vault verifies and git finds its
// repository sound.
func sound(t *testing.T, v *vault.Vault) {
	t.Helper()
	testvault.MustVerify(t, v)
	vaulttest.Fsck(t, v.Root)
}

// failures returns the executor.failed events' data, by code.
func failures(t *testing.T, v *vault.Vault) map[string]string {
	t.Helper()
	st, err := v.LoadState()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, r := range st.Rows {
		if r.Kind != vault.KindDelegationFailed {
			continue
		}
		var d struct {
			Code, Error, Task, Arbitration string
		}
		if err := json.Unmarshal(r.Data, &d); err != nil {
			t.Fatal(err)
		}
		if d.Arbitration != "summary" || !strings.Contains(d.Task, "session") {
			t.Errorf("executor.failed %s: %+v", r.ID, d)
		}
		out[d.Code] = d.Error
	}
	return out
}

// The executor answers: the node holds its summary and says so (which
// executor, the result's checksum), the deterministic summary after it,
// and what went out to the executor was redacted.
func TestModelSummaryAnswered(t *testing.T) {
	for _, mode := range []string{"answer", "plain"} {
		t.Run(mode, func(t *testing.T) {
			v := testvault.New(t)
			withSummariser(t, v, mode, "", "")
			ref := session(t, v, "s1")
			n := summarize(t, v, ref)
			if n.Summary != node.SummaryModel || n.SummaryBy != "fake" || n.SummaryFallback != "" {
				t.Fatalf("summary %q by %q fallback %q", n.Summary, n.SummaryBy, n.SummaryFallback)
			}
			want := "done: "
			result := map[string]any{"tokens": 42}
			if mode == "plain" {
				want = "plain answer to: "
				result = map[string]any{}
			}
			i := strings.Index(n.Body, want)
			if i < 0 {
				t.Fatalf("the reply is not in the body:\n%s", n.Body)
			}
			// the checksum is of the result the executor sent: recompute it
			// from the reply as the node keeps it
			reply := n.Body[i:strings.Index(n.Body, "\nSession `")]
			result["summary"] = strings.TrimSpace(reply)
			raw, _ := json.Marshal(result)
			if _, sum, _ := executor.Checksum(raw); sum != n.SummaryChecksum {
				t.Errorf("checksum %s, the reply hashes to %s", n.SummaryChecksum, sum)
			}
			for _, part := range []string{"## Summary", "Written by executor `fake`", "## Asked", "## Outcome",
				"make the parser handle unicode", "the lexer now reads runes"} {
				if !strings.Contains(n.Body, part) {
					t.Errorf("body lacks %q:\n%s", part, n.Body)
				}
			}
			if strings.Contains(n.Body, "ghp_abcdef") {
				t.Errorf("a secret reached the executor and came back:\n%s", n.Body)
			}
			if f := failures(t, v); len(f) != 0 {
				t.Errorf("failures recorded: %v", f)
			}
			// lossless: the node's span is the transcript's, as without a model
			if n.Span == nil || n.Span.From != 1 || n.Span.To != 2 {
				t.Errorf("span %+v", n.Span)
			}
			// asked again with nothing new: the model's node stands, and no
			// executor is asked (the counting one tells each run)
			var mu sync.Mutex
			runs := 0
			sock := vaulttest.NotifySocket(t, func(msg string) string {
				mu.Lock()
				defer mu.Unlock()
				runs++
				return ""
			})
			withExecutor(t, v, "counter", "count", "", "-", "-notify", sock)
			if _, err := v.Update(vault.TxOptions{}, func(tx *vault.Tx) error {
				return executor.Edit(tx, "summariser: counter", func(data []byte) ([]byte, error) {
					return []byte(strings.Replace(string(data), `executor = "fake"`, `executor = "counter"`, 1)), nil
				})
			}); err != nil {
				t.Fatal(err)
			}
			again := summarize(t, v, ref)
			mu.Lock()
			defer mu.Unlock()
			if again.ID != n.ID || runs != 0 {
				t.Errorf("summarised again: %s, was %s; %d runs of the executor", again.ID, n.ID, runs)
			}
			sound(t, v)
		})
	}
}

// Every failure of the executor, and every reason not to ask it, gives
// the deterministic summary, with the reason in the node and in an
// executor.failed event; the vault verifies.
func TestModelSummaryFallsBack(t *testing.T) {
	cases := []struct {
		name, mode, status, table, code string
	}{
		{"crash", "crash", "", "", executor.CodeCrash},
		{"hang", "hang", "", "[summarise]\nexecutor = \"fake\"\ntimeout = \"300ms\"\n", executor.CodeTimeout},
		{"garbage", "garbage", "", "", executor.CodeMalformed},
		{"wrong checksum", "badsum", "", "", executor.CodeChecksum},
		{"error envelope", "error", "", "", executor.CodeExecutor},
		{"too large", "huge", "", "", executor.CodeTooLarge},
		{"inactive", "answer", executor.StatusInactive, "", executor.CodeInactive},
		{"unregistered", "answer", "", "[summarise]\nexecutor = \"nobody\"\n", executor.CodeUnregistered},
		{"bad timeout", "answer", "", "[summarise]\nexecutor = \"fake\"\ntimeout = \"soon\"\n", executor.CodeConfig},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := testvault.New(t)
			var args []string
			if c.mode == "hang" {
				args = []string{"-notify", vaulttest.NotifySocket(t, func(string) string { return "" })}
			}
			withSummariser(t, v, c.mode, c.status, c.table, args...)
			ref := session(t, v, "s1")
			n := summarize(t, v, ref)
			if n.Summary != node.SummaryDeterministic || n.SummaryBy != "" || n.SummaryChecksum != "" ||
				!strings.HasPrefix(n.SummaryFallback, c.code+": ") {
				t.Fatalf("summary %q by %q sum %q fallback %q", n.Summary, n.SummaryBy, n.SummaryChecksum, n.SummaryFallback)
			}
			if !strings.Contains(n.Body, "Deterministic summary: the model's was not used ("+c.code) ||
				!strings.Contains(n.Body, "## Asked") || strings.Contains(n.Body, "## Summary") {
				t.Errorf("body:\n%s", n.Body)
			}
			if f := failures(t, v); f[c.code] == "" || len(f) != 1 {
				t.Errorf("failures recorded: %v", f)
			}
			sound(t, v)
		})
	}
}

// Without [summarise], a node is what it always was: no summary field in
// its file, no event beyond its own.
func TestNoSummariserNoChange(t *testing.T) {
	v := testvault.New(t)
	ref := session(t, v, "s1")
	m, err := SessionModel(context.Background(), v, ref, ModelOptions{})
	if err != nil || m != nil {
		t.Fatalf("model %+v, %v", m, err)
	}
	n := summarize(t, v, ref)
	data, err := os.ReadFile(filepath.Join(v.Root, filepath.FromSlash(n.Path)))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), "\nsummary") || n.Summary != "" {
		t.Errorf("a node without a summariser names one:\n%s", data)
	}
	if k := testvault.Kinds(t, v); k[vault.KindDelegationFailed] != 0 {
		t.Errorf("kinds %v", k)
	}
}

// A message written while the executor ran makes its summary stale: the
// node covers every message, so it falls back.
func TestModelSummaryStale(t *testing.T) {
	v := testvault.New(t)
	withSummariser(t, v, "answer", "", "")
	ref := session(t, v, "s1")
	m, err := SessionModel(context.Background(), v, ref, ModelOptions{})
	if err != nil || !m.ok() {
		t.Fatalf("model %+v, %v", m, err)
	}
	testvault.AppendMessage(t, v, "s1", "one more thing")
	n := summarizeWith(t, v, ref, m)
	if n.Summary != node.SummaryDeterministic || !strings.HasPrefix(n.SummaryFallback, executor.CodeStale+": ") || n.Span.To != 3 {
		t.Fatalf("summary %q fallback %q span %+v", n.Summary, n.SummaryFallback, n.Span)
	}
	sound(t, v)
}

// A policy that lets no executor write refuses a model's text too.
func TestModelSummaryRefusedByPolicy(t *testing.T) {
	v := testvault.New(t)
	withSummariser(t, v, "answer", "", "")
	if _, err := v.Update(vault.TxOptions{}, func(tx *vault.Tx) error {
		_, err := tx.SetPolicy(map[string][]string{vault.KindDelegation: {vault.SourceCLI}, vault.KindDelegationFailed: {vault.SourceCLI}})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	ref := session(t, v, "s1")
	n := summarize(t, v, ref)
	if n.Summary != node.SummaryDeterministic || !strings.HasPrefix(n.SummaryFallback, executor.CodePolicy+": ") {
		t.Fatalf("summary %q fallback %q", n.Summary, n.SummaryFallback)
	}
	// the failure event is refused too: its violation is recorded, the
	// node says why
	if k := testvault.Kinds(t, v); k[vault.KindDelegationFailed] != 0 || k[vault.KindViolation] != 1 {
		t.Errorf("kinds %v", k)
	}
	sound(t, v)
}

// An executor that hangs holds no lock of the vault: another writer
// records a memory while it hangs, and the summary then falls back.
func TestModelSummaryHangHoldsNoLock(t *testing.T) {
	v := testvault.New(t)
	started := make(chan struct{}, 1)
	sock := vaulttest.NotifySocket(t, func(string) string { started <- struct{}{}; return "" })
	withSummariser(t, v, "hang", "", "[summarise]\nexecutor = \"fake\"\ntimeout = \"5s\"\n", "-notify", sock)
	ref := session(t, v, "s1")
	done := make(chan *Model)
	go func() {
		m, _ := SessionModel(context.Background(), v, ref, ModelOptions{})
		done <- m
	}()
	select {
	case <-started:
	case m := <-done:
		t.Fatalf("the executor did not hang: %+v", m)
	}
	if _, err := v.Update(vault.TxOptions{LockTimeout: 200 * time.Millisecond}, func(tx *vault.Tx) error {
		_, err := memory.Remember(tx, memory.Input{Text: "written while the executor hangs"})
		return err
	}); err != nil {
		t.Fatalf("a writer waited on the hanging executor: %v", err)
	}
	select {
	case m := <-done:
		t.Fatalf("the executor stopped before its timeout: %+v", m)
	default:
	}
	m := <-done
	n := summarizeWith(t, v, ref, m)
	if !strings.HasPrefix(n.SummaryFallback, executor.CodeTimeout+": ") {
		t.Fatalf("fallback %q", n.SummaryFallback)
	}
	sound(t, v)
}

// A condensed node holds the model's summary of its children, which it
// still lists; an executor that fails leaves the deterministic list.
func TestCondenseModel(t *testing.T) {
	for _, mode := range []string{"answer", "crash"} {
		t.Run(mode, func(t *testing.T) {
			v := testvault.New(t)
			withSummariser(t, v, mode, "", "")
			// two sessions summarised without a model, yesterday and before
			for _, s := range []string{"s1", "s2"} {
				ref := session(t, v, s)
				summarizeWith(t, v, ref, nil)
			}
			opts := CondenseOptions{Current: true}
			models, err := CondenseModels(context.Background(), v, v.Config.Agent, opts, time.Now(), ModelOptions{})
			if err != nil || len(models) != 1 {
				t.Fatalf("models %v, %v", models, err)
			}
			opts.Models = models
			var out []*node.Node
			if _, err := v.Update(vault.TxOptions{}, func(tx *vault.Tx) error {
				out, err = Condense(tx, opts)
				return err
			}); err != nil {
				t.Fatal(err)
			}
			if len(out) != 1 || len(out[0].Children) != 2 {
				t.Fatalf("condensed %+v", out)
			}
			n, err := node.Read(v.Files(), out[0])
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range n.Children {
				if !strings.Contains(n.Body, "`"+c+"`") {
					t.Errorf("the child %s is not listed:\n%s", c, n.Body)
				}
			}
			switch mode {
			case "answer":
				if n.Summary != node.SummaryModel || !strings.Contains(n.Body, "done: Condense these summaries") ||
					!strings.Contains(n.Body, "the lexer now reads runes") {
					t.Errorf("summary %q:\n%s", n.Summary, n.Body)
				}
			default:
				if n.Summary != node.SummaryDeterministic || !strings.HasPrefix(n.SummaryFallback, "crash: ") {
					t.Errorf("summary %q fallback %q", n.Summary, n.SummaryFallback)
				}
			}
			sound(t, v)
		})
	}
}

// memvault compact without a summary: the executor writes one for the
// messages since the last compaction; when it fails, the transcript's own
// compaction summary is used, and without one nothing is written.
func TestCompactionModel(t *testing.T) {
	compactWith := func(t *testing.T, v *vault.Vault, ref transcript.Ref) (*node.Node, error) {
		m, err := CompactionModel(context.Background(), v, ref, ModelOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var n *node.Node
		_, err = v.Update(vault.TxOptions{Session: ref.Session}, func(tx *vault.Tx) error {
			n, _, err = Compact(tx, ref, CompactOptions{Model: m})
			return err
		})
		if err != nil {
			return nil, err
		}
		return node.Read(v.Files(), n)
	}
	t.Run("answer", func(t *testing.T) {
		v := testvault.New(t)
		withSummariser(t, v, "answer", "", "")
		n, err := compactWith(t, v, session(t, v, "s1"))
		if err != nil {
			t.Fatal(err)
		}
		if n.Summary != node.SummaryModel || !strings.Contains(n.Body, "done: Summarise this part") ||
			!strings.Contains(n.Title, "done: Summarise") {
			t.Errorf("summary %q %q:\n%s", n.Summary, n.Title, n.Body)
		}
		sound(t, v)
	})
	t.Run("crash without a summary", func(t *testing.T) {
		v := testvault.New(t)
		withSummariser(t, v, "crash", "", "")
		ref := session(t, v, "s1")
		before := vaulttest.Files(t, v.Root)
		if _, err := compactWith(t, v, ref); !errors.Is(err, vault.ErrNotFound) {
			t.Fatalf("err %v", err)
		}
		after := vaulttest.Files(t, v.Root)
		if len(after) != len(before) {
			t.Errorf("%d files, were %d", len(after), len(before))
		}
		for p, b := range after {
			if string(before[p]) != string(b) {
				t.Errorf("%s changed", p)
			}
		}
		if k := testvault.Kinds(t, v); k["node.created"] != 0 || k[vault.KindDelegationFailed] != 0 {
			t.Errorf("kinds %v", k)
		}
	})
	t.Run("crash with the harness's summary", func(t *testing.T) {
		v := testvault.New(t)
		withSummariser(t, v, "crash", "", "")
		ref := session(t, v, "s1")
		if _, err := v.Update(vault.TxOptions{Session: "s1"}, func(tx *vault.Tx) error {
			_, _, err := tx.AppendText(ref, []transcript.Message{{Role: transcript.RoleSystem, Kind: transcript.KindCompaction, Text: "the harness's summary"}})
			return err
		}); err != nil {
			t.Fatal(err)
		}
		n, err := compactWith(t, v, ref)
		if err != nil {
			t.Fatal(err)
		}
		if n.Summary != node.SummaryDeterministic || !strings.Contains(n.Body, "the harness's summary") ||
			!strings.HasPrefix(n.SummaryFallback, "crash: ") {
			t.Errorf("summary %q fallback %q:\n%s", n.Summary, n.SummaryFallback, n.Body)
		}
		sound(t, v)
	})
}

// The material is bounded: the start and the end of a long session, the
// middle left out and said so.
func TestMaterialBounded(t *testing.T) {
	var lines []string
	for i := range 1000 {
		lines = append(lines, fmt.Sprintf("[%d] user: %s", i, strings.Repeat("x", 100)))
	}
	out := bounded(lines, materialBytes)
	if len(out) > materialBytes || !strings.HasPrefix(out, "[0] user") || !strings.HasSuffix(out, lines[999]) ||
		!strings.Contains(out, "messages left out") {
		t.Fatalf("%d bytes: %q … %q", len(out), out[:40], out[len(out)-40:])
	}
	if got := bounded(lines[:3], materialBytes); got != strings.Join(lines[:3], "\n") {
		t.Errorf("short material changed: %q", got)
	}
}
