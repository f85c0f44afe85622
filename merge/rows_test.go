package merge

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
)

// idKey is the row key of a head's line: the id it ends with.
var idRe = regexp.MustCompile("`([en]_[0-9A-Za-z]+)`\\)?$")

func idKey(l []byte) string {
	if m := idRe.FindSubmatch(l); m != nil {
		return string(m[1])
	}
	return ""
}

var rowOpts = MarkdownOptions{KeepInsertions: true, MergeRows: true, RowKey: idKey}

func TestMergeRows(t *testing.T) {
	const head = "# M\n\n## Decisions\n\n"
	cases := []struct {
		name, base, ours, theirs, want string
		rows                           []RowConflict // nil: clean
	}{{
		// The freeze of issue 34: the person added a note to a decision;
		// the render put a new one on top and dropped the oldest.
		name:   "a new row beside a row the person rewrote",
		base:   head + "- d1 (`e_1`)\n- d0 (`e_0`)\n",
		ours:   head + "- d1, with a 64 MiB cap (`e_1`)\n- d0 (`e_0`)\n",
		theirs: head + "- d2 (`e_2`)\n- d1 (`e_1`)\n",
		want:   head + "- d2 (`e_2`)\n- d1, with a 64 MiB cap (`e_1`)\n",
	}, {
		name:   "a row the person deleted stays deleted",
		base:   head + "- d1 (`e_1`)\n- d0 (`e_0`)\n",
		ours:   head + "- d1 but mine (`e_1`)\n",
		theirs: head + "- d2 (`e_2`)\n- d1 (`e_1`)\n- d0 (`e_0`)\n",
		want:   head + "- d2 (`e_2`)\n- d1 but mine (`e_1`)\n",
	}, {
		name:   "a row the person deleted and the render changed stays deleted, and is reported",
		base:   head + "- d1 (`e_1`)\n- d0 (`e_0`)\n",
		ours:   head + "- d1 but mine (`e_1`)\n",
		theirs: head + "- d2 (`e_2`)\n- d1 (`e_1`)\n- d0, superseded (`e_0`)\n",
		want:   head + "- d2 (`e_2`)\n- d1 but mine (`e_1`)\n",
		rows:   []RowConflict{{Row: "e_0", Theirs: "- d0, superseded (`e_0`)"}},
	}, {
		name:   "a row both rewrote keeps the person's text, and is reported",
		base:   head + "- d1 (`e_1`)\n",
		ours:   head + "- d1, said my way (`e_1`)\n",
		theirs: head + "- d2 (`e_2`)\n- d1 [clipped] (`e_1`)\n",
		want:   head + "- d2 (`e_2`)\n- d1, said my way (`e_1`)\n",
		rows:   []RowConflict{{Row: "e_1", Yours: "- d1, said my way (`e_1`)", Theirs: "- d1 [clipped] (`e_1`)"}},
	}, {
		name:   "a row the person rewrote and the render dropped stays, and is reported",
		base:   head + "- d1 (`e_1`)\n- d0 (`e_0`)\n",
		ours:   head + "- d1 (`e_1`)\n- d0 as I see it (`e_0`)\n",
		theirs: head + "- d2 (`e_2`)\n- d1 (`e_1`)\n",
		want:   head + "- d2 (`e_2`)\n- d1 (`e_1`)\n- d0 as I see it (`e_0`)\n",
		rows:   []RowConflict{{Row: "e_0", Yours: "- d0 as I see it (`e_0`)"}},
	}, {
		// Same lines changed both ways, the person's without an id: the
		// person's text and the render's new row, and a report.
		name:   "a line both replaced",
		base:   "# M\n\n## Next actions\n\n- write the tests (`e_1`)\n",
		ours:   "# M\n\n## Next actions\n\n- person: first the demo\n",
		theirs: "# M\n\n## Next actions\n\n- the second next (`e_2`)\n",
		want:   "# M\n\n## Next actions\n\n- the second next (`e_2`)\n- person: first the demo\n",
		rows:   []RowConflict{{Row: "e_1", Yours: "- person: first the demo"}}, // the render dropped e_1 for e_2
	}, {
		name:   "the person's own rows stay, the render's come first",
		base:   head + "- d1 (`e_1`)\n- d0 (`e_0`)\n",
		ours:   head + "- my own rule\n- d1 (`e_1`), amended\n- d0 (`e_0`)\n",
		theirs: head + "- d3 (`e_3`)\n- d2 (`e_2`)\n- d1 (`e_1`)\n",
		want:   head + "- d3 (`e_3`)\n- d2 (`e_2`)\n- my own rule\n- d1 (`e_1`), amended\n",
	}, {
		name:   "a file turned CRLF takes the render's rows with CRLF",
		base:   head + "- d1 (`e_1`)\n- d0 (`e_0`)\n",
		ours:   strings.ReplaceAll(head+"- d1, mine (`e_1`)\n- d0 (`e_0`)\n", "\n", "\r\n"),
		theirs: head + "- d2 (`e_2`)\n- d1 (`e_1`)\n",
		want:   strings.ReplaceAll(head+"- d2 (`e_2`)\n- d1, mine (`e_1`)\n", "\n", "\r\n"),
	}, {
		name:   "a section the person deleted comes back with the new rows only",
		base:   "# M\n\n## Blockers\n\n- b (`e_9`)\n\n## Decisions\n\n- d1 (`e_1`)\n- d0 (`e_0`)\n\n## Notes\n\n- n (`e_7`)\n",
		ours:   "# M\n\n## Blockers\n\n- b (`e_9`)\n- my blocker\n\n## Notes\n\n- n (`e_7`)\n",
		theirs: "# M\n\n## Blockers\n\n- b2 (`e_8`)\n- b (`e_9`)\n\n## Decisions\n\n- d2 (`e_2`)\n- d1 (`e_1`)\n- d0 (`e_0`)\n\n## Notes\n\n- n (`e_7`)\n",
		want:   "# M\n\n## Blockers\n\n- b2 (`e_8`)\n- b (`e_9`)\n- my blocker\n\n## Decisions\n\n- d2 (`e_2`)\n\n## Notes\n\n- n (`e_7`)\n",
	}, {
		name:   "a section the person deleted stays deleted when no row is added",
		base:   "# M\n\n## Decisions\n\n- d1 (`e_1`)\n- d0 (`e_0`)\n\n## Notes\n\n- n (`e_7`)\n",
		ours:   "# M\n\n## Notes\n\n- n (`e_7`)\n",
		theirs: "# M\n\n## Decisions\n\n- d1 (`e_1`)\n\n## Notes\n\n- n (`e_7`)\n",
		want:   "# M\n\n## Notes\n\n- n (`e_7`)\n",
	}, {
		name:   "a section the person renamed takes the render's changes under their heading",
		base:   "# M\n\n## Decisions\n\n- d1 (`e_1`)\n- d0 (`e_0`)\n\n## Notes\n\n- n (`e_7`)\n",
		ours:   "# M\n\n## What we decided\n\n- d1 (`e_1`)\n- d0 (`e_0`)\n\n## Notes\n\n- n (`e_7`)\n",
		theirs: "# M\n\n## Decisions\n\n- d2 (`e_2`)\n- d1 (`e_1`)\n\n## Notes\n\n- n (`e_7`)\n",
		want:   "# M\n\n## What we decided\n\n- d2 (`e_2`)\n- d1 (`e_1`)\n\n## Notes\n\n- n (`e_7`)\n",
	}, {
		name:   "a pinned section is never rewritten",
		base:   head + "- d1 (`e_1`)\n",
		ours:   "# M\n\n## Decisions " + KeepMarker + "\n\n- d1, mine (`e_1`)\n",
		theirs: head + "- d2 (`e_2`)\n- d1 (`e_1`)\n",
		want:   "# M\n\n## Decisions " + KeepMarker + "\n\n- d1, mine (`e_1`)\n",
	}, {
		name:   "no base: the render's rows the person lacks come in, their text stands",
		base:   "",
		ours:   head + "- d1, mine (`e_1`)\n- my line\n",
		theirs: head + "- d2 (`e_2`)\n- d1 (`e_1`)\n",
		want:   head + "- d2 (`e_2`)\n- d1, mine (`e_1`)\n- my line\n",
		rows:   []RowConflict{{Row: "e_1", Yours: "- d1, mine (`e_1`)", Theirs: "- d1 (`e_1`)"}},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Markdown([]byte(c.base), []byte(c.ours), []byte(c.theirs), rowOpts)
			if err != nil {
				t.Fatal(err)
			}
			if string(got.Merged) != c.want {
				t.Errorf("merged\n%q\nwant\n%q", got.Merged, c.want)
			}
			var rows []RowConflict
			for _, s := range got.Sections {
				if len(s.Rows) == 0 {
					t.Errorf("section %q reported without rows", s.Heading)
				}
				rows = append(rows, s.Rows...)
			}
			if fmt.Sprint(rows) != fmt.Sprint(c.rows) {
				t.Errorf("rows in conflict %+v, want %+v", rows, c.rows)
			}
		})
	}
}

