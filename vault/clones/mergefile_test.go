package clones

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"strconv"
	"strings"
	"testing"
	"testing/quick"
	"time"

	"github.com/memvault/memvault/vault"
)

// sealed returns the ledger line of an event with the given id, time and
// prev, and the event's hash.
func sealed(t testing.TB, id string, ts time.Time, prev string, data any) (line []byte, hash string) {
	t.Helper()
	ev := &vault.Event{ID: id, TS: vault.FormatTS(ts), Agent: "default", Kind: "fact", Text: "text of " + id}
	if data != nil {
		ev.Kind = vault.KindJoin
		ev.Data, _ = json.Marshal(data)
	}
	line, err := ev.Seal(prev)
	if err != nil {
		t.Fatal(err)
	}
	return line, ev.Hash
}

// chain builds n events chained on prev, one per minute from start.
func chain(t testing.TB, prefix string, n int, start time.Time, prev string) (lines [][]byte, tip string) {
	tip = prev
	for i := 0; i < n; i++ {
		var l []byte
		l, tip = sealed(t, fmt.Sprintf("e_%s%02d", prefix, i), start.Add(time.Duration(i)*time.Minute), tip, nil)
		lines = append(lines, l)
	}
	return lines, tip
}

func join(ls ...[][]byte) []byte {
	var out []byte
	for _, l := range ls {
		out = append(out, bytes.Join(l, nil)...)
	}
	return out
}

var t0 = time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)

func TestMergeKindOf(t *testing.T) {
	for p, want := range map[string]MergeKind{
		"ledger/2026/11/23.jsonl":              MergeLedger,
		"ledger/2026/11/23-12.jsonl":           MergeLedger,
		"ledger/2026/13/23.jsonl":              MergeText,
		"ledger/2026/11/notes.jsonl":           MergeText,
		"transcripts/default/s1.jsonl":         MergeTranscript,
		"transcripts/default/s1.2.jsonl":       MergeTranscript,
		"MEMORY.md":                            MergeHead,
		"CONTINUITY.md":                        MergeHead,
		"threads/project/shop.md":              MergeHead,
		"nodes/default/2026/11/n_x.md":         MergeNode,
		".rendered/MEMORY.md":                  MergeRendered,
		".rendered/threads/project/shop.md":    MergeRendered,
		"memvault.toml":                        MergeText,
		"./ledger/2026/11/23.jsonl":            MergeLedger,
		"notes/MEMORY.md":                      MergeText,
		"transcripts/default/s1.jsonl.orig":    MergeText,
		"threads/project/shop.md.orig":         MergeText,
		"nodes/default/2026/11/n_x.md.swp.txt": MergeText,
	} {
		if got := MergeKindOf(p); got != want {
			t.Errorf("MergeKindOf(%q) = %s, want %s", p, got, want)
		}
	}
}

func TestMergeLedgerUnion(t *testing.T) {
	shared, tip := chain(t, "s", 3, t0, "")
	ours, _ := chain(t, "a", 2, t0.Add(time.Hour), tip)
	theirs, _ := chain(t, "b", 2, t0.Add(time.Hour+30*time.Second), tip)
	base := join(shared)
	x, y := join(shared, ours), join(shared, theirs)
	got, conflict, err := MergeFile("ledger/2026/11/23.jsonl", base, x, y)
	if err != nil || conflict {
		t.Fatalf("conflict %v, err %v", conflict, err)
	}
	// Shared top first, then by time: a00 (10:00+1h), b00 (+30s), a01, b01.
	want := join(shared, [][]byte{ours[0], theirs[0], ours[1], theirs[1]})
	if !bytes.Equal(got, want) {
		t.Errorf("merged:\n%s\nwant:\n%s", got, want)
	}
	back, _, _ := MergeFile("ledger/2026/11/23.jsonl", base, y, x)
	if !bytes.Equal(back, got) {
		t.Errorf("not symmetric:\n%s\nvs\n%s", got, back)
	}
	// Merging again with either side changes nothing.
	again, conflict, _ := MergeFile("ledger/2026/11/23.jsonl", x, got, x)
	if conflict || !bytes.Equal(again, got) {
		t.Errorf("a second merge changed the result:\n%s", again)
	}
}

