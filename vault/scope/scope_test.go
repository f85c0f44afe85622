package scope

import (
	"fmt"
	"os"
	"testing"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/codec"
	"github.com/memvault/memvault/vault/testvault"
	"github.com/memvault/memvault/vault/transcript"
)

// The folded scope is brought up to date from the events appended since it
// was saved, and gives what a full fold gives.
func TestScopeFoldsAppendedEvents(t *testing.T) {
	v := testvault.New(t)
	bind := func(session, thread string) {
		t.Helper()
		_, err := v.Update(vault.TxOptions{}, func(tx *vault.Tx) error {
			return BindSession(tx, transcript.Ref{Agent: v.Config.Agent, Session: session}, thread)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	bind("s1", "project:shop")
	if _, err := Load(v); err != nil {
		t.Fatal(err)
	}
	bind("s2", "person:alice")
	testvault.Remember(t, v, "a fact with no thread")
	bind("s1", "topic:billing")
	// Without the per-segment facts, only the incremental path can answer
	// without writing them again.
	os.Remove(codec.FilePath(v.Root, FactsFile))
	sc, err := Load(v)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(codec.FilePath(v.Root, FactsFile)); err == nil {
		t.Fatal("the scope was folded from every segment, not from the appended events")
	}
	os.Remove(View.Path(v.Root))
	os.Remove(codec.FilePath(v.Root, FactsFile))
	full, err := Load(v)
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
	sc := &Scope{folded: [][3]string{{"", "", ""}, {"a", "s\t2", "person:é"}, {"a", "s1", "project:x"}},
		sessionThreads: map[[2]string]map[string]bool{{"b", "s3"}: {"topic:y": true}},
		Pairs:          [][2]string{{"project:x", "person:é"}}, known: map[string]bool{"project:x": true}}
	var e codec.Encoder
	encode(&e, sc)
	got, ok := decode(codec.NewDecoder(e.B))
	want := &Scope{folded: sc.Sessions(), sessionThreads: map[[2]string]map[string]bool{}, Pairs: sc.Pairs, known: sc.known}
	if !ok || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("round trip: %v %+v", ok, got)
	}
	for i := range len(e.B) {
		if d := codec.NewDecoder(e.B[:i:i]); func() bool { _, ok := decode(d); return ok && d.Done() }() {
			t.Fatalf("a cut at %d of %d bytes decoded", i, len(e.B))
		}
	}
}
