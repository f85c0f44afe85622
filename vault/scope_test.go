package vault

import (
	"fmt"
	"os"
	"testing"
)

// The folded scope is brought up to date from the events appended since it
// was saved, and gives what a full fold gives.
func TestScopeFoldsAppendedEvents(t *testing.T) {
	v := newVault(t)
	bind := func(session, thread string) {
		t.Helper()
		_, err := v.Update(TxOptions{}, func(tx *Tx) error {
			return tx.BindSession(TranscriptRef{Agent: v.Config.Agent, Session: session}, thread)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	bind("s1", "project:shop")
	if _, err := v.LoadScope(); err != nil {
		t.Fatal(err)
	}
	bind("s2", "person:alice")
	remember(t, v, "a fact with no thread")
	bind("s1", "topic:billing")
	// Without the per-segment facts, only the incremental path can answer
	// without writing them again.
	os.Remove(StateFilePath(v.Root, ScopeFactsFile))
	sc, err := v.LoadScope()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(StateFilePath(v.Root, ScopeFactsFile)); err == nil {
		t.Fatal("the scope was folded from every segment, not from the appended events")
	}
	os.Remove(ScopeView.Path(v.Root))
	os.Remove(StateFilePath(v.Root, ScopeFactsFile))
	full, err := v.LoadScope()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"s1", "s2"} {
		got, want := sc.SessionThreads(v.Config.Agent, s), full.SessionThreads(v.Config.Agent, s)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("session %s: incremental %v, full %v", s, got, want)
		}
	}
	if got, want := sc.Threads(), full.Threads(); fmt.Sprint(got) != fmt.Sprint(want) || len(got) != 3 {
		t.Fatalf("threads: incremental %v, full %v", got, want)
	}
}

func TestScopeCodecRoundTrip(t *testing.T) {
	sc := &Scope{Folded: [][3]string{{"", "", ""}, {"a", "s\t2", "person:é"}, {"a", "s1", "project:x"}},
		sessionThreads: map[[2]string]map[string]bool{{"b", "s3"}: {"topic:y": true}},
		Pairs:          [][2]string{{"project:x", "person:é"}}, known: map[string]bool{"project:x": true}}
	var e Encoder
	EncodeScope(&e, sc)
	got, ok := DecodeScope(NewDecoder(e.B))
	want := &Scope{Folded: sc.Sessions(), sessionThreads: map[[2]string]map[string]bool{}, Pairs: sc.Pairs, known: sc.known}
	if !ok || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("round trip: %v %+v", ok, got)
	}
	for i := range len(e.B) {
		if d := NewDecoder(e.B[:i:i]); func() bool { _, ok := DecodeScope(d); return ok && d.Done() }() {
			t.Fatalf("a cut at %d of %d bytes decoded", i, len(e.B))
		}
	}
}
