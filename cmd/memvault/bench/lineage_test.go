package bench

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memvault/memvault/vault/lineage"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/transcript"
)

// lineageVault builds a vault with sessions × 2 nodes (a session summary
// and a compaction node each) through memvault's own code, a hundred
// sessions per transaction.
func lineageVault(b testing.TB, sessions int) (root string, someNode string) {
	b.Helper()
	root = filepath.Join(b.TempDir(), ".memory")
	v, _, err := vault.Init(root)
	if err != nil {
		b.Fatal(err)
	}
	base := time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)
	const batch = 100
	for start := 0; start < sessions; start += batch {
		end := min(sessions, start+batch)
		_, err := v.Update(vault.TxOptions{}, func(tx *vault.Tx) error {
			for s := start; s < end; s++ {
				t := transcript.Ref{Agent: "default", Session: fmt.Sprintf("s%05d", s)}
				ts := base.Add(time.Duration(s) * time.Minute)
				msgs := []transcript.Message{
					{ID: "u1", TS: ts, Role: transcript.RoleUser, Text: fmt.Sprintf("work on task %d of the migration", s)},
					{ID: "a1", TS: ts.Add(time.Second), Role: transcript.RoleAssistant, Text: fmt.Sprintf("DECISION: approach %d\nNEXT: follow up %d", s, s)},
					{ID: "c1", TS: ts.Add(2 * time.Second), Role: transcript.RoleSystem, Kind: transcript.KindCompaction, Text: "Summary: worked on the task."},
					{ID: "u2", TS: ts.Add(3 * time.Second), Role: transcript.RoleUser, Text: "thanks"},
					{ID: "a2", TS: ts.Add(4 * time.Second), Role: transcript.RoleAssistant, Text: fmt.Sprintf("done with task %d", s)},
				}
				if _, _, err := tx.AppendMessages(t, msgs); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
		_, err = v.Update(vault.TxOptions{}, func(tx *vault.Tx) error {
			for s := start; s < end; s++ {
				t := transcript.Ref{Agent: "default", Session: fmt.Sprintf("s%05d", s)}
				thread := fmt.Sprintf("project:p%02d", s%50)
				n, _, err := lineage.Summarize(tx, t, lineage.SummaryOptions{Thread: thread})
				if err != nil {
					return err
				}
				if s == sessions/2 {
					someNode = n.ID
				}
				if _, _, err := lineage.Compact(tx, t, lineage.CompactOptions{Thread: thread}); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	return root, someNode
}

// BenchmarkExpand times `memvault expand` as a whole process on a vault with
// 10k nodes (5k sessions), against grep finding the node's file by id in the
// same vault: the cost of the plainest possible lookup.
func BenchmarkExpand(b *testing.B) {
	bin := memvaultBinary(b)
	sessions := 5000
	if s := os.Getenv("MEMVAULT_BENCH_SESSIONS"); s != "" {
		fmt.Sscan(s, &sessions)
	}
	root, id := lineageVault(b, sessions)
	run(b, root, bin, "--vault", root, "nodes", "--json") // warm the node cache, as any earlier command would
	b.Run("memvault-expand", func(b *testing.B) {
		timeProcesses(b, func(int) *exec.Cmd {
			return exec.Command(bin, "--vault", root, "expand", id, "--json")
		})
	})
	b.Run("grep-node", func(b *testing.B) {
		timeProcesses(b, func(int) *exec.Cmd {
			return exec.Command("grep", "-rl", "--include=*.md", id, filepath.Join(root, "nodes"))
		})
	})
}

// BenchmarkImport measures import throughput of a large Claude Code
// transcript made by repeating the captured fixture with fresh ids.
func BenchmarkImport(b *testing.B) {
	bin := memvaultBinary(b)
	src := filepath.Join(b.TempDir(), "big.jsonl")
	fixture, err := os.ReadFile("../../../fixtures/transcripts/claude-code/session.jsonl")
	if err != nil {
		b.Fatal(err)
	}
	target := int64(50 << 20)
	if s := os.Getenv("MEMVAULT_BENCH_IMPORT_MB"); s != "" {
		var mb int64
		fmt.Sscan(s, &mb)
		target = mb << 20
	}
	f, err := os.Create(src)
	if err != nil {
		b.Fatal(err)
	}
	var written int64
	for i := 0; written < target; i++ {
		// fresh uuids per copy, so every message is new
		chunk := strings.ReplaceAll(string(fixture), `"uuid":"`, fmt.Sprintf(`"uuid":"r%d-`, i))
		n, _ := f.WriteString(chunk)
		written += int64(n)
	}
	f.Close()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		root := filepath.Join(b.TempDir(), ".memory")
		run(b, "", bin, "--vault", root, "init")
		b.StartTimer()
		start := time.Now()
		out, err := exec.Command(bin, "--vault", root, "transcript", "import", "--format", "claude-code",
			"--session", "big", "--json", src).CombinedOutput()
		if err != nil {
			b.Fatalf("import: %v\n%s", err, out)
		}
		elapsed := time.Since(start)
		var added int
		if k := strings.Index(string(out), `"added": `); k >= 0 {
			fmt.Sscan(string(out[k+9:]), &added)
		}
		b.ReportMetric(float64(added)/elapsed.Seconds(), "msgs/s")
		b.ReportMetric(float64(written)/(1<<20)/elapsed.Seconds(), "MB/s")
	}
}
