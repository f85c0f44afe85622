package merge

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

type linesCase struct {
	name               string
	base, ours, theirs string
	opts               Options
	want               string
	conflicts          int
}

// linesCases pin git's behaviour on the situations a head file meets. The
// expected outputs were produced by git merge-file 2.39 and are checked
// against the git on PATH again at test time.
var linesCases = []linesCase{
	{
		name: "identical inputs",
		base: "a\nb\n", ours: "a\nb\n", theirs: "a\nb\n",
		want: "a\nb\n",
	},
	{
		name: "ours only",
		base: "a\nb\nc\n", ours: "a\nB\nc\n", theirs: "a\nb\nc\n",
		want: "a\nB\nc\n",
	},
	{
		name: "theirs only",
		base: "a\nb\nc\n", ours: "a\nb\nc\n", theirs: "a\nb\nC\n",
		want: "a\nb\nC\n",
	},
	{
		name: "separate changes merge cleanly",
		base: "1\n2\n3\n4\n5\n6\n7\n", ours: "1\nTWO\n3\n4\n5\n6\n7\n", theirs: "1\n2\n3\n4\n5\nSIX\n7\n",
		want: "1\nTWO\n3\n4\n5\nSIX\n7\n",
	},
	{
		name: "changes one line apart merge cleanly",
		base: "a\nb\nc\nd\ne\n", ours: "a\nB\nc\nd\ne\n", theirs: "a\nb\nc\nD\ne\n",
		want: "a\nB\nc\nD\ne\n",
	},
	{
		name: "changes to adjacent lines conflict",
		base: "a\nb\nc\nd\ne\n", ours: "a\nB\nc\nd\ne\n", theirs: "a\nb\nC\nd\ne\n",
		want:      "a\n<<<<<<< ours\nB\nc\n=======\nb\nC\n>>>>>>> theirs\nd\ne\n",
		conflicts: 1,
	},
	{
		name: "same change on both sides is clean",
		base: "a\nb\nc\n", ours: "a\nX\nc\n", theirs: "a\nX\nc\n",
		want: "a\nX\nc\n",
	},
	{
		name: "different edits of one line conflict",
		base: "a\nb\nc\n", ours: "a\nX\nc\n", theirs: "a\nY\nc\n",
		want:      "a\n<<<<<<< ours\nX\n=======\nY\n>>>>>>> theirs\nc\n",
		conflicts: 1,
	},
	{
		name: "insertions at the same place conflict",
		base: "a\nb\n", ours: "a\nX\nb\n", theirs: "a\nY\nb\n",
		want:      "a\n<<<<<<< ours\nX\n=======\nY\n>>>>>>> theirs\nb\n",
		conflicts: 1,
	},
	{
		name: "same insertion on both sides is clean",
		base: "a\nb\n", ours: "a\nX\nb\n", theirs: "a\nX\nb\n",
		want: "a\nX\nb\n",
	},
	{
		name: "delete versus edit conflicts",
		base: "a\nb\nc\n", ours: "a\nc\n", theirs: "a\nB\nc\n",
		want:      "a\n<<<<<<< ours\n=======\nB\n>>>>>>> theirs\nc\n",
		conflicts: 1,
	},
	{
		name: "both delete the same line",
		base: "a\nb\nc\n", ours: "a\nc\n", theirs: "a\nc\n",
		want: "a\nc\n",
	},
	{
		name: "refinement keeps common lines out of the conflict",
		base: "a\nb\nc\nd\ne\nf\ng\n", ours: "a\nX\nc\nsame\nsame\ne\nP\ng\n", theirs: "a\nY\nc\nsame\nsame\ne\nQ\ng\n",
		want:      "a\n<<<<<<< ours\nX\n=======\nY\n>>>>>>> theirs\nc\nsame\nsame\ne\n<<<<<<< ours\nP\n=======\nQ\n>>>>>>> theirs\ng\n",
		conflicts: 2,
	},
	{
		name: "three common lines between conflicts join them",
		base: "a\nb\nc\nd\ne\nf\ng\n", ours: "a\nX\nc\nsame\ne\nP\ng\n", theirs: "a\nY\nc\nsame\ne\nQ\ng\n",
		want:      "a\n<<<<<<< ours\nX\nc\nsame\ne\nP\n=======\nY\nc\nsame\ne\nQ\n>>>>>>> theirs\ng\n",
		conflicts: 1,
	},
	{
		name: "lines without letters between conflicts join them",
		base: "a\nb\n-\nc\nd\n", ours: "a\nX\n-\nY\nd\n", theirs: "a\nZ\n-\nW\nd\n",
		want:      "a\n<<<<<<< ours\nX\n-\nY\n=======\nZ\n-\nW\n>>>>>>> theirs\nd\n",
		conflicts: 1,
	},
	{
		name: "empty base, both add",
		base: "", ours: "x\n", theirs: "y\n",
		want:      "<<<<<<< ours\nx\n=======\ny\n>>>>>>> theirs\n",
		conflicts: 1,
	},
	{
		name: "empty base, one side adds",
		base: "", ours: "", theirs: "y\n",
		want: "y\n",
	},
	{
		name: "everything emptied on one side, untouched on the other",
		base: "a\nb\n", ours: "", theirs: "a\nb\n",
		want: "",
	},
	{
		name: "emptied versus edited",
		base: "a\nb\n", ours: "", theirs: "a\nB\n",
		want:      "<<<<<<< ours\n=======\na\nB\n>>>>>>> theirs\n",
		conflicts: 1,
	},
	{
		name: "no trailing newline, change elsewhere",
		base: "a\nb\nc", ours: "A\nb\nc", theirs: "a\nb\nc",
		want: "A\nb\nc",
	},
	{
		name: "no trailing newline in a conflict gets one before the marker",
		base: "a\nb", ours: "a\nX", theirs: "a\nY",
		want:      "a\n<<<<<<< ours\nX\n=======\nY\n>>>>>>> theirs\n",
		conflicts: 1,
	},
	{
		name: "adding a trailing newline is a change of the last line",
		base: "a\nb", ours: "a\nb\n", theirs: "A\nb",
		want:      "<<<<<<< ours\na\nb\n=======\nA\nb\n>>>>>>> theirs\n",
		conflicts: 1,
	},
	{
		name: "both add the trailing newline",
		base: "a\nb", ours: "a\nb\n", theirs: "a\nb\n",
		want: "a\nb\n",
	},
	{
		name: "crlf file keeps crlf markers",
		base: "a\r\nb\r\nc\r\n", ours: "a\r\nX\r\nc\r\n", theirs: "a\r\nY\r\nc\r\n",
		want:      "a\r\n<<<<<<< ours\r\nX\r\n=======\r\nY\r\n>>>>>>> theirs\r\nc\r\n",
		conflicts: 1,
	},
	{
		name: "crlf file without final newline",
		base: "a\r\nb", ours: "a\r\nX", theirs: "a\r\nY",
		want:      "a\r\n<<<<<<< ours\r\nX\r\n=======\r\nY\r\n>>>>>>> theirs\r\n",
		conflicts: 1,
	},
	{
		name: "mixed line ends fall back to lf markers",
		base: "a\nb\r\nc\n", ours: "a\nX\r\nc\n", theirs: "a\nY\r\nc\n",
		want:      "a\n<<<<<<< ours\nX\r\n=======\nY\r\n>>>>>>> theirs\nc\n",
		conflicts: 1,
	},
	{
		name: "diff3 shows the base",
		base: "a\nb\nc\n", ours: "a\nX\nc\n", theirs: "a\nY\nc\n",
		opts:      Options{Style: StyleDiff3, OursLabel: "mine", BaseLabel: "rendered", TheirsLabel: "new"},
		want:      "a\n<<<<<<< mine\nX\n||||||| rendered\nb\n=======\nY\n>>>>>>> new\nc\n",
		conflicts: 1,
	},
	{
		name: "zdiff3 trims common edges",
		base: "a\nb\nc\n", ours: "a\nS\nX\nE\nc\n", theirs: "a\nS\nY\nE\nc\n",
		opts:      Options{Style: StyleZealousDiff3},
		want:      "a\nS\n<<<<<<< ours\nX\n||||||| base\nb\n=======\nY\n>>>>>>> theirs\nE\nc\n",
		conflicts: 1,
	},
	{
		name: "favor ours",
		base: "a\nb\nc\n", ours: "a\nX\nc\n", theirs: "a\nY\nc\n",
		opts: Options{Favor: FavorOurs},
		want: "a\nX\nc\n",
	},
	{
		name: "favor union",
		base: "a\nb\nc\n", ours: "a\nX\nc\n", theirs: "a\nY\nc\n",
		opts: Options{Favor: FavorUnion},
		want: "a\nX\nY\nc\n",
	},
	{
		name: "marker size",
		base: "a\n", ours: "x\n", theirs: "y\n",
		opts:      Options{MarkerSize: 3},
		want:      "<<< ours\nx\n===\ny\n>>> theirs\n",
		conflicts: 1,
	},
	{
		name: "adding and removing a blank line in a run conflict",
		base: "a\n\n\nb\n", ours: "a\n\n\n\nb\n", theirs: "a\n\nb\n",
		want:      "a\n\n<<<<<<< ours\n\n\n=======\n>>>>>>> theirs\nb\n",
		conflicts: 1,
	},
}