func TestMergeLedgerChainBeatsClock(t *testing.T) {
	shared, tip := chain(t, "s", 1, t0, "")
	// Their clock runs behind: their second event is stamped before our
	// first, yet must follow their first, which comes after ours by time.
	b0, h := sealed(t, "e_b0", t0.Add(2*time.Hour), tip, nil)
	b1, _ := sealed(t, "e_b1", t0.Add(10*time.Minute), h, nil)
	a0, ha := sealed(t, "e_a0", t0.Add(time.Hour), tip, nil)
	// A join stamped before the tips it names still follows them.
	j, _ := sealed(t, "e_j", t0.Add(time.Minute), ha, map[string]any{"tips": []string{ha, h}})
	got, conflict, err := MergeFile("ledger/2026/11/23.jsonl", join(shared),
		join(shared, [][]byte{a0, j}), join(shared, [][]byte{b0, b1}))
	if err != nil || conflict {
		t.Fatalf("conflict %v, err %v", conflict, err)
	}
	want := join(shared, [][]byte{a0, b0, j, b1})
	if !bytes.Equal(got, want) {
		t.Errorf("merged:\n%s\nwant:\n%s", got, want)
	}
}

func TestMergeLedgerRepairedLine(t *testing.T) {
	base, _ := chain(t, "s", 3, t0, "")
	// Ours rewrote the last two events' chain (same ids, new bytes); theirs
	// appended one.
	r1, h1 := sealed(t, "e_s01", t0.Add(time.Minute), "", nil)
	r2, _ := sealed(t, "e_s02", t0.Add(2*time.Minute), h1, nil)
	more, _ := chain(t, "b", 1, t0.Add(time.Hour), "")
	got, conflict, err := MergeFile("ledger/2026/11/23.jsonl", join(base),
		join([][]byte{base[0], r1, r2}), join(base, more))
	if err != nil || conflict {
		t.Fatalf("conflict %v, err %v", conflict, err)
	}
	if want := join([][]byte{base[0], r1, r2}, more); !bytes.Equal(got, want) {
		t.Errorf("merged:\n%s\nwant:\n%s", got, want)
	}
}

func TestMergeLedgerConflicts(t *testing.T) {
	base, tip := chain(t, "s", 2, t0, "")
	ours, _ := chain(t, "a", 1, t0.Add(time.Hour), tip)
	theirs, _ := chain(t, "b", 1, t0.Add(time.Hour), tip)
	r1, _ := sealed(t, "e_s01", t0.Add(3*time.Minute), "", nil)
	r2, _ := sealed(t, "e_s01", t0.Add(4*time.Minute), "", nil)
	for _, c := range []struct {
		name         string
		ours, theirs []byte
	}{
		{"one event changed two ways", join([][]byte{base[0], r1}), join([][]byte{base[0], r2})},
		{"a line that is not an event", join(base, ours, [][]byte{[]byte("my note\n")}), join(base, theirs)},
		{"conflict markers", join(base, [][]byte{[]byte("<<<<<<< ours\n")}, ours), join(base, theirs)},
		{"a torn last line", join(base, ours)[:len(join(base, ours))-1], join(base, theirs)},
		{"an empty line", join(base, ours, [][]byte{[]byte("\n")}), join(base, theirs)},
		{"one id twice with different bytes", join(base, [][]byte{r1}), join(base, theirs)},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, conflict, err := MergeFile("ledger/2026/11/23.jsonl", join(base), c.ours, c.theirs)
			if err != nil {
				t.Fatal(err)
			}
			if !conflict {
				t.Errorf("no conflict:\n%s", got)
			}
			for _, l := range splitKeep(c.ours, c.theirs) {
				if !bytes.Contains(got, l) {
					t.Errorf("lost %q", l)
				}
			}
		})
	}
}

// splitKeep lists the non-empty lines of the inputs, without newlines.
func splitKeep(docs ...[]byte) [][]byte {
	var out [][]byte
	for _, d := range docs {
		for _, l := range bytes.Split(d, []byte("\n")) {
			if len(l) > 0 {
				out = append(out, l)
			}
		}
	}
	return out
}

