package transcript

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
)

// TestRewrittenSource rewrites a file behind a cursor in the ways a check
// of the byte before the cursor cannot see (same length, a newline where
// the cursor stopped) and wants ErrRewritten; the file as it was, or grown,
// reads on.
func TestRewrittenSource(t *testing.T) {
	lines := []string{
		`{"id":"a","role":"user","text":"one"}` + "\n",
		`{"id":"b","role":"assistant","text":"two"}` + "\n",
	}
	data := []byte(lines[0] + lines[1])
	res, err := ParseBytes(Generic, data, Cursor{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	grown := append(bytes.Clone(data), `{"id":"c","role":"user","text":"three"}`+"\n"...)
	more, err := ParseBytes(Generic, grown, res.Next, Options{})
	if err != nil || len(more.Messages) != 1 || more.Messages[0].ID != "c" {
		t.Fatalf("grown file: %v, %+v", err, more.Messages)
	}
	for name, rewritten := range map[string]string{
		"last line changed, same length": lines[0] + `{"id":"b","role":"assistant","text":"TWO"}` + "\n",
		"lines swapped":                  `{"id":"b","role":"assistant","text":"two"}` + "\n" + `{"id":"a","role":"user","text":"one"}` + "\n" + "    \n",
		"shorter last line":              lines[0] + `{"id":"b","role":"user","text":"2"}` + "\n" + "       \n",
	} {
		if len(rewritten) < len(data) {
			t.Fatalf("%s: the rewrite must not be shorter", name)
		}
		if rewritten[res.Next.Offset-1] != '\n' && name != "shorter last line" {
			t.Fatalf("%s: the rewrite must keep a newline before the cursor", name)
		}
		_, err := ParseBytes(Generic, []byte(rewritten), res.Next, Options{})
		if !errors.Is(err, ErrRewritten) && !errors.Is(err, ErrMidLine) {
			t.Errorf("%s: err = %v, want ErrRewritten", name, err)
		}
	}
	// A cursor that knows no last line (an older one) is not checked.
	old := res.Next
	old.LastLen, old.LastSum = 0, ""
	if _, err := ParseBytes(Generic, []byte(lines[0]+`{"id":"b","role":"assistant","text":"TWO"}`+"\n"), old, Options{}); err != nil {
		t.Fatalf("cursor without a last line: %v", err)
	}
}

// farReader records the lowest offset read, so a test can tell whether a
// parse looked back into the file.
type farReader struct {
	data   []byte
	lowest int64
}

func (r *farReader) ReadAt(p []byte, off int64) (int, error) {
	r.lowest = min(r.lowest, off)
	return bytes.NewReader(r.data).ReadAt(p, off)
}

// TestSessionWindows parses every fixture a few hundred bytes at a time,
// each call from the last one's Next, with and without a Session, and wants
// exactly the messages one call gives. With a Session no call reads further
// back than the line the cursor ends: a format that looks back (Gemini)
// keeps what it learnt in the Session instead of reading the file again.
func TestSessionWindows(t *testing.T) {
	for _, tc := range fixtureCases {
		t.Run(string(tc.format), func(t *testing.T) {
			data := readFixture(t, tc.file)
			opts := Options{NoRedact: true}
			whole, err := ParseBytes(tc.format, data, Cursor{}, opts)
			if err != nil {
				t.Fatal(err)
			}
			for _, withSession := range []bool{false, true} {
				o := opts
				if withSession {
					o.Session = &Session{}
				}
				var got []Message
				cur := Cursor{}
				window := int64(300)
				for cur.Offset < int64(len(data)) {
					end := min(int64(len(data)), cur.Offset+window)
					r := &farReader{data: data[:end], lowest: cur.Offset}
					res, err := Parse(tc.format, r, end, cur, o)
					if err != nil {
						t.Fatal(err)
					}
					if withSession && cur.Offset > 0 && r.lowest < cur.Offset-int64(cur.LastLen) {
						t.Fatalf("at %d: read back to %d with a session", cur.Offset, r.lowest)
					}
					if res.Next.Offset == cur.Offset {
						window *= 2 // a line longer than the window
						continue
					}
					got = append(got, res.Messages...)
					cur = res.Next
					window = 300
				}
				if !reflect.DeepEqual(got, whole.Messages) {
					t.Fatalf("session %v: windows give %d messages, one call %d", withSession, len(got), len(whole.Messages))
				}
				if cur != whole.Next {
					t.Fatalf("session %v: next %+v, want %+v", withSession, cur, whole.Next)
				}
			}
		})
	}
}

// TestSessionNotReusedAcrossAJump: a Session handed a cursor it did not
// end at starts afresh, so a format that looks back still learns the lines
// before it (Gemini: a record rewritten later is not imported twice).
func TestSessionNotReusedAcrossAJump(t *testing.T) {
	data := []byte(`{"id":"r1","type":"gemini","content":"answer"}` + "\n" +
		`{"id":"x","type":"user","content":"next"}` + "\n" +
		`{"id":"r1","type":"gemini","content":"answer","toolCalls":[{"id":"t1","name":"ls","args":{},"status":"success"}]}` + "\n")
	whole, err := ParseBytes(Gemini, data, Cursor{}, Options{NoRedact: true})
	if err != nil {
		t.Fatal(err)
	}
	s := &Session{}
	first, err := ParseBytes(Gemini, data[:bytes.IndexByte(data, '\n')+1], Cursor{}, Options{NoRedact: true, Session: s})
	if err != nil {
		t.Fatal(err)
	}
	// Skip the second line with a cursor the session did not hand out.
	second := bytes.IndexByte(data[first.Next.Offset:], '\n') + int(first.Next.Offset) + 1
	res, err := ParseBytes(Gemini, data, Cursor{Offset: int64(second)}, Options{NoRedact: true, Session: s})
	if err != nil {
		t.Fatal(err)
	}
	var wantTail []Message
	for _, m := range whole.Messages {
		if m.Source.Offset >= int64(second) {
			wantTail = append(wantTail, m)
		}
	}
	if !reflect.DeepEqual(res.Messages, wantTail) {
		t.Fatalf("after a jump: %+v, want %+v", res.Messages, wantTail)
	}
}
