package merge

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"
)

const headBase = `# Continuity
intro line

## Active Goal
Ship the merge package.

## Just Completed
- wrote xdiff
- wrote tests

## Next Actions
- review
- release

## Notes
free text
`

func TestSplitSectionsLossless(t *testing.T) {
	docs := []string{
		"",
		"no headings at all\n",
		headBase,
		"Title\n=====\n\ntext\n\nSub\n---\nmore",
		"---\ntitle: front\n---\n# Real\nbody\n",
		"```\n# not a heading\n```\n# heading\n",
		"> # quoted heading\n\n- # list heading\n\n## top\n",
		"#\n##   \n### ###\nx",
		"#nospace\n====\n",
		"\r\n# crlf\r\ntext\r\n## sub\r\n",
		"\x00# \xff\n\xc3\x28\n#\t\x00\n",
	}
	for _, d := range docs {
		secs := splitSections([]byte(d))
		var got []byte
		for _, s := range secs {
			if s.head > len(s.text) || s.head < 0 {
				t.Errorf("%q: section %q head %d outside text of %d bytes", d, s.path, s.head, len(s.text))
			}
			got = append(got, s.text...)
		}
		if string(got) != d {
			t.Errorf("sections of %q concatenate to %q", d, got)
		}
	}
}

func TestSplitSectionsKeys(t *testing.T) {
	doc := "pre\n# A\n## B\n## B\n# C\n## B\nSetext\n------\n### *Em* `code`\n"
	var paths, titles []string
	keys := map[string]bool{}
	for _, s := range splitSections([]byte(doc)) {
		paths = append(paths, s.path)
		titles = append(titles, s.title)
		if keys[s.key] {
			t.Errorf("duplicate key %q", s.key)
		}
		keys[s.key] = true
	}
	want := []string{"", "A", "A > B", "A > B", "C", "C > B", "C > Setext", "C > Setext > Em code"}
	if strings.Join(paths, "|") != strings.Join(want, "|") {
		t.Errorf("paths = %q, want %q", paths, want)
	}
}

func TestSplitSectionsFrontMatter(t *testing.T) {
	secs := splitSections([]byte("---\ntitle: x\n---\nbody\n# H\n"))
	if len(secs) != 2 || string(secs[0].text) != "---\ntitle: x\n---\nbody\n" {
		t.Fatalf("front matter split wrongly: %+v", secs)
	}
}

type mdCase struct {
	name               string
	base, ours, theirs string
	opts               MarkdownOptions
	want               string
	conflicts          []ConflictKind
}

func replace(s, old, new string) string {
	if !strings.Contains(s, old) {
		panic("test fixture lacks " + old)
	}
	return strings.Replace(s, old, new, 1)
}

