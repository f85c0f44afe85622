package vault

import (
	"errors"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/memvault/memvault/vault/node"
)

// stateOf folds events with the given ids, in order, into a State.
func stateOf(ids ...string) *State {
	st := &State{ByID: map[string]*Row{}}
	for _, id := range ids {
		st.Add(&Row{Event: &Event{ID: id, Kind: "fact", TS: "2026-11-22T10:00:00.000Z", Text: "text of " + id}})
	}
	return st
}

// TestResolveEventID tries to make a prefix name the wrong event, or none
// quietly: ambiguous prefixes, unknown ones, exact full ids, the marker
// alone, other id types, upper case, and hostile input.
func TestResolveEventID(t *testing.T) {
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	a := NewID("e_", now)
	b := NewID("e_", now) // same millisecond: shares the first 10 characters with a
	c := NewID("e_", now.Add(400*24*time.Hour))
	hand := "e_handmade" // a hand-written id: not NewID's form, found whole
	st := stateOf(a, b, c, hand)
	common := 0
	for common < len(a) && a[common] == b[common] {
		common++
	}
	if common < 12 {
		t.Fatalf("ids of one millisecond share only %d bytes: %s %s", common, a, b)
	}
	unique := func(id, other string) string { // the shortest prefix of id that other lacks
		for n := 2 + MinIDPrefix; n <= len(id); n++ {
			if !strings.HasPrefix(other, id[:n]) {
				return id[:n]
			}
		}
		t.Fatalf("%s and %s are equal", id, other)
		return ""
	}

	ok := map[string]string{
		a:                                 a,
		b:                                 b,
		hand:                              hand,
		unique(a, b):                      a,
		unique(b, a):                      b,
		strings.ToUpper(unique(c, a)[2:]): c, // no marker, upper case
		"  " + a + "\n":                   a, // pasted with blanks
		"e_" + strings.ToUpper(a[2:]):     a,
	}
	for arg, want := range ok {
		got, err := st.ResolveEventID("retract", arg)
		if err != nil || got != want {
			t.Errorf("ResolveEventID(%q) = %q, %v; want %q", arg, got, err, want)
		}
	}

	type bad struct {
		arg   string
		class error
		want  string // in the message or the hint
	}
	ambiguous := a[:common]
	for _, tc := range []bad{
		{ambiguous, ErrInvalid, a},                   // both candidates listed
		{ambiguous, ErrInvalid, b},                   // …
		{a[:2+MinIDPrefix], ErrInvalid, "ambiguous"}, // a, b and c share the year's prefix
		{"e_", ErrInvalid, "too short"},
		{"e_0", ErrInvalid, "too short"},
		{a[:2+MinIDPrefix-1], ErrInvalid, "too short"},
		{"", ErrInvalid, "empty"},
		{"e_zzzzzzzz", ErrNotFound, "no such event"},
		{"e_" + strings.Repeat("z", 26), ErrNotFound, "no such event"},
		{a + "0", ErrInvalid, "longer than an id"},
		{"n_" + a[2:], ErrInvalid, "a node id"},
		{"m_" + a[2:], ErrInvalid, "a message id"},
		{"x_" + a[2:], ErrInvalid, "not an id"},
		{"e_01jq*", ErrInvalid, "not an id"},
		{"e_../../etc", ErrInvalid, "not an id"},
		{"e_01jqou", ErrInvalid, "not an id"}, // o and u are not Crockford
		{"e_01j\x00q", ErrInvalid, "not an id"},
		{"e_01jqé", ErrInvalid, "not an id"},
		{"e_" + strings.Repeat("0", 10000), ErrInvalid, "longer"},
		{"e_\x1b[31mred", ErrInvalid, `"e_\x1b[31mred"`}, // quoted, never raw
	} {
		got, err := st.ResolveEventID("retract", tc.arg)
		if err == nil {
			t.Errorf("ResolveEventID(%q) = %q, want an error", tc.arg, got)
			continue
		}
		if !errors.Is(err, tc.class) {
			t.Errorf("ResolveEventID(%q): %v is not of class %v", tc.arg, err, tc.class)
		}
		if text := err.Error() + "\n" + HintOf(err); !strings.Contains(text, tc.want) {
			t.Errorf("ResolveEventID(%q): %q lacks %q", tc.arg, text, tc.want)
		}
		if !strings.HasPrefix(err.Error(), "retract ") {
			t.Errorf("ResolveEventID(%q): %q does not begin with the verb", tc.arg, err)
		}
	}
}