func TestLinesTable(t *testing.T) {
	g := newGitMerger(t)
	for _, c := range linesCases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Lines([]byte(c.base), []byte(c.ours), []byte(c.theirs), c.opts)
			if err != nil {
				t.Fatal(err)
			}
			if string(got.Merged) != c.want || got.Conflicts != c.conflicts {
				t.Errorf("got %d conflicts:\n%q\nwant %d conflicts:\n%q", got.Conflicts, got.Merged, c.conflicts, c.want)
			}
			if got.Clean() != (c.conflicts == 0) {
				t.Errorf("Clean() = %v with %d conflicts", got.Clean(), got.Conflicts)
			}
			if g != nil {
				checkAgainstGit(t, g, []byte(c.base), []byte(c.ours), []byte(c.theirs), c.opts)
			}
		})
	}
}

func TestLinesBadOptions(t *testing.T) {
	for _, o := range []Options{
		{OursLabel: "a\nb"},
		{MarkerSize: -1},
		{MarkerSize: maxMarkerSize + 1},
		{Style: 9},
		{Favor: -1},
	} {
		_, err := Lines(nil, nil, nil, o)
		if !errors.Is(err, errBadOptions) {
			t.Errorf("Lines with %+v: err = %v, want errBadOptions", o, err)
		}
		if err != nil && !strings.HasPrefix(err.Error(), "merge: ") {
			t.Errorf("error %q lacks the subject", err)
		}
	}
}