// Without MergeRows the same edits conflict and freeze the section: the
// person's text, none of the render's rows. The cases above are no toys.
func TestMergeRowsCasesConflictWithout(t *testing.T) {
	base := "# M\n\n## Decisions\n\n- d1 (`e_1`)\n- d0 (`e_0`)\n"
	ours := "# M\n\n## Decisions\n\n- d1, with a 64 MiB cap (`e_1`)\n- d0 (`e_0`)\n"
	theirs := "# M\n\n## Decisions\n\n- d2 (`e_2`)\n- d1 (`e_1`)\n"
	got, err := Markdown([]byte(base), []byte(ours), []byte(theirs), MarkdownOptions{KeepInsertions: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Sections) != 1 || string(got.Merged) != ours {
		t.Fatalf("without MergeRows: %d conflicts,\n%s", len(got.Sections), got.Merged)
	}
}

// The mark names the person's side: the render moving on keeps it, an
// edit of theirs changes it.
func TestConflictMark(t *testing.T) {
	const head = "# M\n\n## Decisions\n\n"
	mark := func(ours, theirs string) string {
		r, err := Markdown([]byte(head+"- d1 (`e_1`)\n"), []byte(head+ours), []byte(head+theirs), rowOpts)
		if err != nil || len(r.Sections) != 1 {
			t.Fatalf("%v %+v", err, r.Sections)
		}
		return r.Sections[0].Mark()
	}
	a := mark("- d1, mine (`e_1`)\n", "- d1, v2 (`e_1`)\n")
	b := mark("- d1, mine (`e_1`)\n", "- d2 (`e_2`)\n- d1, v3 (`e_1`)\n")
	c := mark("- d1, mine again (`e_1`)\n", "- d1, v3 (`e_1`)\n")
	if a != b || a == c {
		t.Errorf("marks %s %s %s: want the first two equal, the third not", a, b, c)
	}
}

// TestMergeRowsRandom plays random sections of rows with ids, edited at
// random on both sides, and checks what a person may count on: their own
// lines are never lost, a row they deleted never comes back, a row the
// render added that they did not touch is there in the render's order, a
// row the render removed is gone unless they rewrote it, and a row both
// changed is reported.
func TestMergeRowsRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(34, 1))
	for round := range 3000 {
		n := rng.IntN(6)
		var base []string
		for i := range n {
			base = append(base, fmt.Sprintf("- row %d (`e_%d`)\n", i, i))
		}
		next := n
		var ours, theirs []string
		mine := map[string]bool{}    // lines the person wrote
		deleted := map[string]bool{} // row ids the person deleted
		rewrote := map[string]bool{} // row ids the person rewrote
		removed := map[string]bool{} // lines the render removed
		changed := map[string]bool{} // row ids the render changed
		var added []string           // lines the render added, in order
		for i, l := range base {
			id := fmt.Sprintf("e_%d", i)
			switch rng.IntN(5) {
			case 0:
				deleted[id] = true
			case 1:
				nl := fmt.Sprintf("- row %d as I put it %d (`%s`)\n", i, round, id)
				ours, mine[nl], rewrote[id] = append(ours, nl), true, true
			case 2:
				nl := fmt.Sprintf("- my line %d.%d\n", round, i)
				ours, mine[nl] = append(ours, nl, l), true
			default:
				ours = append(ours, l)
			}
			switch rng.IntN(5) {
			case 0:
				removed[l] = true
			case 1:
				nl := fmt.Sprintf("- row %d, changed (`%s`)\n", i, id)
				theirs, changed[id] = append(theirs, nl), true
				removed[l] = true
				added = append(added, nl)
			case 2:
				nl := fmt.Sprintf("- row %d (`e_%d`)\n", next, next)
				next++
				theirs, added = append(theirs, nl, l), append(added, nl)
			default:
				theirs = append(theirs, l)
			}
		}
		if rng.IntN(2) == 0 {
			nl := fmt.Sprintf("- row %d (`e_%d`)\n", next, next)
			theirs, added = append(theirs, nl), append(added, nl)
		}
		b, o, th := strings.Join(base, ""), strings.Join(ours, ""), strings.Join(theirs, "")
		got, rows := mergeRows([]byte(b), []byte(o), []byte(th), idKey)
		fail := func(f string, a ...any) {
			t.Fatalf("round %d: %s\nbase:\n%s\nours:\n%s\ntheirs:\n%s\ngot:\n%s\nrows %+v", round, fmt.Sprintf(f, a...), b, o, th, got, rows)
		}
		lines := strings.SplitAfter(string(got), "\n")
		has := map[string]int{}
		for _, l := range lines {
			has[l]++
		}
		for l := range mine {
			if has[l] != 1 {
				fail("the person's line %q is there %d times", l, has[l])
			}
		}
		for _, l := range lines {
			if id := idKey([]byte(strings.TrimSpace(l))); deleted[id] && l != "" {
				fail("row %s, deleted by the person, is back: %q", id, l)
			}
			if removed[l] {
				fail("a line the render removed stayed: %q", l)
			}
		}
		pos := -1
		for _, l := range added {
			id := idKey([]byte(strings.TrimSpace(l)))
			if deleted[id] || rewrote[id] {
				continue
			}
			i := strings.Index(string(got), l)
			if i < 0 {
				fail("the render's row %q is missing", l)
			}
			if i < pos {
				fail("the render's row %q is out of the render's order", l)
			}
			pos = i
		}
		reported := map[string]bool{}
		for _, r := range rows {
			reported[r.Row] = true
		}
		for id := range changed {
			if (deleted[id] || rewrote[id]) && !reported[id] {
				fail("row %s, changed on both sides, is not reported", id)
			}
		}
	}
}