var mdCases = []mdCase{
	{
		name: "unchanged",
		base: headBase, ours: headBase, theirs: headBase,
		want: headBase,
	},
	{
		name:   "hand edit and render in different sections",
		base:   headBase,
		ours:   replace(headBase, "free text\n", "free text, edited by hand\n"),
		theirs: replace(headBase, "Ship the merge package.\n", "Ship the merge package today.\n"),
		want: replace(replace(headBase, "free text\n", "free text, edited by hand\n"),
			"Ship the merge package.\n", "Ship the merge package today.\n"),
	},
	{
		name:   "both edit one section on different lines",
		base:   headBase,
		ours:   replace(headBase, "- review\n", "- review carefully\n"),
		theirs: replace(headBase, "- release\n", "- release v1\n"),
		// Adjacent lines conflict in a line merge.
		want:      replace(headBase, "- review\n", "- review carefully\n"),
		conflicts: []ConflictKind{BothEdited},
	},
	{
		name:   "both edit one section on distant lines",
		base:   replace(headBase, "free text\n", "one\ntwo\nthree\nfour\nfive\n"),
		ours:   replace(headBase, "free text\n", "ONE\ntwo\nthree\nfour\nfive\n"),
		theirs: replace(headBase, "free text\n", "one\ntwo\nthree\nfour\nFIVE\n"),
		want:   replace(headBase, "free text\n", "ONE\ntwo\nthree\nfour\nFIVE\n"),
	},
	{
		name:   "append-only section takes the union",
		base:   headBase,
		ours:   replace(headBase, "- wrote tests\n", "- wrote tests\n- by hand: fixed typo\n"),
		theirs: replace(headBase, "- wrote tests\n", "- wrote tests\n- rendered: ran fuzz\n"),
		opts:   MarkdownOptions{AppendOnly: []string{"just completed"}},
		want:   replace(headBase, "- wrote tests\n", "- wrote tests\n- by hand: fixed typo\n- rendered: ran fuzz\n"),
	},
	{
		name:   "append-only union respects lines the person deleted",
		base:   headBase,
		ours:   replace(headBase, "- wrote xdiff\n- wrote tests\n", "- wrote tests\n- mine\n"),
		theirs: replace(headBase, "- wrote tests\n", "- wrote tests\n- theirs\n"),
		opts:   MarkdownOptions{AppendOnly: []string{"Just Completed"}},
		want:   replace(headBase, "- wrote xdiff\n- wrote tests\n", "- wrote tests\n- mine\n- theirs\n"),
	},
	{
		name:   "append-only with one side changed takes that side",
		base:   headBase,
		ours:   headBase,
		theirs: replace(headBase, "- wrote xdiff\n", ""),
		opts:   MarkdownOptions{AppendOnly: []string{"Just Completed"}},
		want:   replace(headBase, "- wrote xdiff\n", ""),
	},
	{
		name:   "kept section is never rewritten",
		base:   headBase,
		ours:   replace(headBase, "free text\n", "free text\n"+KeepMarker+"\nmine\n"),
		theirs: replace(headBase, "free text\n", "rendered text\n"),
		want:   replace(headBase, "free text\n", "free text\n"+KeepMarker+"\nmine\n"),
	},
	{
		name:   "kept section survives when ours is otherwise the base",
		base:   replace(headBase, "free text\n", KeepMarker+"\nfree text\n"),
		ours:   replace(headBase, "free text\n", KeepMarker+"\nfree text\n"),
		theirs: replace(headBase, "free text\n", "rendered text\n"),
		want:   replace(headBase, "free text\n", KeepMarker+"\nfree text\n"),
	},
	{
		name:   "keep marker covers nested sections",
		base:   headBase + "### Sub\nold\n",
		ours:   replace(headBase, "## Notes\n", "## Notes "+KeepMarker+"\n") + "### Sub\nold\n",
		theirs: headBase + "### Sub\nnew\n",
		want:   replace(headBase, "## Notes\n", "## Notes "+KeepMarker+"\n") + "### Sub\nold\n",
	},
	{
		name:   "kept section is not deleted by the render",
		base:   headBase,
		ours:   replace(headBase, "free text\n", "free text "+KeepMarker+"\n"),
		theirs: replace(headBase, "## Notes\nfree text\n", ""),
		want:   replace(headBase, "free text\n", "free text "+KeepMarker+"\n"),
	},
	{
		name:   "section deleted by the person stays deleted",
		base:   headBase,
		ours:   replace(headBase, "## Next Actions\n- review\n- release\n\n", ""),
		theirs: headBase,
		want:   replace(headBase, "## Next Actions\n- review\n- release\n\n", ""),
	},
	{
		name:      "section deleted by the person and updated by the render conflicts",
		base:      headBase,
		ours:      replace(headBase, "## Next Actions\n- review\n- release\n\n", ""),
		theirs:    replace(headBase, "- release\n", "- release soon\n"),
		want:      replace(headBase, "## Next Actions\n- review\n- release\n\n", ""),
		conflicts: []ConflictKind{OursDeleted},
	},
	{
		name:   "section dropped by the render goes when untouched",
		base:   headBase,
		ours:   headBase,
		theirs: replace(headBase, "## Next Actions\n- review\n- release\n\n", ""),
		want:   replace(headBase, "## Next Actions\n- review\n- release\n\n", ""),
	},
	{
		name:      "section dropped by the render but edited by hand conflicts",
		base:      headBase,
		ours:      replace(headBase, "- review\n", "- review twice\n"),
		theirs:    replace(headBase, "## Next Actions\n- review\n- release\n\n", ""),
		want:      replace(headBase, "- review\n", "- review twice\n"),
		conflicts: []ConflictKind{TheirsDeleted},
	},
	{
		name:   "section added by the render lands after its predecessor",
		base:   headBase,
		ours:   replace(headBase, "free text\n", "free text by hand\n"),
		theirs: replace(headBase, "## Notes\n", "## Blockers\n- none\n\n## Notes\n"),
		want:   replace(replace(headBase, "free text\n", "free text by hand\n"), "## Notes\n", "## Blockers\n- none\n\n## Notes\n"),
	},
	{
		name:   "section added by hand is kept",
		base:   headBase,
		ours:   replace(headBase, "## Notes\n", "## Mine\nhand\n\n## Notes\n"),
		theirs: replace(headBase, "Ship the merge package.\n", "Ship it.\n"),
		want:   replace(replace(headBase, "## Notes\n", "## Mine\nhand\n\n## Notes\n"), "Ship the merge package.\n", "Ship it.\n"),
	},
	{
		name:   "new section after a last section without newline",
		base:   "# A\na",
		ours:   "# A\nA",
		theirs: "# A\na\n# B\nb\n",
		want:   "# A\nA\n# B\nb\n",
	},
	{
		name:   "preamble is a section",
		base:   "pre\n# A\na\n",
		ours:   "PRE\n# A\na\n",
		theirs: "pre\n# A\nA\n",
		want:   "PRE\n# A\nA\n",
	},
	{
		name:   "same heading twice is matched by rank",
		base:   "# Log\none\n# Log\ntwo\n",
		ours:   "# Log\nONE\n# Log\ntwo\n",
		theirs: "# Log\none\n# Log\nTWO\n",
		want:   "# Log\nONE\n# Log\nTWO\n",
	},
	{
		name:      "both add the same section differently",
		base:      "# A\n",
		ours:      "# A\n# New\nx\n",
		theirs:    "# A\n# New\ny\n",
		want:      "# A\n# New\nx\n",
		conflicts: []ConflictKind{BothEdited},
	},
	{
		name:      "peers: a section both edited holds git's markers",
		base:      "# A\na\n# B\nb\n",
		ours:      "# A\nx\n# B\nB\n",
		theirs:    "# A\ny\n# B\nb\n",
		opts:      MarkdownOptions{Peers: true},
		want:      "# A\n<<<<<<< ours\nx\n=======\ny\n>>>>>>> theirs\n# B\nB\n",
		conflicts: []ConflictKind{BothEdited},
	},
	{
		name:      "peers: deleted by one, edited by the other",
		base:      "# A\na\n# B\nb\n",
		ours:      "# A\na\n",
		theirs:    "# A\na\n# B\nbb\n",
		opts:      MarkdownOptions{Peers: true},
		want:      "# A\na\n<<<<<<< ours\n=======\n# B\nbb\n>>>>>>> theirs\n",
		conflicts: []ConflictKind{OursDeleted},
	},
	{
		name:   "peers: the keep marker pins nothing",
		base:   "# A " + KeepMarker + "\na\n",
		ours:   "# A " + KeepMarker + "\na\n",
		theirs: "# A " + KeepMarker + "\nb\n",
		opts:   MarkdownOptions{Peers: true},
		want:   "# A " + KeepMarker + "\nb\n",
	},
	{
		name:   "render reorders sections the person did not touch",
		base:   "# A\na\n# B\nb\n",
		ours:   "# A\na\n# B\nb\n",
		theirs: "# B\nb\n# A\na\n",
		want:   "# B\nb\n# A\na\n",
	},
}

