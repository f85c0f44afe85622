package index

import (
	"bytes"
	"encoding/binary"
	"errors"
	"slices"
	"testing"
)

// FuzzGitIndex feeds index files to the index code: a whole index to patch,
// a split index's own file (against a real shared index), and EWAH bitmaps.
// Nothing may panic; what is accepted must come out well formed.
func FuzzGitIndex(f *testing.F) {
	d := sharedDir(f.TempDir())
	var changes []Change
	for _, p := range []string{"a.md", "b/c.md", "b/d.md", "z.md"} {
		changes = append(changes, Change{Path: p})
	}
	whole, err := patchIndex(nil, changes)
	if err != nil {
		f.Fatal(err)
	}
	var split bytes.Buffer
	if err := d.writeSplitOnNewShared(&split, whole, nil); err != nil {
		f.Fatal(err)
	}
	var patched bytes.Buffer
	ix, _ := parseIndex(split.Bytes())
	if err := d.writeSplitPatch(&patched, ix, ix.ext("link"), []Change{{Path: "b/c.md"}, {Path: "z.md", Deleted: true}, {Path: "new.md"}}); err != nil && !errors.Is(err, errReshare) {
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
		change := Change{Path: "m/new.md"}
		if link := ix.ext("link"); link != nil {
			var out bytes.Buffer
			_ = d.writeSplitPatch(&out, ix, link, []Change{change})
			if whole, err := d.unsplit(ix, link); err == nil {
				if _, err := parseIndex(whole); err != nil {
					t.Fatalf("unsplit gave an index that does not parse: %v", err)
				}
			}
			return
		}
		var out bytes.Buffer
		if err := writeIndexPatch(&out, data, []Change{change}); err != nil {
			return
		}
		got, err := parseIndex(out.Bytes())
		if err != nil {
			t.Fatalf("patched index does not parse: %v", err)
		}
		found := false
		got.each(func(_, _ int, name []byte) { found = found || string(name) == change.Path })
		if !found {
			t.Fatal("patched index lacks the new path")
		}
	})
}

func TestEWAHRoundTrip(t *testing.T) {
	for _, set := range [][]int{nil, {0}, {63}, {64}, {0, 1, 2, 64, 200, 201, 5000}, {100000}} {
		got, n, err := decodeEWAH(encodeEWAH(set), 1<<20)
		if err != nil || n != len(encodeEWAH(set)) || !slices.Equal(got, set) && len(set) > 0 {
			t.Errorf("%v: got %v, %d bytes, %v", set, got, n, err)
		}
	}
	// A run of ones, as git may write it: two words of ones, then a literal.
	data := make([]byte, 8+3*8+4)
	binary.BigEndian.PutUint32(data[0:], 130)
	binary.BigEndian.PutUint32(data[4:], 2)
	binary.BigEndian.PutUint64(data[8:], 1|2<<1|1<<33)
	binary.BigEndian.PutUint64(data[16:], 0b101)
	got, _, err := decodeEWAH(data[:8+2*8+4], 131)
	if err != nil || len(got) != 130 || got[127] != 127 || got[128] != 128 || got[129] != 130 {
		t.Fatalf("run of ones: %v %v", got, err)
	}
	// A bit past the index it describes is refused, as git refuses it.
	if _, _, err := decodeEWAH(data[:8+2*8+4], 130); err == nil {
		t.Fatal("bit 130 of a 130-entry index should be an error")
	}
	if _, _, err := decodeEWAH(data[:8+2*8+4], 100); err == nil {
		t.Fatal("a run of ones past a 100-entry index should be an error")
	}
}

// patchIndex returns git's index file data with the entries for changes
// replaced, inserted or removed, and every other entry copied byte for
// byte. It is writeIndexPatch into memory.
func patchIndex(data []byte, changes []Change) ([]byte, error) {
	var buf bytes.Buffer
	if err := writeIndexPatch(&buf, data, changes); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