// vocabulary is small so that random files share many lines, which is where
// diff choices (and thus agreement with git) get interesting.
var vocabulary = []string{"a\n", "b\n", "c\n", "d\n", "\n", "}\n", "-\n", "x y\n", "a\r\n", "  e\n"}

func randomFile(r *rand.Rand, maxLines int) []byte {
	var b []byte
	n := r.IntN(maxLines + 1)
	for range n {
		b = append(b, vocabulary[r.IntN(len(vocabulary))]...)
	}
	if len(b) > 0 && r.IntN(6) == 0 {
		b = b[:len(b)-1] // no trailing newline
	}
	return b
}

func mutate(r *rand.Rand, base []byte) []byte {
	lines := splitLines(base)
	out := make([][]byte, len(lines))
	copy(out, lines)
	for range r.IntN(5) {
		pos := r.IntN(len(out) + 1)
		line := []byte(vocabulary[r.IntN(len(vocabulary))])
		switch op := r.IntN(3); {
		case op == 0 || len(out) == 0 || pos == len(out):
			out = append(out[:pos], append([][]byte{line}, out[pos:]...)...)
		case op == 1:
			out = append(out[:pos], out[pos+1:]...)
		default:
			out[pos] = line
		}
	}
	b := bytes.Join(out, nil)
	if r.IntN(10) == 0 && len(b) > 0 {
		if b[len(b)-1] == '\n' {
			b = b[:len(b)-1]
		} else {
			b = append(b, '\n')
		}
	}
	return b
}

