package merge

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func TestKeepInsertions(t *testing.T) {
	const drill = "# MEMORY\n\n## Drill down\n\n- help\n- n3\n- n2\n- n1\n"
	cases := []struct {
		name, base, ours, theirs, want string
	}{{
		// A person appends at the end of the file, under the last
		// section, while the render drops its oldest node there.
		name:   "our line beside a row they dropped",
		base:   drill,
		ours:   drill + "- a person's line\n",
		theirs: "# MEMORY\n\n## Drill down\n\n- help\n- n4\n- n3\n- n2\n",
		want:   "# MEMORY\n\n## Drill down\n\n- help\n- n4\n- n3\n- n2\n- a person's line\n",
	}, {
		name:   "their row beside a line we changed",
		base:   "# M\n\n## Decisions\n\n- use WAL\n",
		ours:   "# M\n\n## Decisions\n\n- use WAL, with a 64 MiB cap\n",
		theirs: "# M\n\n## Decisions\n\n- use zstd\n- use WAL\n",
		want:   "# M\n\n## Decisions\n\n- use zstd\n- use WAL, with a 64 MiB cap\n",
	}, {
		// An editor turned the file CRLF: every line of ours changed, and
		// the render's new row goes under the heading, with CRLF, not
		// before the heading (into the section above).
		name:   "their row into a section we turned CRLF",
		base:   "# M\n\n## Decisions\n\n- a\n",
		ours:   "# M\r\n\r\n## Decisions\r\n\r\n- a\r\n",
		theirs: "# M\n\n## Decisions\n\n- b\n- a\n",
		want:   "# M\r\n\r\n## Decisions\r\n\r\n- b\r\n- a\r\n",
	}, {
		name:   "both inserted at one place: theirs, then ours",
		base:   "# M\n\n## Notes\n\n- a\n",
		ours:   "# M\n\n## Notes\n\n- a\n- ours\n",
		theirs: "# M\n\n## Notes\n\n- a\n- theirs\n",
		want:   "# M\n\n## Notes\n\n- a\n- theirs\n- ours\n",
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			plain, err := Markdown([]byte(c.base), []byte(c.ours), []byte(c.theirs), MarkdownOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(plain.Sections) == 0 {
				t.Fatalf("the case merges cleanly without KeepInsertions, so it tests nothing:\n%s", plain.Merged)
			}
			got, err := Markdown([]byte(c.base), []byte(c.ours), []byte(c.theirs), MarkdownOptions{KeepInsertions: true})
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Sections) > 0 || string(got.Merged) != c.want {
				t.Errorf("got %d conflicts and\n%s\nwant\n%s", len(got.Sections), got.Merged, c.want)
			}
		})
	}
	// Both sides changed a line: still a conflict, and our text stays.
	base := "# M\n\n## Decisions\n\n- use WAL\n"
	ours := "# M\n\n## Decisions\n\n- use WAL always\n"
	theirs := "# M\n\n## Decisions\n\n- use WAL never\n"
	got, err := Markdown([]byte(base), []byte(ours), []byte(theirs), MarkdownOptions{KeepInsertions: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Sections) != 1 || string(got.Merged) != ours {
		t.Errorf("a line both changed: %d conflicts, merged\n%s", len(got.Sections), got.Merged)
	}
	// Peers (a git merge between clones) keeps git's behaviour.
	got, err = Markdown([]byte(drill), []byte(drill+"- x\n"), []byte(strings.Replace(drill, "- n1\n", "", 1)), MarkdownOptions{KeepInsertions: true, Peers: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Sections) != 1 {
		t.Errorf("Peers: %d conflicts, want git's 1", len(got.Sections))
	}
}

// TestKeepInsertionsLosesNothing: for random sections where our side only
// inserted lines, the result is their version with exactly our inserted
// lines added (taking them out again gives their version), and every line
// of ours that is not in the base is in the result.
func TestKeepInsertionsLosesNothing(t *testing.T) {
	rng := rand.New(rand.NewPCG(uint64(len(t.Name())), 7))
	word := func() string { return fmt.Sprintf("- row %d\n", rng.IntN(12)) }
	for round := range 2000 {
		var base []string
		for range 1 + rng.IntN(8) {
			base = append(base, word())
		}
		// Ours: the base with lines inserted (new words only, so they
		// can be counted back out).
		var ours, added []string
		for i := 0; i <= len(base); i++ {
			if rng.IntN(3) == 0 {
				l := fmt.Sprintf("- ours %d.%d\n", round, i)
				ours, added = append(ours, l), append(added, l)
			}
			if i < len(base) {
				ours = append(ours, base[i])
			}
		}
		// Theirs: the base with lines dropped, changed and added.
		var theirs []string
		for _, l := range base {
			switch rng.IntN(4) {
			case 0:
			case 1:
				theirs = append(theirs, word(), l)
			case 2:
				theirs = append(theirs, strings.TrimSuffix(l, "\n")+" changed\n")
			default:
				theirs = append(theirs, l)
			}
		}
		b := []byte(strings.Join(base, ""))
		o := []byte(strings.Join(ours, ""))
		th := []byte(strings.Join(theirs, ""))
		got, ok := keepInsertions(b, o, th)
		if len(added) == 0 {
			continue
		}
		if !ok {
			t.Fatalf("round %d: not settled\nbase:\n%s\nours:\n%s", round, b, o)
		}
		lines := strings.SplitAfter(string(got), "\n")
		lines = lines[:len(lines)-1]
		rest := slices.DeleteFunc(slices.Clone(lines), func(l string) bool { return strings.HasPrefix(l, "- ours ") })
		if strings.Join(rest, "") != string(th) {
			t.Fatalf("round %d: without our lines the result is not theirs\nbase:\n%s\nours:\n%s\ntheirs:\n%s\ngot:\n%s", round, b, o, th, got)
		}
		for _, l := range added {
			if !bytes.Contains(got, []byte(l)) {
				t.Fatalf("round %d: our line %q is lost", round, l)
			}
		}
	}
}
