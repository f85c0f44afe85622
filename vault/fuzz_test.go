package vault

import (
	"bytes"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/memvault/memvault/vault/fileio"
)

// FuzzParseLine: no ledger line makes the decoder panic, and a line whose
// hash checks re-seals to the same hash and the same canonical bytes.
func FuzzParseLine(f *testing.F) {
	ev := &Event{ID: "e_x", TS: "2026-11-22T10:00:00.000Z", Agent: "a", Kind: "fact", Text: "x", Data: []byte(`{"n":1.50}`)}
	line, _ := ev.Seal("p")
	f.Add(bytes.TrimSuffix(line, []byte("\n")))
	f.Add([]byte(`{"hash":"","id":1}`))
	f.Add([]byte(`[1,2`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, ok, err := ParseLine(raw)
		if err != nil || !ok {
			return
		}
		stored := got.Hash
		resealed, err := got.Seal(got.Prev)
		if err != nil {
			t.Fatalf("reseal: %v", err)
		}
		if got.Hash != stored {
			t.Fatalf("a verified line re-seals to another hash: %s vs %s", got.Hash, stored)
		}
		if _, ok2, _ := ParseLine(bytes.TrimSuffix(resealed, []byte("\n"))); !ok2 {
			t.Fatal("a re-sealed line does not verify")
		}
	})
}

// FuzzPathNames: whatever an outside name is, what the constructors accept
// is one path element inside the vault. (Session keys have their own
// encoding: vault/transcript's FuzzSessionFileName.)
func FuzzPathNames(f *testing.F) {
	for _, s := range []string{"default", "..", "a/b", ".x", "é", "a\x00b", "project:shop", strings.Repeat("x", 200)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if fileio.CheckName("name", s) == nil {
			if strings.ContainsAny(s, "/\\\x00") || s == "." || s == ".." || strings.HasPrefix(s, ".") {
				t.Fatalf("accepted %q", s)
			}
			r, err := relPath("name", "nodes", s)
			if err != nil || path.Dir(r.String()) != "nodes" {
				t.Fatalf("%q escaped: %q %v", s, r, err)
			}
		}
		if th, err := ParseThread(s); err == nil {
			hp := th.HeadPath().String()
			if path.Clean(hp) != hp || !strings.HasPrefix(hp, "threads/") || strings.Count(hp, "/") != 2 {
				t.Fatalf("thread %q gives head path %q", s, hp)
			}
		}
	})
}

func TestIDTimeRoundTripFuzzSeed(t *testing.T) {
	id := NewID("n_", time.UnixMilli(1234567890123))
	if ts, ok := idTime(id); !ok || ts.UnixMilli() != 1234567890123 {
		t.Fatal(ts, ok)
	}
}
