package merge

// Benchmarks of the merges the heads go through on every refresh, and of
// diffing at the sizes the vault meets: a head, a long file with scattered
// edits, a rewrite, and long runs of matching lines (the snakes).

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// headDoc builds a MEMORY.md-like head: sections with repeated blank lines
// and "- [ ]" items, the shape the merge sees on every refresh.
func headDoc(r *rand.Rand, rows int) []byte {
	var b strings.Builder
	b.WriteString("# MEMORY\n\n<!-- memvault -->\n")
	for s, title := range []string{"Constraints", "Blockers", "Commitments", "Next actions", "Threads", "Decisions", "Notes", "Log"} {
		fmt.Fprintf(&b, "\n## %s\n\n", title)
		for i := 0; i < rows; i++ {
			if s == 2 {
				fmt.Fprintf(&b, "- [ ] commitment %d (`e_%026d`)\n", r.IntN(rows*3), i)
			} else {
				fmt.Fprintf(&b, "- row %d of %s (`e_%026d`)\n", r.IntN(rows*3), title, i)
			}
		}
	}
	return []byte(b.String())
}

func editLines(r *rand.Rand, doc []byte, n int) []byte {
	lines := splitLines(doc)
	out := append([][]byte(nil), lines...)
	for range n {
		pos := r.IntN(len(out))
		switch r.IntN(3) {
		case 0:
			out = append(out[:pos], append([][]byte{[]byte(fmt.Sprintf("- new %d\n", r.IntN(1e6)))}, out[pos:]...)...)
		case 1:
			out = append(out[:pos], out[pos+1:]...)
		default:
			out[pos] = []byte("\n")
		}
	}
	var b []byte
	for _, l := range out {
		b = append(b, l...)
	}
	return b
}

type diffCase struct {
	name string
	a, b [][]byte
}

func diffCases() []diffCase {
	r := rand.New(rand.NewPCG(42, 42))
	var cs []diffCase
	head := headDoc(r, 30)
	cs = append(cs, diffCase{"head", splitLines(head), splitLines(editLines(r, head, 6))})
	long := randomFile(r, 3000)
	o := long
	for range 40 {
		o = mutate(r, o)
	}
	cs = append(cs, diffCase{"long", splitLines(long), splitLines(o)})
	rw := randomFile(r, 2500)
	cs = append(cs, diffCase{"rewrite", splitLines(rw), splitLines(randomFile(r, 2500))})
	var sb []byte
	for range 36000 {
		sb = append(sb, wideLine(r)...)
	}
	cs = append(cs, diffCase{"snakes", splitLines(sb), splitLines(blockEdit(r, sb, 30))})
	return cs
}

func BenchmarkDiffLines(b *testing.B) {
	for _, c := range diffCases() {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				diffLines(c.a, c.b)
			}
		})
	}
}

func BenchmarkLinesHead(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 9))
	base := headDoc(r, 30)
	ours, theirs := editLines(r, base, 4), editLines(r, base, 4)
	for b.Loop() {
		Lines(base, ours, theirs, Options{})
	}
}

func BenchmarkMarkdownHead(b *testing.B) {
	r := rand.New(rand.NewPCG(2, 9))
	base := headDoc(r, 30)
	ours, theirs := editLines(r, base, 4), editLines(r, base, 8)
	opts := MarkdownOptions{AppendOnly: []string{"Log"}}
	for b.Loop() {
		Markdown(base, ours, theirs, opts)
	}
}

// BenchmarkMarkdownHeadRows is BenchmarkMarkdownHead with the options a
// refresh settles a conflict with: the same merge, then the conflicting
// sections row by row.
func BenchmarkMarkdownHeadRows(b *testing.B) {
	r := rand.New(rand.NewPCG(2, 9))
	base := headDoc(r, 30)
	ours, theirs := editLines(r, base, 4), editLines(r, base, 8)
	opts := MarkdownOptions{AppendOnly: []string{"Log"}, KeepInsertions: true, MergeRows: true, RowKey: idKey}
	for b.Loop() {
		Markdown(base, ours, theirs, opts)
	}
}