// TestMergeLedgerProperties merges random histories: events made one after
// the other, each chained on a random earlier one, shared up to a point,
// then held by one side, the other or both (as after an earlier merge).
// The merge must be clean, symmetric, hold each distinct line exactly
// once, keep the shared top first, and put every event after its prev and
// a join after its tips.
func TestMergeLedgerProperties(t *testing.T) {
	t.Parallel()
	prop := func(seed int64) bool {
		r := rand.New(rand.NewSource(seed))
		var lines [][]byte
		var hashes []string
		n := 1 + r.Intn(30)
		for i := 0; i < n; i++ {
			prev := ""
			if i > 0 {
				prev = hashes[r.Intn(i)]
			}
			var data any
			if i > 1 && r.Intn(5) == 0 {
				data = map[string]any{"tips": []string{hashes[r.Intn(i)], hashes[r.Intn(i)]}}
			}
			// Clocks disagree: timestamps wander around the order of making.
			ts := t0.Add(time.Duration(i*60+r.Intn(600)-300) * time.Second)
			l, h := sealed(t, fmt.Sprintf("e_%03d", r.Intn(1000)*1000+i), ts, prev, data)
			lines, hashes = append(lines, l), append(hashes, h)
		}
		top := r.Intn(n + 1)
		var base, x, y [][]byte
		base = lines[:top]
		x = append(x, lines[:top]...)
		y = append(y, lines[:top]...)
		for _, l := range lines[top:] {
			switch r.Intn(3) {
			case 0:
				x = append(x, l)
			case 1:
				y = append(y, l)
			default:
				x, y = append(x, l), append(y, l)
			}
		}
		a, ca, err1 := MergeFile("ledger/2026/11/23.jsonl", join(base), join(x), join(y))
		b, cb, err2 := MergeFile("ledger/2026/11/23.jsonl", join(base), join(y), join(x))
		if err1 != nil || err2 != nil || ca || cb {
			t.Logf("seed %d: conflict %v %v, err %v %v", seed, ca, cb, err1, err2)
			return false
		}
		if !bytes.Equal(a, b) {
			t.Logf("seed %d: not symmetric", seed)
			return false
		}
		if !bytes.HasPrefix(a, join(base)) {
			t.Logf("seed %d: the shared top moved", seed)
			return false
		}
		got, _ := splitWhole(a)
		count := map[string]int{}
		for _, l := range got {
			count[string(l)]++
		}
		for _, l := range append(append([][]byte(nil), x...), y...) {
			if count[string(l)] != 1 {
				t.Logf("seed %d: %d copies of %s", seed, count[string(l)], l)
				return false
			}
		}
		if len(count) != len(got) {
			t.Logf("seed %d: a line came from nowhere", seed)
			return false
		}
		pos := map[string]int{}
		for i, l := range got {
			ev, _, _ := vault.ParseLine(bytes.TrimSpace(l))
			pos[ev.Hash] = i
		}
		for i, l := range got {
			ev, _, _ := vault.ParseLine(bytes.TrimSpace(l))
			tips, _ := vault.JoinTips(ev)
			for _, ref := range append([]string{ev.Prev}, tips...) {
				if j, ok := pos[ref]; ok && j >= i {
					t.Logf("seed %d: line %d comes before %d, which it names", seed, i, j)
					return false
				}
			}
		}
		return true
	}
	// 100 random histories a run (each run draws new ones);
	// MEMVAULT_PROPERTY_COUNT=10000 for a long run.
	count := 100
	if s := os.Getenv("MEMVAULT_PROPERTY_COUNT"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("MEMVAULT_PROPERTY_COUNT=%q: want a positive number", s)
		}
		count = n
	}
	if err := quick.Check(prop, &quick.Config{MaxCount: count}); err != nil {
		t.Error(err)
	}
}

func message(t testing.TB, n int, id, ts, text string) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]any{"n": n, "id": id, "ts": ts, "role": "user", "text": text, "src": map[string]any{"format": "memvault"}})
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