func TestMarkdownTable(t *testing.T) {
	for _, c := range mdCases {
		t.Run(c.name, func(t *testing.T) {
			res, err := Markdown([]byte(c.base), []byte(c.ours), []byte(c.theirs), c.opts)
			if err != nil {
				t.Fatal(err)
			}
			if string(res.Merged) != c.want {
				t.Errorf("merged:\n%s\nwant:\n%s", res.Merged, c.want)
			}
			var kinds []ConflictKind
			for _, s := range res.Sections {
				kinds = append(kinds, s.Kind)
			}
			if len(kinds) != len(c.conflicts) {
				t.Fatalf("conflicts = %v, want %v", kinds, c.conflicts)
			}
			for i := range kinds {
				if kinds[i] != c.conflicts[i] {
					t.Errorf("conflict %d is %v, want %v", i, kinds[i], c.conflicts[i])
				}
			}
			if res.Conflicts != len(res.Sections) || res.Clean() != (len(c.conflicts) == 0) {
				t.Errorf("Conflicts = %d, Clean() = %v with %d sections", res.Conflicts, res.Clean(), len(res.Sections))
			}
		})
	}
}

func TestMarkdownConflictAlternatives(t *testing.T) {
	ours := replace(headBase, "- review\n", "- review carefully\n")
	theirs := replace(headBase, "- review\n", "- review later\n")
	res, err := Markdown([]byte(headBase), []byte(ours), []byte(theirs),
		MarkdownOptions{Options: Options{OursLabel: "hand", TheirsLabel: "render"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Sections) != 1 {
		t.Fatalf("got %d conflicts, want 1", len(res.Sections))
	}
	c := res.Sections[0]
	if c.Heading != "Continuity > Next Actions" {
		t.Errorf("heading = %q", c.Heading)
	}
	if string(c.Ours) != "## Next Actions\n- review carefully\n- release\n\n" ||
		string(c.Theirs) != "## Next Actions\n- review later\n- release\n\n" ||
		string(c.Base) != "## Next Actions\n- review\n- release\n\n" {
		t.Errorf("alternatives: base %q ours %q theirs %q", c.Base, c.Ours, c.Theirs)
	}
	wantMarked := "## Next Actions\n<<<<<<< hand\n- review carefully\n=======\n- review later\n>>>>>>> render\n- release\n\n"
	if string(c.Marked) != wantMarked {
		t.Errorf("marked = %q, want %q", c.Marked, wantMarked)
	}
	if string(res.Merged) != ours {
		t.Errorf("merged file does not keep the person's text:\n%s", res.Merged)
	}
}

// TestMarkdownUntouchedBytes checks that sections nobody changed come out
// byte for byte, odd spacing, trailing blanks and CRLF included.
func TestMarkdownUntouchedBytes(t *testing.T) {
	base := "pre  \r\n\r\n#   Odd   heading   ##\r\n\ttabbed\r\n\r\n\r\n" +
		"Setext\r\n======\r\n* item  \r\n\r\n## Change\r\nold\r\n"
	ours := base
	theirs := strings.Replace(base, "old\r\n", "new\r\n", 1)
	res, err := Markdown([]byte(base), []byte(ours), []byte(theirs), MarkdownOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if string(res.Merged) != theirs {
		t.Errorf("merged %q, want %q", res.Merged, theirs)
	}
	// The person edits the setext section; the render changes the last one.
	ours = strings.Replace(base, "* item  \r\n", "* item, edited  \r\n", 1)
	res, err = Markdown([]byte(base), []byte(ours), []byte(theirs), MarkdownOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Replace(theirs, "* item  \r\n", "* item, edited  \r\n", 1)
	if string(res.Merged) != want {
		t.Errorf("merged %q, want %q", res.Merged, want)
	}
	for _, s := range splitSections(res.Merged)[:2] {
		if !bytes.Contains([]byte(base), s.text) {
			t.Errorf("untouched section %q changed", s.text)
		}
	}
}

func TestMarkdownBadOptions(t *testing.T) {
	if _, err := Markdown(nil, nil, nil, MarkdownOptions{Options: Options{MarkerSize: -3}}); err == nil {
		t.Error("want an error for a negative marker size")
	}
}

// mdLines is the vocabulary of random markdown documents: headings of a
// few levels and names, both heading styles, and body lines.
var mdLines = []string{
	"# A\n", "## B\n", "## B\n", "### C\n", "# Log\n", "Set\n===\n",
	"text\n", "more text\n", "\n", "- item\n", "- other\n", "```\n", "> quote\n",
}

func randomMarkdown(r *rand.Rand) []byte {
	var b []byte
	for range r.IntN(14) {
		b = append(b, mdLines[r.IntN(len(mdLines))]...)
	}
	if len(b) > 0 && r.IntN(6) == 0 {
		b = b[:len(b)-1]
	}
	return b
}

func mutateMarkdown(r *rand.Rand, b []byte) []byte {
	lines := splitLines(b)
	out := append([][]byte(nil), lines...)
	for range r.IntN(4) {
		pos := r.IntN(len(out) + 1)
		line := []byte(mdLines[r.IntN(len(mdLines))])
		switch op := r.IntN(3); {
		case op == 0 || pos == len(out):
			out = append(out[:pos], append([][]byte{line}, out[pos:]...)...)
		case op == 1:
			out = append(out[:pos], out[pos+1:]...)
		default:
			out[pos] = line
		}
	}
	return bytes.Join(out, nil)
}

func TestMarkdownInvariantsRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 13))
	for range 1500 {
		base := randomMarkdown(r)
		checkMarkdownInvariants(t, base, mutateMarkdown(r, base), mutateMarkdown(r, base))
	}
}

// checkMarkdownInvariants holds for any input: a merge with nothing changed
// gives the input back, a change on one side only is taken whole (unless the
// person pinned a section), the preamble and sections are never mangled, and
// the merged text keeps ours wherever a conflict was reported.
func checkMarkdownInvariants(t *testing.T, base, ours, theirs []byte) {
	t.Helper()
	opts := MarkdownOptions{AppendOnly: []string{"Log"}}
	for _, doc := range [][]byte{base, ours, theirs} {
		res, err := Markdown(doc, doc, doc, opts)
		if err != nil || !res.Clean() || !bytes.Equal(res.Merged, doc) {
			t.Fatalf("merge(a,a,a) of %q = %q, %v, %v", doc, res.Merged, res.Sections, err)
		}
	}
	pinned := bytes.Contains(base, []byte(KeepMarker))
	for _, side := range []string{"ours", "theirs"} {
		x, y, want := ours, base, ours
		if side == "theirs" {
			x, y, want = base, theirs, theirs
		}
		if side == "theirs" && pinned {
			continue
		}
		res, err := Markdown(base, x, y, opts)
		if err != nil || !res.Clean() || !bytes.Equal(res.Merged, want) {
			t.Fatalf("change on %s only:\nbase %q\nours %q\ntheirs %q\ngot %q (%d conflicts, %v)",
				side, base, x, y, res.Merged, res.Conflicts, err)
		}
	}
	res, err := Markdown(base, ours, theirs, opts)
	if err != nil {
		t.Fatal(err)
	}
	if res.Conflicts != len(res.Sections) {
		t.Fatalf("Conflicts %d, Sections %d", res.Conflicts, len(res.Sections))
	}
	for _, c := range res.Sections {
		// The last section may have lost the final newline of its document.
		if c.Ours != nil && !bytes.Contains(res.Merged, bytes.TrimRight(c.Ours, "\r\n")) {
			t.Fatalf("conflicted section %q lost our text %q from %q", c.Heading, c.Ours, res.Merged)
		}
	}
}

func FuzzMarkdown(f *testing.F) {
	for _, c := range mdCases {
		f.Add([]byte(c.base), []byte(c.ours), []byte(c.theirs))
	}
	f.Add([]byte("\x00# \xff\n"), []byte("#\n##\n"), []byte("x\n===\n"+KeepMarker))
	f.Fuzz(func(t *testing.T, base, ours, theirs []byte) {
		checkMarkdownInvariants(t, base, ours, theirs)
	})
}
