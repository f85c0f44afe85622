package vault

import (
	"bytes"
	"errors"
	"path"
	"slices"
	"strings"
	"testing"
	"time"
)

// FuzzParseLine: no ledger line makes the decoder panic, and a line whose
// hash checks re-seals to the same hash and the same canonical bytes.
func FuzzParseLine(f *testing.F) {
	ev := &Event{ID: "e_x", TS: "2026-11-22T10:00:00.000Z", Agent: "a", Kind: "fact", Text: "x", Data: []byte(`{"n":1.50}`)}
	line, _ := ev.seal("p")
	f.Add(bytes.TrimSuffix(line, []byte("\n")))
	f.Add([]byte(`{"hash":"","id":1}`))
	f.Add([]byte(`[1,2`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, ok, err := parseLine(raw)
		if err != nil || !ok {
			return
		}
		stored := got.Hash
		resealed, err := got.seal(got.Prev)
		if err != nil {
			t.Fatalf("reseal: %v", err)
		}
		if got.Hash != stored {
			t.Fatalf("a verified line re-seals to another hash: %s vs %s", got.Hash, stored)
		}
		if _, ok2, _ := parseLine(bytes.TrimSuffix(resealed, []byte("\n"))); !ok2 {
			t.Fatal("a re-sealed line does not verify")
		}
	})
}

// FuzzPathNames: whatever an outside name is, what the constructors accept
// is one path element inside the vault.
func FuzzPathNames(f *testing.F) {
	for _, s := range []string{"default", "..", "a/b", ".x", "é", "a\x00b", "project:shop", strings.Repeat("x", 200)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if CheckName("name", s) == nil {
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
		name := sessionFileName(s)
		if strings.ContainsAny(name, "/\\.\x00") || name == "" && s != "" {
			t.Fatalf("session %q encodes to %q", s, name)
		}
		if !strings.Contains(name, "~") && decodeSessionFileName(name) != s {
			t.Fatalf("session %q does not round-trip: %q", s, decodeSessionFileName(name))
		}
	})
}

func TestIDTimeRoundTripFuzzSeed(t *testing.T) {
	id := NewID("n_", time.UnixMilli(1234567890123))
	if ts, ok := idTime(id); !ok || ts.UnixMilli() != 1234567890123 {
		t.Fatal(ts, ok)
	}
}

// FuzzGitIndex feeds index files to the index code: a whole index to patch,
// a split index's own file (against a real shared index), and EWAH bitmaps.
// Nothing may panic; what is accepted must come out well formed.
func FuzzGitIndex(f *testing.F) {
	gitDir := f.TempDir()
	r := &repo{gitDir: gitDir}
	var changes []*fileChange
	for _, p := range []string{"a.md", "b/c.md", "b/d.md", "z.md"} {
		changes = append(changes, &fileChange{path: p})
	}
	whole, err := patchIndex(nil, changes)
	if err != nil {
		f.Fatal(err)
	}
	var split bytes.Buffer
	if err := r.writeSplitOnNewShared(&split, whole, nil); err != nil {
		f.Fatal(err)
	}
	var patched bytes.Buffer
	ix, _ := parseIndex(split.Bytes())
	if err := r.writeSplitPatch(&patched, ix, ix.ext("link"), []*fileChange{{path: "b/c.md"}, {path: "z.md", deleted: true}, {path: "new.md"}}); err != nil && !errors.Is(err, errReshare) {
		f.Fatal(err)
	}
	f.Add(whole)
	f.Add(split.Bytes())
	f.Add(patched.Bytes())
	f.Add(encodeEWAH([]int{0, 3, 64, 200}))
	f.Fuzz(func(t *testing.T, data []byte) {
		if set, n, err := decodeEWAH(data, 1<<16); err == nil {
			if n > len(data) {
				t.Fatalf("took %d bytes of %d", n, len(data))
			}
			again, _, err := decodeEWAH(encodeEWAH(set), 1<<16)
			if err != nil || len(set) > 0 && !slices.Equal(again, set) {
				t.Fatalf("round trip: %v → %v, %v", set, again, err)
			}
		}
		ix, err := parseIndex(data)
		if err != nil {
			return
		}
		change := &fileChange{path: "m/new.md"}
		if link := ix.ext("link"); link != nil {
			var out bytes.Buffer
			_ = r.writeSplitPatch(&out, ix, link, []*fileChange{change})
			if whole, err := r.unsplit(ix, link); err == nil {
				if _, err := parseIndex(whole); err != nil {
					t.Fatalf("unsplit gave an index that does not parse: %v", err)
				}
			}
			return
		}
		var out bytes.Buffer
		if err := writeIndexPatch(&out, data, []*fileChange{change}); err != nil {
			return
		}
		got, err := parseIndex(out.Bytes())
		if err != nil {
			t.Fatalf("patched index does not parse: %v", err)
		}
		found := false
		got.each(func(_, _ int, name []byte) { found = found || string(name) == change.path })
		if !found {
			t.Fatal("patched index lacks the new path")
		}
	})
}
