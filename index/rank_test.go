package index

import (
	"fmt"
	"math"
	"math/rand"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func memIndex(t *testing.T, docs []Doc) *Index {
	t.Helper()
	ix, err := NewMemory()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	if err := ix.Add(docs); err != nil {
		t.Fatal(err)
	}
	return ix
}

func ids(hits []Hit) []string {
	var out []string
	for _, h := range hits {
		out = append(out, h.ID)
	}
	return out
}

func find(t *testing.T, ixs []*Index, q Query) []Hit {
	t.Helper()
	if q.Limit == 0 {
		q.Limit = 50
	}
	hits, err := Search(ixs, q)
	if err != nil {
		t.Fatal(err)
	}
	return hits
}

// A speaker named in the question lifts that speaker's turns that match
// the text, and never brings in a turn on the name alone.
func TestSpeakerOnlyLifts(t *testing.T) {
	ix := memIndex(t, []Doc{
		{ID: "bob-lunch", Text: "going for lunch now", Speaker: "Bob"},
		{ID: "bob-alert", Text: "the disk alert on the replica is noisy", Speaker: "Bob"},
		{ID: "dana-alert", Text: "the disk alert on the replica is noisy", Speaker: "Dana"},
		{ID: "tool-alert", Text: "the disk alert on the replica is noisy", Speaker: ""},
	})
	hits := find(t, []*Index{ix}, Query{Text: "what did bob say about the disk alert"})
	got := ids(hits)
	if slices.Contains(got, "bob-lunch") {
		t.Errorf("a turn matching only the speaker's name was returned: %v", got)
	}
	if len(got) != 3 || got[0] != "bob-alert" {
		t.Errorf("Bob's own turn should rank first of the three equal texts: %v", got)
	}
	if hits[1].Score != hits[2].Score {
		t.Errorf("the speaker lifted someone else's turn: %v", hits)
	}
	// Without the name, the equal texts tie and come in id order.
	got = ids(find(t, []*Index{ix}, Query{Text: "disk alert"}))
	if strings.Join(got, " ") != "bob-alert dana-alert tool-alert" {
		t.Errorf("ties not in id order: %v", got)
	}
	if w := speakerWords("Assistant (claude) user"); strings.Join(w, " ") != "claude" {
		t.Errorf("speakerWords kept role words: %q", w)
	}
}

// A day the question asks about lifts the turns of that day that match,
// and finds nothing on the date alone.
func TestDayOnlyLifts(t *testing.T) {
	ix := memIndex(t, []Doc{
		{ID: "a", Text: "the backup failed with a lock error", Day: "2026-03-14"},
		{ID: "b", Text: "the backup failed with a lock error", Day: "2026-03-15"},
		{ID: "c", Text: "lunch", Day: "2026-03-15"},
	})
	got := ids(find(t, []*Index{ix}, Query{Text: "backup lock", Days: []string{"2026-03-15"}}))
	if strings.Join(got, " ") != "b a" {
		t.Errorf("hits = %v, want the day's turn first and nothing on the date alone", got)
	}
}

// The same documents give the same order whatever order they were added
// in and however the index splits them into segments: ties at the cut are
// decided by id.
func TestTiesAreStable(t *testing.T) {
	var docs []Doc
	for i := range 40 {
		docs = append(docs, Doc{ID: fmt.Sprintf("d%02d", i), Text: "the cache key changed"})
	}
	var want []string
	for round := range 5 {
		shuffled := slices.Clone(docs)
		rand.New(rand.NewSource(int64(round))).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		disk, err := Create(filepath.Join(t.TempDir(), "ix"))
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < len(shuffled); i += 3 + round { // a segment per batch
			if err := disk.Add(shuffled[i:min(len(shuffled), i+3+round)]); err != nil {
				t.Fatal(err)
			}
		}
		got := ids(find(t, []*Index{disk}, Query{Text: "cache key", Limit: 12}))
		disk.Close()
		if want == nil {
			want = got
		} else if !slices.Equal(got, want) {
			t.Fatalf("round %d: %v, want %v", round, got, want)
		}
	}
	if strings.Join(want, " ") != "d00 d01 d02 d03 d04 d05 d06 d07 d08 d09 d10 d11" {
		t.Fatalf("the cut did not keep the lowest ids: %v", want)
	}
}

func TestWordForms(t *testing.T) {
	for in, want := range map[string]string{
		"I bought a UPS":                "buy",
		"Forty-one of them":             "41",
		"seventeen boards, twelve cups": "17 12",
		"the hand-over call":            "handover",
		"LW-48211 and v2-beta":          "",
		"one of them":                   "",
		"The mugs broke; it's broken":   "break break",
	} {
		if got := wordForms(in); got != want {
			t.Errorf("wordForms(%q) = %q, want %q", in, got, want)
		}
	}
	ix := memIndex(t, []Doc{
		{ID: "buy", Text: "Dana bought a small UPS"},
		{ID: "num", Text: "Forty-one items were sold at the stall"},
		{ID: "cmp", Text: "the handover call moves to 11:30"},
		{ID: "bak", Text: "the nightly backup runs at 03:15"},
		{ID: "other", Text: "nothing to see"},
	})
	for q, want := range map[string]string{
		"what did Dana buy":         "buy",
		"which 41 items":            "num",
		"when is the hand-over":     "cmp",
		"when does the back up run": "bak",
	} {
		if got := ids(find(t, []*Index{ix}, Query{Text: q})); len(got) == 0 || got[0] != want {
			t.Errorf("%q: %v, want %s first", q, got, want)
		}
	}
}

// The common-words rule only applies where a term is in thousands of
// documents; in a small vault every topic word scores.
func TestCommonByAbsoluteSize(t *testing.T) {
	if isCommon(500, 1000) {
		t.Error("a term in half of 1,000 documents counted as common")
	}
	if !isCommon(commonMinDocs+1, 50*commonMinDocs) {
		t.Error("a term past both limits did not count as common")
	}
	if isCommon(commonMinDocs+1, 1000*commonMinDocs) {
		t.Error("a term under 2 % counted as common")
	}
}

// An explanation's term weights add up to the hit's score.
func TestExplainAddsUp(t *testing.T) {
	ix := memIndex(t, []Doc{
		{ID: "a", Text: "the restic backup hit a stale lock", Context: "why did the backup fail", Speaker: "dana", Day: "2026-03-15"},
		{ID: "b", Text: "a lock on the migration table", Context: "", Speaker: "bob"},
	})
	hits := find(t, []*Index{ix}, Query{Text: "dana backup lock", Days: []string{"2026-03-15"}, Explain: true})
	if len(hits) != 2 {
		t.Fatalf("hits = %v", hits)
	}
	for _, h := range hits {
		var sum float64
		fields := map[string]bool{}
		for _, w := range h.Why {
			sum += w.Score
			fields[w.Field] = true
		}
		if math.Abs(sum-h.Score) > 1e-9*math.Max(1, h.Score) {
			t.Errorf("%s: terms add up to %v, score %v: %+v", h.ID, sum, h.Score, h.Why)
		}
		if h.ID == "a" && !(fields["text"] && fields["context"] && fields["speaker"] && fields["day"]) {
			t.Errorf("a: fields %v, want text, context, speaker and day", fields)
		}
	}
	if hits := find(t, []*Index{ix}, Query{Text: "backup"}); hits[0].Why != nil {
		t.Error("Why filled without Explain")
	}
}

// An index of another mapping version is unusable, so it is rebuilt.
func TestOldMappingUnusable(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ix")
	ix, err := Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	ix.Meta.Version = mappingVersion - 1
	if err := ix.SaveMeta(); err != nil {
		t.Fatal(err)
	}
	ix.Close()
	if _, err := Open(dir, true, time.Second); err == nil || !strings.Contains(err.Error(), "mapping version") {
		t.Fatalf("Open of an older mapping: %v", err)
	}
}

// A question naming a person is about that person's own turns, which seldom
// hold the name; the turns that do are the others addressing them. The
// name must not outweigh the question's other words: Teo's own turn about
// the bandsaw ranks above Nora's question that names him, and a question
// of names only still finds the turns that hold them.
func TestSpeakerNameIsNotAWordToMatch(t *testing.T) {
	docs := []Doc{
		{ID: "nora-hey", Text: "Teo, how is the fussy client doing?", Speaker: "Nora"},
		{ID: "nora-bye", Text: "Have to go, talk soon Teo", Speaker: "Nora"},
		{ID: "teo-saw", Text: "He paid a deposit up front and I bought a proper bandsaw with it.", Speaker: "Teo"},
	}
	for i := range 30 {
		who := []string{"Nora", "Teo"}[i%2]
		docs = append(docs, Doc{ID: fmt.Sprintf("chat-%02d", i), Text: fmt.Sprintf("small talk number %d about the weather and the shift", i), Speaker: who})
	}
	ix := memIndex(t, docs)
	got := ids(find(t, []*Index{ix}, Query{Text: "What did Teo buy with the fussy client's deposit?"}))
	if len(got) == 0 || got[0] != "teo-saw" {
		t.Errorf("the named speaker's own turn is not first: %v", got)
	}
	if got := ids(find(t, []*Index{ix}, Query{Text: "Teo"})); !slices.Contains(got, "nora-bye") {
		t.Errorf("a query of a name only found %v", got)
	}
}
