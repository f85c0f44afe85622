package tjournal

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/memvault/memvault/vault/fileio"
)

// journalFixture writes three transcript parts and a journal of generation
// "g1" with one line per part, each part holding all its line names. It
// returns the lines' offsets.
func journalFixture(t *testing.T, root string) []int64 {
	t.Helper()
	journal := journalMagic + "g1\n"
	var offs []int64
	for i, name := range []string{"a", "b", "c"} {
		rel := "transcripts/" + "agent" + "/" + name + ".jsonl"
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(strings.Repeat("x", 10*(i+1)-1)+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		offs = append(offs, int64(len(journal)))
		journal += fmt.Sprintf("%s\t0\t%d\n", rel, 10*(i+1))
	}
	if err := os.MkdirAll(filepath.Dir(Path(root)), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(Path(root), []byte(journal), 0o600); err != nil {
		t.Fatal(err)
	}
	return offs
}

// keptParts compacts the journal and returns the part names of the lines
// it kept, checking the new journal has a new generation.
func keptParts(t *testing.T, root string) []string {
	t.Helper()
	if err := compact(fileio.At(root), root); err != nil {
		t.Fatal(err)
	}
	gen, lines, _ := Read(fileio.At(root), root, "", 0)
	if gen == "g1" || gen == "" {
		t.Fatalf("compacted journal of generation %q", gen)
	}
	var out []string
	for _, l := range lines {
		out = append(out, strings.TrimSuffix(filepath.Base(l.Rel), ".jsonl"))
	}
	return out
}

// The compaction drops only what a coverage file of the journal's own
// generation claims; with no file, a torn one, one of another generation or
// one left from before the index was built again (whose folder removal
// took it), it keeps every line, and with no transcript index folder none.
func TestJournalCompactionByCoverage(t *testing.T) {
	covered := filepath.Join(IndexDir, TranscriptIndexName, coverageName)
	cases := []struct {
		name  string
		setup func(root string, offs []int64) error
		want  []string
	}{
		{"no index folder", func(root string, _ []int64) error { return nil }, nil},
		{"no coverage", func(root string, _ []int64) error {
			return os.MkdirAll(filepath.Join(root, IndexDir, TranscriptIndexName), 0o700)
		}, []string{"a", "b", "c"}},
		{"covered but one waiting", func(root string, offs []int64) error {
			return SaveCoverage(fileio.At(root), root, Coverage{Gen: "g1", Seen: offs[2], Waiting: []int64{offs[0]}})
		}, []string{"a", "c"}},
		{"all read and covered", func(root string, offs []int64) error {
			end, _ := os.Stat(Path(root))
			return SaveCoverage(fileio.At(root), root, Coverage{Gen: "g1", Seen: end.Size()})
		}, nil},
		{"another generation", func(root string, offs []int64) error {
			return SaveCoverage(fileio.At(root), root, Coverage{Gen: "g0", Seen: 1 << 20})
		}, []string{"a", "b", "c"}},
		{"torn", func(root string, offs []int64) error {
			if err := SaveCoverage(fileio.At(root), root, Coverage{Gen: "g1", Seen: offs[2], Waiting: []int64{offs[1]}}); err != nil {
				return err
			}
			p := filepath.Join(root, covered)
			data, _ := os.ReadFile(p)
			// Cut inside the waiting list: what is left would claim b.
			return os.WriteFile(p, data[:len(data)-2], 0o600)
		}, []string{"a", "b", "c"}},
		{"waiting out of order", func(root string, offs []int64) error {
			if err := os.MkdirAll(filepath.Join(root, IndexDir, TranscriptIndexName), 0o700); err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(root, covered),
				fmt.Appendf(nil, "%s\tg1\t%d\t%d,%d\n", coverageMagic, offs[2], offs[1], offs[0]), 0o600)
		}, []string{"a", "b", "c"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			offs := journalFixture(t, root)
			if err := c.setup(root, offs); err != nil {
				t.Fatal(err)
			}
			if got := keptParts(t, root); !slices.Equal(got, c.want) {
				t.Fatalf("kept %q, want %q", got, c.want)
			}
		})
	}
}

// A kept line is clamped to its part's size: a part cut back or torn has no
// more to wait for.
func TestJournalCompactionClamps(t *testing.T) {
	root := t.TempDir()
	journalFixture(t, root)
	if err := os.MkdirAll(filepath.Join(root, IndexDir, TranscriptIndexName), 0o700); err != nil {
		t.Fatal(err)
	}
	c := filepath.Join(root, "transcripts", "agent", "c.jsonl")
	if err := os.Truncate(c, 5); err != nil {
		t.Fatal(err)
	}
	if err := compact(fileio.At(root), root); err != nil {
		t.Fatal(err)
	}
	_, lines, _ := Read(fileio.At(root), root, "", 0)
	if len(lines) != 3 || lines[2].Before != 0 || lines[2].After != 5 {
		t.Fatalf("lines after the compaction: %+v; want c's clamped to 0..5", lines)
	}
}
