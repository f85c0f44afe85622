package transcript

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/memvault/memvault/vault/fault"
	"github.com/memvault/memvault/vault/fileio"
)

// FuzzSessionFileName: whatever a session key is, its file name is one
// path element without a dot, and it decodes back unless it was cut.
func FuzzSessionFileName(f *testing.F) {
	for _, s := range []string{"default", "..", "a/b", ".x", "é", "a\x00b", "project:shop", strings.Repeat("x", 200)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		name := SessionFileName(s)
		if strings.ContainsAny(name, "/\\.\x00") || name == "" && s != "" {
			t.Fatalf("session %q encodes to %q", s, name)
		}
		if !strings.Contains(name, "~") && DecodeSessionFileName(name) != s {
			t.Fatalf("session %q does not round-trip: %q", s, DecodeSessionFileName(name))
		}
	})
}

func TestRefParts(t *testing.T) {
	r := Ref{Agent: "claude-code", Session: "a b/c"}
	if got := r.Part(0); got != "transcripts/claude-code/a%20b%2Fc.jsonl" || r.Path() != got {
		t.Fatalf("part 0 = %q, path %q", got, r.Path())
	}
	if got := r.Part(2); got != "transcripts/claude-code/a%20b%2Fc.2.jsonl" {
		t.Fatalf("part 2 = %q", got)
	}
	for _, bad := range []Ref{{Agent: "", Session: "s"}, {Agent: "../x", Session: "s"}, {Agent: "a", Session: ""},
		{Agent: "a", Session: "x\ny"}, {Agent: "a", Session: strings.Repeat("x", maxSessionLen+1)}} {
		if err := bad.Check(); !errors.Is(err, fault.ErrInvalid) {
			t.Errorf("%+v: %v, want ErrInvalid", bad, err)
		}
	}
	if !(Pos{Part: 0, Off: 9}).Before(Pos{Part: 1}) || (Pos{Part: 1, Off: 3}).Before(Pos{Part: 1, Off: 3}) {
		t.Fatal("Before")
	}
}

// writeParts stores t as the engine's transaction would: messages 1…n,
// perPart to a part, and returns the vault's root.
func writeParts(t *testing.T, dir string, r Ref, n, perPart int, tail string) fileio.Root {
	t.Helper()
	root := fileio.At(dir)
	for i := 1; i <= n; i++ {
		line, err := EncodeLine(Stored{N: i, Message: Message{ID: fmt.Sprintf("m%d", i), Role: RoleUser, Text: fmt.Sprint("text ", i)}})
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, filepath.FromSlash(r.Part((i-1)/perPart)))
		if err := root.MkdirAll(filepath.Dir(p)); err != nil {
			t.Fatal(err)
		}
		if err := root.Append(p, line); err != nil {
			t.Fatal(err)
		}
	}
	if tail != "" {
		if err := root.Append(filepath.Join(dir, filepath.FromSlash(r.Part((n-1)/perPart))), []byte(tail)); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// TestReadBack reads a transcript of three parts with a torn last line
// every way the package offers: whole, a range, from a kept place, its end,
// its ids, the list of sessions.
func TestReadBack(t *testing.T) {
	dir := t.TempDir()
	r := Ref{Agent: "default", Session: "s:1"}
	root := writeParts(t, dir, r, 7, 3, `{"n":8,"id":"torn"`)
	if parts, err := Parts(root, r); err != nil || !slices.Equal(parts, []int{0, 1, 2}) {
		t.Fatalf("parts %v, %v", parts, err)
	}
	var got []int
	if err := Read(root, r, 2, 5, func(m Stored) error { got = append(got, m.N); return nil }); err != nil || !slices.Equal(got, []int{2, 3, 4, 5}) {
		t.Fatalf("read 2-5: %v, %v", got, err)
	}
	got = nil
	stop := func(m Stored) error {
		if got = append(got, m.N); m.N == 4 {
			return ErrStop
		}
		return nil
	}
	if err := Read(root, r, 1, 0, stop); err != nil || !slices.Equal(got, []int{1, 2, 3, 4}) {
		t.Fatalf("read to a stop: %v, %v", got, err)
	}
	if err := Read(root, Ref{Agent: "default", Session: "none"}, 1, 0, stop); !errors.Is(err, fault.ErrNotFound) {
		t.Fatalf("a missing transcript: %v", err)
	}

	var ends []Pos
	if err := ReadFrom(root, r, Pos{}, func(m Stored, end Pos) error { ends = append(ends, end); return nil }); err != nil || len(ends) != 7 {
		t.Fatalf("read from the start: %d messages, %v", len(ends), err)
	}
	for i, p := range ends {
		if !ValidPos(root, r, p) || IDEndingAt(root, r, p) != fmt.Sprintf("m%d", i+1) {
			t.Fatalf("message %d ends at %+v: valid %v, id %q", i+1, p, ValidPos(root, r, p), IDEndingAt(root, r, p))
		}
	}
	var rest []string
	if err := ReadFrom(root, r, ends[3], func(m Stored, _ Pos) error { rest = append(rest, m.ID); return nil }); err != nil || !slices.Equal(rest, []string{"m5", "m6", "m7"}) {
		t.Fatalf("read from after m4: %v, %v", rest, err)
	}
	if mid := (Pos{Part: ends[0].Part, Off: ends[0].Off - 1}); ValidPos(root, r, mid) || IDEndingAt(root, r, mid) != "" {
		t.Fatal("a place inside a line passes")
	}
	if ValidPos(root, r, Pos{Part: 5, Off: 1}) || !ValidPos(root, r, Pos{}) {
		t.Fatal("ValidPos of a missing part, or of the start")
	}

	end, err := EndOf(root, r)
	info, serr := root.Stat(filepath.Join(dir, filepath.FromSlash(r.Part(2))))
	if err != nil || serr != nil || end.Part != 2 || end.Last != 7 || end.Size != info.Size() {
		t.Fatalf("end %+v, %v", end, err)
	}
	if ids, err := MessageIDs(root, r); err != nil || len(ids) != 7 || !ids["m7"] || ids["torn"] {
		t.Fatalf("ids %v, %v", ids, err)
	}
	if ids, err := MessageIDs(root, Ref{Agent: "default", Session: "none"}); err != nil || len(ids) != 0 {
		t.Fatalf("ids of a missing transcript: %v, %v", ids, err)
	}

	writeParts(t, dir, Ref{Agent: "codex", Session: "b"}, 1, 3, "")
	sessions, err := Sessions(root)
	if err != nil || len(sessions) != 2 {
		t.Fatalf("sessions %+v, %v", sessions, err)
	}
	if s := sessions[1]; s.Agent != "default" || s.Session != "s:1" || s.Parts != 3 || s.Messages != 7 || s.Path != r.Path() {
		t.Fatalf("session %+v", s)
	}
	if s, err := Sessions(fileio.At(t.TempDir())); err != nil || s != nil {
		t.Fatalf("no transcripts: %v, %v", s, err)
	}
}