func TestMergeTranscript(t *testing.T) {
	m1 := message(t, 1, "m_1", "2026-11-23T10:00:00Z", "hello")
	m2 := message(t, 2, "m_2", "2026-11-23T10:01:00Z", "again")
	a3 := message(t, 3, "m_a3", "2026-11-23T10:05:00Z", "from A")
	a4 := message(t, 4, "m_a4", "2026-11-23T10:06:00Z", "more from A")
	b3 := message(t, 3, "m_b3", "2026-11-23T10:02:00Z", "from B")
	base := join([][]byte{m1, m2})
	x, y := join([][]byte{m1, m2, a3, a4}), join([][]byte{m1, m2, b3})
	got, conflict, err := MergeFile("transcripts/default/s.jsonl", base, x, y)
	if err != nil || conflict {
		t.Fatalf("conflict %v, err %v", conflict, err)
	}
	if want := join([][]byte{m1, m2, b3, a3, a4}); !bytes.Equal(got, want) {
		t.Errorf("merged:\n%s\nwant:\n%s", got, want)
	}
	if back, _, _ := MergeFile("transcripts/default/s.jsonl", base, y, x); !bytes.Equal(back, got) {
		t.Errorf("not symmetric:\n%s", back)
	}

	// A line one side rewrote (same message id) replaces base's; a line
	// the two sides stored differently otherwise stays twice.
	m2fixed := message(t, 2, "m_2", "2026-11-23T10:01:00Z", "again, redacted")
	got, conflict, _ = MergeFile("transcripts/default/s.jsonl", base, join([][]byte{m1, m2fixed}), y)
	if want := join([][]byte{m1, m2fixed, b3}); conflict || !bytes.Equal(got, want) {
		t.Errorf("rewrite: conflict %v, merged:\n%s\nwant:\n%s", conflict, got, want)
	}
	dupA := message(t, 3, "m_x", "2026-11-23T10:05:00Z", "same message")
	dupB := message(t, 4, "m_x", "2026-11-23T10:05:00Z", "same message")
	got, _, _ = MergeFile("transcripts/default/s.jsonl", base, join([][]byte{m1, m2, dupA}), join([][]byte{m1, m2, b3, dupB}))
	if want := join([][]byte{m1, m2, b3, dupA, dupB}); !bytes.Equal(got, want) {
		t.Errorf("renumbered: merged:\n%s\nwant:\n%s", got, want)
	}

	for name, bad := range map[string][]byte{
		"torn":     x[:len(x)-1],
		"not json": join([][]byte{m1, m2, []byte("hello\n")}),
		"no n":     join([][]byte{m1, m2, []byte(`{"id":"m_z","text":"?"}` + "\n")}),
	} {
		if _, conflict, _ := MergeFile("transcripts/default/s.jsonl", base, bad, y); !conflict {
			t.Errorf("%s: no conflict", name)
		}
	}
}

const headDoc = `# MEMORY

## Decisions

- use WAL

## Notes

- none
`

func TestMergeHead(t *testing.T) {
	ours := strings.Replace(headDoc, "- use WAL\n", "- use WAL\n- ship Friday\n", 1)
	theirs := strings.Replace(headDoc, "- none\n", "- a note\n", 1)
	got, conflict, err := MergeFile("MEMORY.md", []byte(headDoc), []byte(ours), []byte(theirs))
	if err != nil || conflict {
		t.Fatalf("conflict %v, err %v", conflict, err)
	}
	if want := strings.Replace(ours, "- none\n", "- a note\n", 1); string(got) != want {
		t.Errorf("merged:\n%s\nwant:\n%s", got, want)
	}

	// Both sides changed one section: the union of their lines, no
	// markers; the next refresh keeps what people wrote of it and renders
	// the rest from the merged ledger.
	theirs = strings.Replace(headDoc, "- use WAL\n", "- use WAL\n- ship Monday\n", 1)
	got, conflict, err = MergeFile("threads/project/shop.md", []byte(headDoc), []byte(ours), []byte(theirs))
	if err != nil || conflict {
		t.Fatalf("conflict %v, err %v", conflict, err)
	}
	if !bytes.Contains(got, []byte("- use WAL\n- ship Friday\n- ship Monday\n")) || bytes.Contains(got, []byte("<<<<<<<")) {
		t.Errorf("not the union of both sides:\n%s", got)
	}

	// CONTINUITY.md's Just Completed only grows: both sides' lines stay.
	cont := "# CONTINUITY\n\n## Just Completed\n\n- one\n\n## Next Actions\n\n1. two\n"
	cx := strings.Replace(cont, "- one\n", "- A did this\n- one\n", 1)
	cy := strings.Replace(cont, "- one\n", "- B did that\n- one\n", 1)
	got, conflict, err = MergeFile("CONTINUITY.md", []byte(cont), []byte(cx), []byte(cy))
	if err != nil || conflict {
		t.Fatalf("continuity: conflict %v, err %v:\n%s", conflict, err, got)
	}
	if !bytes.Contains(got, []byte("- A did this\n")) || !bytes.Contains(got, []byte("- B did that\n")) {
		t.Errorf("continuity lost a line:\n%s", got)
	}
}

