package lineage

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/testvault"
	"github.com/memvault/memvault/vault/units"

	"github.com/memvault/memvault/vault/transcript"
	"github.com/memvault/memvault/vault/vaulttest"
)

// The tests here hold the budgeted import to what one unbudgeted import
// stores: the same transcript files byte for byte, and the same
// transcript.imported event, whatever the number of calls, the kills in
// between, or another process importing the same file at once.

var importFixtures = []struct {
	format transcript.Format
	file   string
}{
	{transcript.ClaudeCode, "claude-code/session.jsonl"},
	{transcript.Codex, "codex/rollout.jsonl"},
	{transcript.Gemini, "gemini/session.jsonl"},
	{transcript.OpenClaw, "openclaw/session.jsonl"},
	{transcript.Generic, "generic/session.jsonl"},
}

func fixtureSource(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "fixtures", "transcripts", name))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), filepath.Base(name))
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// hookPrompt stores a prompt as the prompt-submit hook does.
func hookPrompt(t *testing.T, v *vault.Vault, ref transcript.Ref, text string) {
	t.Helper()
	// A fixed id and time, so that two vaults given the same prompts hold
	// the same bytes.
	id := fmt.Sprintf("m_prompt%x", sha256.Sum256([]byte(text)))[:24]
	ts := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	_, err := v.Update(vault.TxOptions{Session: ref.Session, NoCommit: true}, func(tx *vault.Tx) error {
		_, _, err := tx.AppendText(ref, []transcript.Message{{ID: id, TS: ts, Role: transcript.RoleUser, Speaker: "user", Text: text,
			Source: transcript.Source{Format: transcript.HookFormat}}})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// commitImport records what the imports added and commits, as a hook's
// lineage event does, and returns the transcript.imported events.
func commitImport(t *testing.T, v *vault.Vault, ref transcript.Ref, format transcript.Format, src string) []*vault.Event {
	t.Helper()
	res, err := v.Update(vault.TxOptions{Session: ref.Session}, func(tx *vault.Tx) error {
		if err := RecordImport(tx, ref, format, src); err != nil {
			return err
		}
		return tx.CommitTranscript(ref)
	})
	if err != nil {
		t.Fatal(err)
	}
	return res.Events
}

func transcriptFiles(t *testing.T, v *vault.Vault) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for k, data := range vaulttest.Files(t, v.Root) {
		if strings.HasPrefix(k, "transcripts/") {
			out[k] = data
		}
	}
	return out
}

func sameTranscripts(t *testing.T, what string, got, want map[string][]byte) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d transcript files, want %d", what, len(got), len(want))
	}
	for k, w := range want {
		if g, ok := got[k]; !ok || !bytes.Equal(g, w) {
			t.Fatalf("%s: %s differs (%d bytes, want %d)", what, k, len(g), len(w))
		}
	}
}

// oneShot imports src in one call into a new vault that holds the given
// hook prompts first, and commits.
func oneShot(t *testing.T, format transcript.Format, src string, prompts []string) (map[string][]byte, []*vault.Event) {
	t.Helper()
	v := testvault.New(t)
	ref := transcript.Ref{Agent: "default", Session: "s"}
	for _, p := range prompts {
		hookPrompt(t, v, ref, p)
	}
	if _, err := ImportUntil(v, vault.TxOptions{}, ref, format, src, time.Time{}); err != nil {
		t.Fatal(err)
	}
	evs := commitImport(t, v, ref, format, src)
	return transcriptFiles(t, v), evs
}