// TestResolveEventIDListsAtMostTen: a prefix shared by many ids lists ten
// and says how many more, so a short prefix on a big vault does not print
// the whole ledger.
func TestResolveEventIDListsAtMostTen(t *testing.T) {
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	var ids []string
	for range 25 {
		ids = append(ids, NewID("e_", now))
	}
	st := stateOf(ids...)
	_, err := st.ResolveEventID("", ids[0][:8])
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("got %v, want ErrInvalid", err)
	}
	hint := HintOf(err)
	if n := strings.Count(hint, "\n  e_"); n != maxIDCandidates {
		t.Errorf("hint lists %d candidates, want %d:\n%s", n, maxIDCandidates, hint)
	}
	if !strings.Contains(hint, "and 15 more") {
		t.Errorf("hint does not say how many more:\n%s", hint)
	}
	if !strings.Contains(err.Error(), "25 events") {
		t.Errorf("message does not count the candidates: %v", err)
	}
}

func TestResolveNodeID(t *testing.T) {
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	a, b := NewID("n_", now), NewID("n_", now.Add(90*24*time.Hour))
	ix := &node.Index{Nodes: map[string]*node.Node{a: {ID: a, Kind: node.Compaction}, b: {ID: b, Kind: node.Condensed}}, Parents: map[string][]string{}}
	n := 2 + MinIDPrefix
	for a[:n] == b[:n] {
		n++
	}
	if got, err := resolveNodeID(ix, "expand", a[:n]); err != nil || got != a {
		t.Errorf("ResolveNodeID(%q) = %q, %v; want %s", a[:n], got, err, a)
	}
	if _, err := resolveNodeID(ix, "expand", "e_"+a[2:]); !errors.Is(err, ErrInvalid) {
		t.Errorf("an event id for a node: %v, want ErrInvalid", err)
	}
	if _, err := resolveNodeID(ix, "expand", "n_zzzz"); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown prefix: %v, want ErrNotFound", err)
	}
}

// TestLedgerKindsMatchAPIDoc holds LedgerKinds to the kind tables of
// docs/API.md both ways: a kind the doc names that `ledger --kind` would
// refuse, or a kind the filter knows that the doc never explains, fails.
func TestLedgerKindsMatchAPIDoc(t *testing.T) {
	data, err := os.ReadFile("../docs/API.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := map[string]bool{}
	cell := regexp.MustCompile("^\\| `([a-z][a-z.]*)`")
	for _, line := range strings.Split(string(data), "\n") {
		if m := cell.FindStringSubmatch(line); m != nil {
			doc[m[1]] = true
		}
	}
	kinds := LedgerKinds()
	if !slices.IsSorted(kinds) {
		t.Errorf("LedgerKinds is not sorted: %v", kinds)
	}
	for k := range doc {
		if strings.Contains(k, ".") || slices.Contains(RememberKinds, k) || k == KindDone || k == KindRetract || k == KindSupersede {
			if !slices.Contains(kinds, k) {
				t.Errorf("docs/API.md documents kind %s; LedgerKinds lacks it", k)
			}
		}
	}
	for _, k := range kinds {
		if !doc[k] && legacyKinds[k] == "" {
			t.Errorf("LedgerKinds has %s; no kind table of docs/API.md documents it", k)
		}
	}
}

// TestResolveMessagesStayShort: a hostile argument is cut and quoted in
// the message, so it can neither flood nor drive the terminal.
func TestResolveMessagesStayShort(t *testing.T) {
	st := stateOf()
	for _, arg := range []string{"e_" + strings.Repeat("0", 100000), "e_\x1b]0;pwned\x07", strings.Repeat("é", 5000)} {
		_, err := st.ResolveEventID("retract", arg)
		if err == nil {
			t.Fatalf("%q resolved", arg)
		}
		if msg := err.Error(); len(msg) > 200 || strings.ContainsAny(msg, "\x1b\x07") {
			t.Errorf("message for a hostile id is %d bytes or holds control characters: %q", len(msg), msg)
		}
	}
}

// idTime recovers the creation time embedded in an id made by NewID: the
// tests' check that NewID put it there.
func idTime(id string) (time.Time, bool) {
	i := strings.IndexByte(id, '_')
	if i < 0 || len(id)-i-1 != 26 {
		return time.Time{}, false
	}
	var ms uint64
	// The first 10 groups hold 50 bits: 2 bits of zero padding above the
	// 48 bits of milliseconds.
	for _, c := range id[i+1 : i+11] {
		k := strings.IndexRune(crockford, c)
		if k < 0 {
			return time.Time{}, false
		}
		ms = ms<<5 | uint64(k)
	}
	return time.UnixMilli(int64(ms)), true
}
