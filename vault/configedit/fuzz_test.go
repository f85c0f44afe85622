package configedit

import (
	"bytes"
	"testing"
)

// FuzzRoundTrip: whatever a person's file holds, the editor never panics;
// a file it accepts and that has no "hooks" key of its own comes back byte
// for byte after memvault's entries are added (each edit checked by the
// dialect's decoder, in Bytes) and removed again; and an edit it cannot
// make is an error, never a changed file.
func FuzzRoundTrip(f *testing.F) {
	for _, tc := range roundTrips {
		f.Add([]byte(tc.src), tc.dialect == "5")
	}
	f.Add([]byte("{\"a\": [1, {\"b\": null}], /* x */ \"c\": \"d\" // e\n}"), false)
	f.Add([]byte("{a: 'b', c: [0x1F, .5, +Infinity,], }"), true)
	f.Fuzz(func(t *testing.T, src []byte, json5 bool) {
		d := JSONC
		if json5 {
			d = JSON5
		}
		e, err := New(src, d)
		if err != nil {
			return
		}
		if n, _ := e.Find("hooks"); n != nil {
			return // the person's own hooks: round trips of those are the installer's tests
		}
		orig, err := e.Bytes()
		if err != nil {
			return // a file the dialect's decoder reads differently: refused, not edited
		}
		inner := e.src[e.root.Start+1 : e.root.End-1]
		if e.Blank() || len(e.root.Members) == 0 && len(inner) > 0 && len(bytes.TrimSpace(inner)) == 0 {
			// A known limit (docs/HOOKS.md, "Installing"): a blank file is
			// written from scratch, and an empty object with only white
			// space inside ("{ }") closes up to "{}" when its last member
			// goes.
			return
		}
		if err := e.Set(nil, "hooks", Obj{{"Stop", []any{group}}}); err != nil {
			return
		}
		if _, err := e.Bytes(); err != nil {
			t.Fatalf("an insertion gave text its decoder rejects: %v\nsrc %q", err, src)
		}
		if err := e.Delete(nil, "hooks"); err != nil {
			t.Fatalf("removing what was just inserted: %v\nsrc %q", err, src)
		}
		got, err := e.Bytes()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, orig) {
			t.Fatalf("round trip changed the file\nsrc  %q\ngot  %q", orig, got)
		}
	})
}
