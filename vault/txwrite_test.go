package vault

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// journalFixture writes three transcript parts and a journal of generation
// "g1" with one line per part, each part holding all its line names. It
// returns the lines' offsets.
func journalFixture(t *testing.T, v *Vault) []int64 {
	t.Helper()
	journal := journalMagic + "g1\n"
	var offs []int64
	for i, name := range []string{"a", "b", "c"} {
		rel := "transcripts/" + v.Config.Agent + "/" + name + ".jsonl"
		p := filepath.Join(v.Root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(strings.Repeat("x", 10*(i+1)-1)+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		offs = append(offs, int64(len(journal)))
		journal += fmt.Sprintf("%s\t0\t%d\n", rel, 10*(i+1))
	}
	if err := os.MkdirAll(filepath.Dir(v.JournalPath()), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(v.JournalPath(), []byte(journal), 0o600); err != nil {
		t.Fatal(err)
	}
	return offs
}

// keptParts compacts the journal and returns the part names of the lines
// it kept, checking the new journal has a new generation.
func keptParts(t *testing.T, v *Vault) []string {
	t.Helper()
	if err := v.compactJournal(); err != nil {
		t.Fatal(err)
	}
	gen, lines, _ := v.ReadJournal("", 0)
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
		setup func(v *Vault, offs []int64) error
		want  []string
	}{
		{"no index folder", func(v *Vault, _ []int64) error { return nil }, nil},
		{"no coverage", func(v *Vault, _ []int64) error {
			return os.MkdirAll(filepath.Join(v.Root, IndexDir, TranscriptIndexName), 0o700)
		}, []string{"a", "b", "c"}},
		{"covered but one waiting", func(v *Vault, offs []int64) error {
			return v.SaveJournalCoverage(JournalCoverage{Gen: "g1", Seen: offs[2], Waiting: []int64{offs[0]}})
		}, []string{"a", "c"}},
		{"all read and covered", func(v *Vault, offs []int64) error {
			end, _ := os.Stat(v.JournalPath())
			return v.SaveJournalCoverage(JournalCoverage{Gen: "g1", Seen: end.Size()})
		}, nil},
		{"another generation", func(v *Vault, offs []int64) error {
			return v.SaveJournalCoverage(JournalCoverage{Gen: "g0", Seen: 1 << 20})
		}, []string{"a", "b", "c"}},
		{"torn", func(v *Vault, offs []int64) error {
			if err := v.SaveJournalCoverage(JournalCoverage{Gen: "g1", Seen: offs[2], Waiting: []int64{offs[1]}}); err != nil {
				return err
			}
			p := filepath.Join(v.Root, covered)
			data, _ := os.ReadFile(p)
			// Cut inside the waiting list: what is left would claim b.
			return os.WriteFile(p, data[:len(data)-2], 0o600)
		}, []string{"a", "b", "c"}},
		{"waiting out of order", func(v *Vault, offs []int64) error {
			if err := os.MkdirAll(filepath.Join(v.Root, IndexDir, TranscriptIndexName), 0o700); err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(v.Root, covered),
				fmt.Appendf(nil, "%s\tg1\t%d\t%d,%d\n", coverageMagic, offs[2], offs[1], offs[0]), 0o600)
		}, []string{"a", "b", "c"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := newVault(t)
			offs := journalFixture(t, v)
			if err := c.setup(v, offs); err != nil {
				t.Fatal(err)
			}
			if got := keptParts(t, v); !slices.Equal(got, c.want) {
				t.Fatalf("kept %q, want %q", got, c.want)
			}
		})
	}
}

// A kept line is clamped to its part's size: a part cut back or torn has no
// more to wait for.
func TestJournalCompactionClamps(t *testing.T) {
	v := newVault(t)
	journalFixture(t, v)
	if err := os.MkdirAll(filepath.Join(v.Root, IndexDir, TranscriptIndexName), 0o700); err != nil {
		t.Fatal(err)
	}
	c := filepath.Join(v.Root, "transcripts", v.Config.Agent, "c.jsonl")
	if err := os.Truncate(c, 5); err != nil {
		t.Fatal(err)
	}
	if err := v.compactJournal(); err != nil {
		t.Fatal(err)
	}
	_, lines, _ := v.ReadJournal("", 0)
	if len(lines) != 3 || lines[2].Before != 0 || lines[2].After != 5 {
		t.Fatalf("lines after the compaction: %+v; want c's clamped to 0..5", lines)
	}
}