// firstUserText is the text of the source's first user message: a prompt
// the prompt-submit hook stored as well.
func firstUserText(t *testing.T, format transcript.Format, src string) string {
	t.Helper()
	data, _ := os.ReadFile(src)
	res, err := transcript.ParseBytes(format, data, transcript.Cursor{}, transcript.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range res.Messages {
		if m.Role == transcript.RoleUser && m.Kind == "" {
			return m.Text
		}
	}
	return ""
}

// TestBudgetedImportEqualsOneShot imports each fixture one small window a
// call (a deadline already past: the least a call does), and wants the
// transcript files of one unbudgeted call byte for byte and the same
// transcript.imported event (ids and times apart), a prompt the hook
// stored matched across the calls as in one.
func TestBudgetedImportEqualsOneShot(t *testing.T) {
	t.Parallel()
	for _, fx := range importFixtures {
		t.Run(string(fx.format), func(t *testing.T) {
			src := fixtureSource(t, fx.file)
			prompts := []string{"a prompt the harness never wrote down"}
			if u := firstUserText(t, fx.format, src); u != "" {
				prompts = append(prompts, u)
			}
			wantFiles, wantEvs := oneShot(t, fx.format, src, prompts)

			v := testvault.New(t)
			ref := transcript.Ref{Agent: "default", Session: "s"}
			for _, p := range prompts {
				hookPrompt(t, v, ref, p)
			}
			calls := 0
			for more := true; more; calls++ {
				rep, err := importSource(v, vault.TxOptions{NoCommit: true}, ref, fx.format, src, "", time.Now().Add(-time.Hour), 2<<10)
				if err != nil {
					t.Fatal(err)
				}
				more = rep.More
				if calls > 10000 {
					t.Fatal("the import does not end")
				}
			}
			if size, _ := os.Stat(src); calls < int(size.Size()/(4<<10)) {
				t.Fatalf("%d calls for %d bytes: a call read more than its window", calls, size.Size())
			}
			evs := commitImport(t, v, ref, fx.format, src)
			sameTranscripts(t, fmt.Sprintf("%d calls", calls), transcriptFiles(t, v), wantFiles)
			if len(evs) != len(wantEvs) || len(evs) != 1 {
				t.Fatalf("%d events, want %d", len(evs), len(wantEvs))
			}
			if evs[0].Text != wantEvs[0].Text || !bytes.Equal(evs[0].Data, wantEvs[0].Data) {
				t.Fatalf("event %s %s, want %s %s", evs[0].Text, evs[0].Data, wantEvs[0].Text, wantEvs[0].Data)
			}
			testvault.MustVerify(t, v)
		})
	}
}

// cutTranscript makes the transcript end at p, as a process killed before
// or in the middle of appending a batch leaves it.
func cutTranscript(t *testing.T, v *vault.Vault, ref transcript.Ref, p transcript.Pos) {
	t.Helper()
	for n := p.Part + 1; ; n++ {
		if err := os.Remove(v.Abs(vault.TranscriptRel(ref, n))); err != nil {
			break
		}
	}
	if err := os.Truncate(v.Abs(vault.TranscriptRel(ref, p.Part)), p.Off); err != nil {
		t.Fatal(err)
	}
}

// TestImportResumesAfterAKill kills an import, in effect, at every line of
// the batch it was appending (the state said the batch was pending; none,
// some or all of its lines reached the transcript), and wants the import
// that follows to end with the transcript of an import never killed: no
// message lost, none stored twice, the numbering unbroken.
func TestImportResumesAfterAKill(t *testing.T) {
	t.Parallel()
	src := fixtureSource(t, "claude-code/session.jsonl")
	wantFiles, wantEvs := oneShot(t, transcript.ClaudeCode, src, nil)
	ref := transcript.Ref{Agent: "default", Session: "s"}
	for _, calls := range []int{1, 3, 6} {
		// Where the batch of the calls-th call starts and ends.
		probe := testvault.New(t)
		for range calls {
			if _, err := importSource(probe, vault.TxOptions{NoCommit: true}, ref, transcript.ClaudeCode, src, "", time.Now().Add(-time.Hour), 8<<10); err != nil {
				t.Fatal(err)
			}
		}
		st := importStateOf(t, probe, ref, src)
		if st.Pending == nil {
			t.Fatalf("after %d calls no batch is pending", calls)
		}
		var cuts []transcript.Pos
		cuts = append(cuts, st.Pending.Before)
		_ = transcript.ReadFrom(probe.Files(), ref, st.Pending.Before, func(_ transcript.Stored, end transcript.Pos) error {
			cuts = append(cuts, end)
			return nil
		})
		for i, cut := range cuts {
			v := testvault.New(t)
			for range calls {
				if _, err := importSource(v, vault.TxOptions{NoCommit: true}, ref, transcript.ClaudeCode, src, "", time.Now().Add(-time.Hour), 8<<10); err != nil {
					t.Fatal(err)
				}
			}
			cutTranscript(t, v, ref, cut)
			for more := true; more; {
				rep, err := importSource(v, vault.TxOptions{NoCommit: true}, ref, transcript.ClaudeCode, src, "", time.Now().Add(-time.Hour), 8<<10)
				if err != nil {
					t.Fatal(err)
				}
				more = rep.More
			}
			what := fmt.Sprintf("killed in call %d after %d of %d lines", calls, i, len(cuts)-1)
			evs := commitImport(t, v, ref, transcript.ClaudeCode, src)
			sameTranscripts(t, what, transcriptFiles(t, v), wantFiles)
			if len(evs) != 1 || !bytes.Equal(evs[0].Data, wantEvs[0].Data) {
				var got []string
				for _, ev := range evs {
					got = append(got, string(ev.Data))
				}
				t.Fatalf("%s: events %s, want one like %s", what, got, wantEvs[0].Data)
			}
		}
	}
}

func importStateOf(t *testing.T, v *vault.Vault, ref transcript.Ref, src string) importState {
	t.Helper()
	abs, _ := filepath.Abs(src)
	data, err := os.ReadFile(importStatePath(v, ref, transcript.ClaudeCode, abs))
	if err != nil {
		t.Fatal(err)
	}
	var st importState
	if err := json.Unmarshal(data, &st); err != nil {
		t.Fatal(err)
	}
	return st
}

// TestConcurrentImportsOfOneSource: two processes (two opened vaults)
// import one file at once, a window at a time; each message is stored once
// and in order, as one import stores it.
func TestConcurrentImportsOfOneSource(t *testing.T) {
	src := fixtureSource(t, "claude-code/session.jsonl")
	wantFiles, _ := oneShot(t, transcript.ClaudeCode, src, nil)
	v := testvault.New(t)
	ref := transcript.Ref{Agent: "default", Session: "s"}
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for range 2 {
		w, err := vault.Open(v.Root)
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for more := true; more; {
				rep, err := importSource(w, vault.TxOptions{NoCommit: true, LockTimeout: time.Minute}, ref, transcript.ClaudeCode, src, "",
					time.Now().Add(-time.Hour), 3<<10)
				if err != nil {
					errs <- err
					return
				}
				more = rep.More
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	sameTranscripts(t, "two importers", transcriptFiles(t, v), wantFiles)
}

// TestImportRewrittenSource rewrites a source in place behind the import's
// cursor, keeping its length and the newline the cursor stopped after, so
// that only the line the cursor names can tell. The import reads it again
// from the start, stores what is new once, and nothing twice.
func TestImportRewrittenSource(t *testing.T) {
	v := testvault.New(t)
	ref := transcript.Ref{Agent: "default", Session: "s"}
	src := filepath.Join(t.TempDir(), "g.jsonl")
	line := func(id, text string) string {
		return `{"id":"` + id + `","role":"user","text":"` + text + `"}` + "\n"
	}
	os.WriteFile(src, []byte(line("a", "one")+line("b", "two")), 0o600)
	if _, err := Import(v, vault.TxOptions{}, ref, transcript.Generic, src, ""); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(src, []byte(line("a", "one")+line("c", "TWO")+line("d", "three")), 0o600)
	rep, err := Import(v, vault.TxOptions{}, ref, transcript.Generic, src, "")
	if err != nil {
		t.Fatal(err)
	}
	if rep.Added != 2 || rep.Duplicates != 1 {
		t.Fatalf("added %d, %d already stored; want 2 and 1", rep.Added, rep.Duplicates)
	}
	var ids []string
	transcript.Read(v.Files(), ref, 1, 0, func(m transcript.Stored) error {
		ids = append(ids, m.ID)
		return nil
	})
	if strings.Join(ids, " ") != "a b c d" {
		t.Fatalf("stored %v", ids)
	}
	// Nothing new: nothing stored, no dedupe list left behind.
	if rep, err := Import(v, vault.TxOptions{}, ref, transcript.Generic, src, ""); err != nil || rep.Added != 0 {
		t.Fatalf("again: %+v %v", rep, err)
	}
	matches, _ := filepath.Glob(filepath.Join(v.Root, ".state", "imports", "*.known"))
	if len(matches) != 0 {
		t.Fatalf("left behind: %v", matches)
	}
	testvault.MustVerify(t, v)
}

// TestHookPromptMatchedOnce: the same prompt typed twice, the second time
// while the vault was busy (the hook could not store it): the transcript's
// second copy is the only one and must be imported, in a later call than
// the first, which matched the hook's copy.
func TestHookPromptMatchedOnce(t *testing.T) {
	v := testvault.New(t)
	ref := transcript.Ref{Agent: "default", Session: "s"}
	src := filepath.Join(t.TempDir(), "g.jsonl")
	line := func(id, role, text string) string {
		return `{"id":"` + id + `","role":"` + role + `","text":"` + text + `"}` + "\n"
	}
	hookPrompt(t, v, ref, "yes")
	os.WriteFile(src, []byte(line("u1", "user", "yes")+line("a1", "assistant", "done one")), 0o600)
	if _, err := ImportUntil(v, vault.TxOptions{}, ref, transcript.Generic, src, time.Time{}); err != nil {
		t.Fatal(err)
	}
	f, _ := os.OpenFile(src, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(line("u2", "user", "yes") + line("a2", "assistant", "done two"))
	f.Close()
	if _, err := ImportUntil(v, vault.TxOptions{}, ref, transcript.Generic, src, time.Time{}); err != nil {
		t.Fatal(err)
	}
	var got []string
	transcript.Read(v.Files(), ref, 1, 0, func(m transcript.Stored) error {
		got = append(got, string(m.Role)+":"+m.Text)
		return nil
	})
	want := "user:yes assistant:done one user:yes assistant:done two"
	if strings.Join(got, " ") != want {
		t.Fatalf("stored %q, want %q", strings.Join(got, " "), want)
	}
}

// TestOpenRegularRefuses: whatever is not a regular file is refused at
// once, a named pipe without a writer included (an open without O_NONBLOCK
// would wait for one forever, and the test with it).
func TestOpenRegularRefuses(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	regular := filepath.Join(dir, "plain.jsonl")
	os.WriteFile(regular, []byte("{}\n"), 0o600)
	link := filepath.Join(dir, "link.jsonl")
	os.Symlink(regular, link)
	sock := filepath.Join(dir, "s.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for path, want := range map[string]string{
		fifo:        "a named pipe",
		"/dev/zero": "a character device",
		dir:         "a folder",
		link:        "a symbolic link",
		sock:        "a socket",
	} {
		f, err := OpenRegular(path)
		if err == nil {
			f.Close()
			t.Errorf("%s: opened", path)
			continue
		}
		if !errors.Is(err, vault.ErrInvalid) || !strings.Contains(err.Error(), "not a regular file ("+want+")") {
			t.Errorf("%s: %v, want ErrInvalid naming %s", path, err, want)
		}
	}
	if _, err := OpenRegular(filepath.Join(dir, "missing")); !errors.Is(err, vault.ErrNotFound) {
		t.Errorf("missing: %v", err)
	}
	f, err := OpenRegular(regular)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	// The importer refuses them the same way, and stores nothing.
	v := testvault.New(t)
	ref := transcript.Ref{Agent: "default", Session: "s"}
	if _, err := Import(v, vault.TxOptions{}, ref, transcript.Generic, fifo, ""); !errors.Is(err, vault.ErrInvalid) {
		t.Fatalf("import of a fifo: %v", err)
	}
	if files := transcriptFiles(t, v); len(files) != 0 {
		t.Fatalf("stored %d files", len(files))
	}
}

// TestImportReportsProgress: an import in windows reports the bytes it
// read, ending at the file's size, with the messages added so far.
func TestImportReportsProgress(t *testing.T) {
	t.Parallel()
	v := testvault.New(t)
	var log []vault.Step
	v.Progress = func(s vault.Step) { log = append(log, s) }
	src := filepath.Join(t.TempDir(), "session.jsonl")
	var lines []string
	for i := range 2000 {
		lines = append(lines, fmt.Sprintf(`{"role":"user","text":"message %d with some words in it to fill a window"}`, i))
	}
	if err := os.WriteFile(src, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	info, _ := os.Stat(src)
	ref := transcript.Ref{Agent: "default", Session: "s1"}
	rep, err := importSource(v, vault.TxOptions{}, ref, transcript.Generic, src, "", time.Time{}, 16<<10)
	if err != nil {
		t.Fatal(err)
	}
	var imports []vault.Step
	for _, s := range log {
		if strings.HasPrefix(s.Phase, "import: ") {
			imports = append(imports, s)
		}
	}
	if len(imports) < 2 {
		t.Fatalf("import of %d bytes in 16 KiB windows reported %d steps", info.Size(), len(imports))
	}
	if last := imports[len(imports)-1]; last.Done != info.Size() || last.Total != info.Size() || last.Unit != "bytes" ||
		!strings.Contains(last.Phase, units.Count(int64(rep.Added))+" messages") {
		t.Errorf("import: last step %+v, file of %d bytes, %d messages", last, info.Size(), rep.Added)
	}
	for _, s := range imports {
		if s.Total > 0 && s.Done > s.Total {
			t.Errorf("import step %+v: done past its total", s)
		}
	}
}