// randomOptions mostly returns the default, which is what memvault uses,
// and sometimes the other styles so they are compared too.
func randomOptions(r *rand.Rand) Options {
	switch r.IntN(10) {
	case 0:
		return Options{Style: StyleDiff3}
	case 1:
		return Options{Style: StyleZealousDiff3}
	case 2:
		return Options{Favor: Favor(1 + r.IntN(3))}
	default:
		return Options{}
	}
}

func TestLinesRandomAgainstGit(t *testing.T) {
	if newGitMerger(t) == nil {
		t.Skip("git not on PATH")
	}
	n := 1000
	if testing.Short() {
		n = 200
	}
	type input struct {
		base, ours, theirs []byte
		opts               Options
	}
	r := rand.New(rand.NewPCG(20240611, 1))
	cases := make([]input, n)
	for i := range cases {
		base := randomFile(r, 12)
		ours, theirs := mutate(r, base), mutate(r, base)
		if r.IntN(8) == 0 {
			theirs = ours
		}
		cases[i] = input{base, ours, theirs, randomOptions(r)}
	}
	// Spawning git dominates the run time, so the cases run in parallel
	// shards, each with its own scratch directory.
	const shards = 8
	for s := range shards {
		t.Run("shard"+strconv.Itoa(s), func(t *testing.T) {
			t.Parallel()
			g := newGitMerger(t)
			for i := s; i < len(cases); i += shards {
				c := cases[i]
				checkAgainstGit(t, g, c.base, c.ours, c.theirs, c.opts)
			}
		})
	}
	t.Cleanup(func() {
		conflicted := 0
		for _, c := range cases {
			if res, _ := Lines(c.base, c.ours, c.theirs, c.opts); !res.Clean() {
				conflicted++
			}
		}
		t.Logf("%d random merges compared with git, %d of them conflicted", n, conflicted)
	})
}

// TestLinesLongAgainstGit compares longer files, where xdiff's cost limits
// and frequent-line pruning come into play.
func TestLinesLongAgainstGit(t *testing.T) {
	g := newGitMerger(t)
	if g == nil {
		t.Skip("git not on PATH")
	}
	r := rand.New(rand.NewPCG(7, 7))
	for range 40 {
		base := randomFile(r, 3000)
		ours, theirs := base, base
		for range 1 + r.IntN(40) {
			ours = mutate(r, ours)
			theirs = mutate(r, theirs)
		}
		checkAgainstGit(t, g, base, ours, theirs, Options{})
	}
	// Heavy rewrites push the edit cost past xdiff's limits, so the
	// snake and cost heuristics decide the split points.
	for i := range 12 {
		base := randomFile(r, 2500)
		ours, theirs := base, randomFile(r, 2500)
		for range 100 + 50*i {
			ours = mutate(r, ours)
		}
		checkAgainstGit(t, g, base, ours, theirs, Options{})
		checkAgainstGit(t, g, base, theirs, ours, Options{})
	}
	// Runs of new lines among frequent ones (blank lines, closing
	// braces) exercise the pre-pass that drops lines matching nowhere.
	for range 20 {
		base := randomFile(r, 400)
		ours, theirs := rewriteRuns(r, base), rewriteRuns(r, base)
		checkAgainstGit(t, g, base, ours, theirs, Options{})
	}
}

// rewriteRuns replaces random runs of lines by lines found nowhere else,
// keeping the blank lines in them, as rewriting a paragraph does.
func rewriteRuns(r *rand.Rand, b []byte) []byte {
	var out []byte
	run := 0
	for _, l := range splitLines(b) {
		if run == 0 && r.IntN(20) == 0 {
			run = 6 + r.IntN(12)
		}
		if run > 0 && string(l) != "\n" {
			run--
			out = append(out, "new "+strconv.Itoa(r.IntN(1e9))+"\n"...)
			continue
		}
		out = append(out, l...)
	}
	return out
}

