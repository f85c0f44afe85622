package recall

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memvault/memvault/vault/continuity"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/fileio"
	"github.com/memvault/memvault/vault/heads"
	"github.com/memvault/memvault/vault/memory"
	"github.com/memvault/memvault/vault/testvault"
	"github.com/memvault/memvault/vault/transcript"
	"github.com/memvault/memvault/vault/vaulttest"
)

// Agent scope: an agent sees its own rows and the vault's own agent's,
// never a third agent's, in the heads it is shown and in recall; the
// vault's own agent sees every row.
func TestAgentScope(t *testing.T) {
	v := testvault.New(t)
	write := func(agent, text string) {
		t.Helper()
		if _, err := v.Update(vault.TxOptions{Agent: agent}, func(tx *vault.Tx) error {
			_, err := memory.Remember(tx, memory.Input{Kind: "constraint", Thread: "project:shop", Text: text})
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	write(v.Config.Agent, "sharedzebra constraint")
	write("alpha", "alphazebra constraint")
	write("beta", "betazebra constraint")
	if _, err := heads.Refresh(v, heads.RefreshOptions{Memory: true, AllThreads: true}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		agent      string
		see, blind []string
	}{
		{v.Config.Agent, []string{"sharedzebra", "alphazebra", "betazebra"}, nil},
		{"alpha", []string{"sharedzebra", "alphazebra"}, []string{"betazebra"}},
		{"beta", []string{"sharedzebra", "betazebra"}, []string{"alphazebra"}},
		{"gamma", []string{"sharedzebra"}, []string{"alphazebra", "betazebra"}},
	} {
		heads, err := continuity.AgentHeads(v, c.agent, vault.MemoryHead, "threads/project/shop.md", vault.ContinuityHead)
		if err != nil {
			t.Fatal(err)
		}
		shown := string(heads[0]) + string(heads[1]) + string(heads[2])
		res, err := Recall(v, RecallOptions{Query: "constraint", Agent: c.agent, AllThreads: true, Tier: TierStructured, Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		var found []string
		for _, h := range res.Hits {
			found = append(found, h.Text)
		}
		hits := strings.Join(found, "\n")
		for _, w := range c.see {
			if !strings.Contains(string(heads[0]), w) || !strings.Contains(string(heads[1]), w) {
				t.Errorf("agent %s is not shown %s in its heads:\n%s", c.agent, w, shown)
			}
			if !strings.Contains(hits, w) {
				t.Errorf("agent %s does not recall %s: %s", c.agent, w, hits)
			}
		}
		for _, w := range c.blind {
			if strings.Contains(shown, w) {
				t.Errorf("agent %s is shown %s, another agent's row:\n%s", c.agent, w, shown)
			}
			if strings.Contains(hits, w) {
				t.Errorf("agent %s recalls %s, another agent's row", c.agent, w)
			}
		}
	}
}

// TestOldTranscriptShapeStillReads: a vault with transcripts in the first
// shape reads them as before, appends in the compact shape after them with
// the numbering continued, and recall, expand's reader and verify take both.
func TestOldTranscriptShapeStillReads(t *testing.T) {
	v := testvault.New(t)
	ref := transcript.Ref{Agent: v.Config.Agent, Session: "old-1"}
	path := filepath.Join(v.Root, filepath.FromSlash(ref.Path()))
	os.MkdirAll(filepath.Dir(path), 0o755)
	if err := os.WriteFile(path, []byte(vaulttest.OldTranscript), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := v.Update(vault.TxOptions{}, func(tx *vault.Tx) error {
		if _, _, err := tx.AppendText(ref, []transcript.Message{{Role: transcript.RoleUser, Text: "and now a < NEWZEBRA & more"}}); err != nil {
			return err
		}
		return tx.CommitTranscript(ref)
	})
	if err != nil {
		t.Fatal(err)
	}
	var got []transcript.Stored
	if err := transcript.Read(v.Files(), ref, 1, 0, func(m transcript.Stored) error { got = append(got, m); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 {
		t.Fatalf("read %d messages, want 4: %#v", len(got), got)
	}
	want := []string{"why does a < b && OLDZEBRA fail?", "go test ./...", "FAIL OLDQUOKKA", "and now a < NEWZEBRA & more"}
	for i, m := range got {
		if m.N != i+1 || m.Text != want[i] {
			t.Errorf("message %d: n=%d text %q, want n=%d %q", i, m.N, m.Text, i+1, want[i])
		}
	}
	if got[2].Tool == nil || got[2].Tool.Output != "FAIL OLDQUOKKA" || !got[2].Tool.Error {
		t.Errorf("old tool result: %#v", got[2].Tool)
	}
	if got[1].Source != (transcript.Source{Format: "claude-code", Line: 2, Offset: 310, Type: "assistant/tool_use"}) {
		t.Errorf("old source: %#v", got[1].Source)
	}
	if _, off := got[1].TS.Zone(); off != 3600 || got[1].TS.Nanosecond() != 5e8 {
		t.Errorf("old time: %v", got[1].TS)
	}
	data, _ := os.ReadFile(path)
	if !bytes.HasPrefix(data, []byte(vaulttest.OldTranscript)) {
		t.Fatal("the old lines changed: an append must only add")
	}
	if added := string(data[len(vaulttest.OldTranscript):]); !strings.Contains(added, `"text":"and now a < NEWZEBRA & more"`) {
		t.Errorf("the appended line is not in the compact shape: %s", added)
	}
	for _, q := range []string{"OLDZEBRA", "OLDQUOKKA", "NEWZEBRA"} {
		res, err := Recall(v, RecallOptions{Query: q, Tier: TierTranscripts, AllThreads: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Hits) == 0 || !strings.Contains(res.Hits[0].Text, q) {
			t.Errorf("recall %s: %#v", q, res.Hits)
		}
	}
	testvault.MustVerify(t, v)
}

// TestReindexReportsProgress: reindex reports counts that end at its
// totals; without a Progress nothing is called.
func TestReindexReportsProgress(t *testing.T) {
	t.Parallel()
	v := testvault.New(t)
	for i := range 12 {
		testvault.Remember(t, v, fmt.Sprintf("fact %d", i))
	}
	var steps []vault.Step
	v.Progress = func(s vault.Step) { steps = append(steps, s) }
	ir, err := Reindex(v, nil)
	if err != nil {
		t.Fatal(err)
	}
	var last vault.Step
	for _, s := range steps {
		if s.Phase == "reindex: indexing files" {
			last = s
		}
		if s.Total > 0 && s.Done > s.Total {
			t.Errorf("step %+v: done past its total", s)
		}
	}
	if last.Done != last.Total || last.Total < int64(ir.Files) || last.Unit != "files" {
		t.Errorf("reindex: last step %+v, report %+v", last, ir)
	}
	v.Progress = nil
	n := len(steps)
	if _, err := Reindex(v, nil); err != nil {
		t.Fatal(err)
	}
	if len(steps) != n {
		t.Errorf("without a Progress, %d steps were still reported", len(steps)-n)
	}
}

// TestSearchIndexNeverThroughALink: an .index folder that is a link to an
// outside folder is neither emptied nor filled by a rebuild (the index's
// library empties the folder it creates an index in), and recall still
// answers from the files.
func TestSearchIndexNeverThroughALink(t *testing.T) {
	v := testvault.New(t)
	testvault.Remember(t, v, "the osprey migration")
	out, untouched := vaulttest.OutsideDir(t, v.Root)
	if err := os.RemoveAll(filepath.Join(v.Root, vault.IndexDir)); err != nil {
		t.Fatal(err)
	}
	vaulttest.Symlink(t, out, filepath.Join(v.Root, vault.IndexDir))
	if _, err := Reindex(v, nil); !fileio.IsLink(err) {
		t.Fatalf("reindex through a linked .index: %v", err)
	}
	res, err := Recall(v, RecallOptions{Query: "osprey"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Hits) == 0 {
		t.Error("recall found nothing without its index")
	}
	untouched()

	// A link inside the index's folder is refused too.
	if err := os.Remove(filepath.Join(v.Root, vault.IndexDir)); err != nil {
		t.Fatal(err)
	}
	if _, err := Reindex(v, nil); err != nil {
		t.Fatal(err)
	}
	part := partDir(v, lineagePart)
	vaulttest.Symlink(t, filepath.Join(out, "keep"), filepath.Join(part, "planted"))
	if err := v.CheckNoLinksBelow(part); !fileio.IsLink(err) {
		t.Fatalf("a link inside an index part: %v", err)
	}
	if _, err := Reindex(v, nil); !fileio.IsLink(err) {
		t.Fatalf("reindex over a link inside a part: %v", err)
	}
	untouched()
}