// TestMarkdownInvariantsMergeRows: with MergeRows, a merge of nothing
// changed gives the input back, a change on one side only is taken whole,
// and the result never holds conflict markers.
func TestMarkdownInvariantsMergeRows(t *testing.T) {
	r := rand.New(rand.NewPCG(34, 13))
	for range 1500 {
		base := randomMarkdown(r)
		ours, theirs := mutateMarkdown(r, base), mutateMarkdown(r, base)
		for _, doc := range [][]byte{base, ours, theirs} {
			res, err := Markdown(doc, doc, doc, rowOpts)
			if err != nil || !res.Clean() || !bytes.Equal(res.Merged, doc) {
				t.Fatalf("merge(a,a,a) of %q = %q, %v", doc, res.Merged, err)
			}
		}
		if !bytes.Contains(base, []byte(KeepMarker)) {
			res, err := Markdown(base, base, theirs, rowOpts)
			if err != nil || !res.Clean() || !bytes.Equal(res.Merged, theirs) {
				t.Fatalf("change of theirs only: %q, %v", res.Merged, err)
			}
		}
		res, err := Markdown(base, ours, theirs, rowOpts)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(res.Merged, []byte("\n=======\n")) && !bytes.Contains(ours, []byte("\n=======\n")) && !bytes.Contains(theirs, []byte("\n=======\n")) {
			t.Fatalf("conflict markers in %q", res.Merged)
		}
	}
}