func TestMergeNodeAndText(t *testing.T) {
	node := []byte("---\nid: n_1\n---\nbody\n")
	edited := []byte("---\nid: n_1\n---\nbody, edited\n")
	for _, c := range []struct {
		base, ours, theirs, want []byte
		conflict                 bool
	}{
		{nil, node, node, node, false},
		{node, node, edited, edited, false},
		{node, edited, node, edited, false},
		{node, edited, []byte("---\nid: n_1\n---\nbody, changed\n"), nil, true},
	} {
		got, conflict, err := MergeFile("nodes/default/2026/11/n_1.md", c.base, c.ours, c.theirs)
		if err != nil || conflict != c.conflict || c.want != nil && !bytes.Equal(got, c.want) {
			t.Errorf("merge(%q, %q, %q) = %q, %v, %v", c.base, c.ours, c.theirs, got, conflict, err)
		}
	}
}

func TestMergeRendered(t *testing.T) {
	// The copies of the renders merge by the heads' rule, so that they stay
	// the base of what the merged head holds.
	base, a, b := []byte("## A\n\n- r0\n"), []byte("## A\n\n- r1\n"), []byte("## A\n\n- r2\n")
	for _, c := range [][4][]byte{{base, a, base, a}, {base, base, b, b}, {base, a, b, []byte("## A\n\n- r1\n- r2\n")}} {
		for _, p := range []string{".rendered/MEMORY.md", "MEMORY.md"} {
			got, conflict, err := MergeFile(p, c[0], c[1], c[2])
			if err != nil || conflict || !bytes.Equal(got, c[3]) {
				t.Errorf("%s: merge(%q, %q, %q) = %q, %v, %v; want %q", p, c[0], c[1], c[2], got, conflict, err, c[3])
			}
		}
	}
}

// FuzzMergeFile merges arbitrary versions of a ledger segment and a
// transcript part: never a panic or an error; a clean union keeps every
// line either side added since base, and gives the same bytes whichever
// side is ours.
func FuzzMergeFile(f *testing.F) {
	a, h := sealed(f, "e_a", t0, "", nil)
	b, _ := sealed(f, "e_b", t0.Add(time.Minute), h, nil)
	c, _ := sealed(f, "e_c", t0.Add(2*time.Minute), h, nil)
	m1 := message(f, 1, "m_1", "2026-11-23T10:00:00Z", "hi")
	m2 := message(f, 2, "m_2", "2026-11-23T10:00:01Z", "ho")
	f.Add(a, join([][]byte{a, b}), join([][]byte{a, c}))
	f.Add(m1, join([][]byte{m1, m2}), m2)
	f.Add([]byte{}, []byte("x\n"), []byte("<<<<<<< ours\n"))
	f.Fuzz(func(t *testing.T, base, ours, theirs []byte) {
		for _, p := range []string{"ledger/2026/11/23.jsonl", "transcripts/default/s.jsonl"} {
			got, conflict, err := MergeFile(p, base, ours, theirs)
			if err != nil {
				t.Fatalf("%s: %v", p, err)
			}
			if conflict {
				continue
			}
			back, conflict, err := MergeFile(p, base, theirs, ours)
			if err != nil || conflict || !bytes.Equal(back, got) {
				t.Fatalf("%s: not symmetric (conflict %v, err %v):\n%q\n%q", p, conflict, err, got, back)
			}
			lines, _ := splitWhole(got)
			have := map[string]bool{}
			for _, l := range lines {
				have[string(l)] = true
			}
			old := map[string]bool{}
			if bl, _ := splitWhole(base); bl != nil {
				for _, l := range bl {
					old[string(l)] = true
				}
			}
			for _, side := range [][]byte{ours, theirs} {
				sl, _ := splitWhole(side)
				for _, l := range sl {
					if !have[string(l)] && !old[string(l)] {
						t.Fatalf("%s: lost %q", p, l)
					}
				}
			}
		}
	})
}