// blockEdit rewrites the head of every block of lines and leaves the rest,
// so the diff has long unchanged runs between many changes: the shape that
// makes xdiff take its snake shortcut.
func blockEdit(r *rand.Rand, b []byte, block int) []byte {
	var out []byte
	for i, l := range splitLines(b) {
		switch {
		case i%block == 0:
			out = append(out, wideLine(r)...)
			out = append(out, wideLine(r)...)
		case i%block < 4:
			out = append(out, wideLine(r)...)
		default:
			out = append(out, l...)
		}
	}
	return out
}

// wideLine draws from a few hundred lines, enough for long runs to be
// distinctive while every line still has matches elsewhere.
func wideLine(r *rand.Rand) string {
	return "line " + strconv.Itoa(r.IntN(300)) + "\n"
}

// TestLinesSnakesAgainstGit uses files big enough (over 32k lines a side)
// for xdiff's cost limit to exceed its snake threshold, the only way its
// snake heuristic runs.
func TestLinesSnakesAgainstGit(t *testing.T) {
	g := newGitMerger(t)
	if g == nil {
		t.Skip("git not on PATH")
	}
	r := rand.New(rand.NewPCG(3, 5))
	for _, block := range []int{22, 30, 60} {
		var base []byte
		for range 36000 {
			base = append(base, wideLine(r)...)
		}
		ours, theirs := blockEdit(r, base, block), blockEdit(r, base, block+1)
		checkAgainstGit(t, g, base, ours, theirs, Options{})
	}
}

func TestLinesInvariants(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		base := randomFile(r, 15)
		other := mutate(r, base)
		checkInvariants(t, base, other)
	}
}

// checkInvariants holds for every merge: nothing changed gives the input
// back, and a change on one side only is taken whole.
func checkInvariants(t *testing.T, base, other []byte) {
	t.Helper()
	same, err := Lines(base, base, base, Options{})
	if err != nil || !same.Clean() || !bytes.Equal(same.Merged, base) {
		t.Fatalf("merge(a,a,a) = %q, %d conflicts, %v; want %q clean", same.Merged, same.Conflicts, err, base)
	}
	for _, side := range []string{"ours", "theirs"} {
		ours, theirs := other, base
		if side == "theirs" {
			ours, theirs = base, other
		}
		res, err := Lines(base, ours, theirs, Options{})
		if err != nil || !res.Clean() || !bytes.Equal(res.Merged, other) {
			t.Fatalf("change on %s only: got %q, %d conflicts, %v; want %q clean (base %q)",
				side, res.Merged, res.Conflicts, err, other, base)
		}
	}
	both, err := Lines(base, other, other, Options{})
	if err != nil || !both.Clean() || !bytes.Equal(both.Merged, other) {
		t.Fatalf("same change on both sides: got %q, %d conflicts, %v; want %q clean", both.Merged, both.Conflicts, err, other)
	}
}

func FuzzLines(f *testing.F) {
	for _, c := range linesCases {
		f.Add([]byte(c.base), []byte(c.ours), []byte(c.theirs))
	}
	f.Add([]byte("\x00\xff\n"), []byte("\xc3\x28\n\x00"), []byte(strings.Repeat("z", 1<<16)))
	g := newGitMerger(f)
	f.Fuzz(func(t *testing.T, base, ours, theirs []byte) {
		checkInvariants(t, base, ours)
		checkInvariants(t, base, theirs)
		res, err := Lines(base, ours, theirs, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if res.Conflicts < 0 {
			t.Fatalf("negative conflict count %d", res.Conflicts)
		}
		if g != nil && gitComparable(base, ours, theirs) {
			checkAgainstGit(t, g, base, ours, theirs, Options{})
		}
	})
}