// FuzzMarkdownMergeRows: with MergeRows, any input merges without error
// or markers of its own, a merge of nothing changed gives the input back,
// a change of theirs alone is taken whole, and every line ours added
// (outside pinned sections, which stay as they are) is in the result.
func FuzzMarkdownMergeRows(f *testing.F) {
	for _, c := range mdCases {
		f.Add([]byte(c.base), []byte(c.ours), []byte(c.theirs))
	}
	f.Add([]byte("# M\n\n## D\n\n- a (`e_1`)\n"), []byte("# M\n\n## E\n\n- a (`e_1`)\n- b\n"), []byte("# M\n\n## D\n\n- c (`e_2`)\n- a (`e_1`)\n"))
	f.Fuzz(func(t *testing.T, base, ours, theirs []byte) {
		for _, doc := range [][]byte{base, ours, theirs} {
			res, err := Markdown(doc, doc, doc, rowOpts)
			if err != nil || !res.Clean() || !bytes.Equal(res.Merged, doc) {
				t.Fatalf("merge(a,a,a) of %q = %q, %v", doc, res.Merged, err)
			}
		}
		if !bytes.Contains(base, []byte(KeepMarker)) {
			if res, err := Markdown(base, base, theirs, rowOpts); err != nil || !res.Clean() || !bytes.Equal(res.Merged, theirs) {
				t.Fatalf("change of theirs only: %q, %v", res.Merged, err)
			}
		}
		res, err := Markdown(base, ours, theirs, rowOpts)
		if err != nil {
			t.Fatal(err)
		}
		if res.Conflicts != len(res.Sections) {
			t.Fatalf("Conflicts %d, Sections %d", res.Conflicts, len(res.Sections))
		}
		got := lineCounts(splitLines(res.Merged))
		had := lineCounts(splitLines(base))
		for _, l := range splitLines(ours) {
			if k := lineKey(l); k != "" && had[k] == 0 && got[k] == 0 {
				t.Fatalf("our line %q is lost:\nbase %q\nours %q\ntheirs %q\ngot %q", k, base, ours, theirs, res.Merged)
			}
		}
	})
}
