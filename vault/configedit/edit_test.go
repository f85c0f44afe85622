package configedit

import (
	"strings"
	"testing"
)

// group is a value like the hook group memvault inserts.
var group = Obj{{"hooks", []any{Obj{{"type", "command"}, {"command", "memvault hook x stop && echo <ok> || true"}}}}}

// roundTrips are files an insertion then a removal must give back byte for
// byte, in every layout a person writes.
var roundTrips = []struct{ name, dialect, src string }{
	{"empty object", "c", "{}"},
	{"empty object, newline", "c", "{}\n"},
	{"two-space", "c", "{\n  \"model\": \"opus\"\n}\n"},
	{"four-space", "c", "{\n    \"model\": \"opus\",\n    \"env\": {\"A\": \"1\"}\n}\n"},
	{"tabs", "c", "{\n\t\"model\": \"opus\"\n}\n"},
	{"crlf", "c", "{\r\n  \"model\": \"opus\"\r\n}\r\n"},
	{"bom", "c", "\xEF\xBB\xBF{\n  \"model\": \"opus\"\n}\n"},
	{"one line", "c", `{"model": "opus", "env": {"A": "1"}}`},
	{"one line compact", "c", `{"model":"opus","env":{"A":"1"}}`},
	{"trailing comma", "c", "{\n  \"model\": \"opus\",\n}\n"},
	{"comment after last", "c", "{\n  \"model\": \"opus\" // the best\n}\n"},
	{"comment after comma", "c", "{\n  \"a\": 1, // one\n  \"model\": \"opus\", /* two */\n}\n"},
	{"comment lines", "c", "// settings\n{\n  // the model\n  \"model\": \"opus\"\n  // end\n}\n// bye\n"},
	{"comment in empty", "c", "{\n  // nothing yet\n}\n"},
	{"block comment in empty", "c", "{ /* nothing */ }"},
	{"url in string", "c", "{\n  \"url\": \"https://example.com/a//b\", // a URL\n  \"s\": \"/* not a comment */\"\n}\n"},
	{"json5", "5", "// openclaw\n{\n  gateway: {port: 0x4945, host: 'lo\\'cal'},\n  plugins: {\n    load: {paths: ['/opt/x',],},\n  },\n}\n"},
	{"json5 numbers", "5", "{\n  a: +1, b: .5, c: 5., d: -Infinity, e: 0xFF,\n  'k': \"v\",\n}\n"},
}

func dialectOf(s string) Dialect {
	if s == "5" {
		return JSON5
	}
	return JSONC
}

func mustBytes(t *testing.T, e *Editor) string {
	t.Helper()
	b, err := e.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestRoundTrip adds a member holding a nested array and an element to an
// existing array, checks the text decodes to what was meant (Bytes does),
// then removes both and wants the original bytes.
func TestRoundTrip(t *testing.T) {
	for _, tc := range roundTrips {
		t.Run(tc.name, func(t *testing.T) {
			e, err := New([]byte(tc.src), dialectOf(tc.dialect))
			if err != nil {
				t.Fatal(err)
			}
			if err := e.Set(nil, "hooks", Obj{{"Stop", []any{group}}}); err != nil {
				t.Fatal(err)
			}
			if err := e.Append([]any{"hooks", "Stop"}, group); err != nil {
				t.Fatal(err)
			}
			if err := e.Set([]any{"hooks"}, "Start", []any{group}); err != nil {
				t.Fatal(err)
			}
			mid := mustBytes(t, e)
			if strings.Contains(mid, `\u003c`) {
				t.Errorf("HTML-escaped strings:\n%s", mid)
			}
			if err := e.Delete([]any{"hooks", "Stop"}, 1); err != nil {
				t.Fatal(err)
			}
			if err := e.Delete([]any{"hooks"}, "Start"); err != nil {
				t.Fatal(err)
			}
			if err := e.Delete([]any{"hooks", "Stop"}, 0); err != nil {
				t.Fatal(err)
			}
			if err := e.Delete([]any{"hooks"}, "Stop"); err != nil {
				t.Fatal(err)
			}
			if err := e.Delete(nil, "hooks"); err != nil {
				t.Fatal(err)
			}
			if got := mustBytes(t, e); got != tc.src {
				t.Errorf("round trip changed the file\nwant %q\ngot  %q\nmid:\n%s", tc.src, got, mid)
			}
		})
	}
}

// TestInsertFollowsLayout checks the inserted text itself: indentation,
// line endings and one-line style copied from the file.
func TestInsertFollowsLayout(t *testing.T) {
	cases := []struct{ src, want string }{
		{"", "{\n  \"k\": [\n    1\n  ]\n}"},
		{"{\n    \"a\": 1\n}\n", "{\n    \"a\": 1,\n    \"k\": [\n        1\n    ]\n}\n"},
		{"{\n\t\"a\": 1\n}", "{\n\t\"a\": 1,\n\t\"k\": [\n\t\t1\n\t]\n}"},
		{"{\r\n  \"a\": 1\r\n}\r\n", "{\r\n  \"a\": 1,\r\n  \"k\": [\r\n    1\r\n  ]\r\n}\r\n"},
		{`{"a":1}`, `{"a":1, "k":[1]}`},
		{`{"a": 1, "b": 2}`, `{"a": 1, "b": 2, "k": [1]}`},
		{"{\n  \"a\": 1, // c\n}", "{\n  \"a\": 1, // c\n  \"k\": [\n    1\n  ],\n}"},
		{"{\n  \"a\": 1 // c\n}", "{\n  \"a\": 1, // c\n  \"k\": [\n    1\n  ]\n}"},
	}
	for _, tc := range cases {
		e, err := New([]byte(tc.src), JSONC)
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Set(nil, "k", []any{1}); err != nil {
			t.Fatal(err)
		}
		if got := mustBytes(t, e); got != tc.want {
			t.Errorf("insert into %q:\nwant %q\ngot  %q", tc.src, tc.want, got)
		}
	}
}

// TestRefusals: files memvault must not edit give an error, never a write.
func TestRefusals(t *testing.T) {
	cases := []struct {
		name, src string
		d         Dialect
		want      string
	}{
		{"not json", "model = opus\n", JSONC, "not JSON"},
		{"yaml", "hooks:\n  - x\n", JSONC, "not JSON"},
		{"array top", "[1, 2]", JSONC, "top level is not an object"},
		{"json5 in jsonc", "{model: 'opus'}", JSONC, "not JSON"},
		{"unterminated", "{\"a\": 1", JSONC, "not JSON"},
		{"unterminated comment", "{\"a\": 1} /*", JSONC, "not JSON"},
		{"two values", "{} {}", JSONC, "not JSON"},
		{"json5 garbage", "{a: }", JSON5, "not JSON5"},
	}
	for _, tc := range cases {
		_, err := New([]byte(tc.src), tc.d)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: want an error with %q, got %v", tc.name, tc.want, err)
		}
		if err != nil && strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error is not one line: %q", tc.name, err)
		}
	}
}

// TestDuplicateKeys: a repeated key on the way to an edit is refused (the
// decoders read the last one; which one the person meant is a guess).
func TestDuplicateKeys(t *testing.T) {
	e, err := New([]byte(`{"hooks": {}, "x": 1, "hooks": {"Stop": []}}`), JSONC)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Find("hooks", "Stop"); err == nil || !strings.Contains(err.Error(), `"hooks" repeats`) {
		t.Errorf("Find through a repeated key: %v", err)
	}
	if err := e.Set(nil, "hooks", Obj{}); err == nil {
		t.Errorf("Set of a repeated key: no error")
	}
	// elsewhere, a repeated key is the user's business and is kept
	e, err = New([]byte(`{"a": 1, "a": 2}`), JSONC)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Set(nil, "k", 1); err != nil {
		t.Fatal(err)
	}
	if got := mustBytes(t, e); got != `{"a": 1, "a": 2, "k": 1}` {
		t.Errorf("got %q", got)
	}
}

// TestStringsAreNotSyntax: comment markers, quotes, braces and escapes
// inside strings are text, and keys are compared decoded.
func TestStringsAreNotSyntax(t *testing.T) {
	src := "{\n  \"a//b\": \"x /* y */ z\", \"h\\u006fok\\\"s\": \"{[\\\"]}\",\n  \"url\": \"http://x\" // real\n}\n"
	e, err := New([]byte(src), JSONC)
	if err != nil {
		t.Fatal(err)
	}
	n, err := e.Find("hook\"s")
	if err != nil || n == nil || n.Str != "{[\"]}" {
		t.Fatalf("escaped key not found: %v %+v", err, n)
	}
	if err := e.Replace([]any{"url"}, "https://y//z"); err != nil {
		t.Fatal(err)
	}
	want := strings.Replace(src, `"http://x"`, `"https://y//z"`, 1)
	if got := mustBytes(t, e); got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
}

// TestNestedHooksKeys: a "hooks" key deeper down is not the top-level one.
func TestNestedHooksKeys(t *testing.T) {
	e, err := New([]byte(`{"x": {"hooks": {"Stop": [1]}}, "hooks": {"Stop": [2]}}`), JSONC)
	if err != nil {
		t.Fatal(err)
	}
	n, _ := e.Find("hooks", "Stop", 0)
	if n == nil || n.Str != "2" {
		t.Fatalf("found %+v", n)
	}
	if err := e.Delete([]any{"hooks", "Stop"}, 0); err != nil {
		t.Fatal(err)
	}
	if got := mustBytes(t, e); got != `{"x": {"hooks": {"Stop": [1]}}, "hooks": {"Stop": []}}` {
		t.Errorf("got %q", got)
	}
}

// TestBlank: a missing or blank file is an empty object; Empty tells a
// file reduced to exactly "{}".
func TestBlank(t *testing.T) {
	for _, src := range []string{"", "  \n"} {
		e, err := New([]byte(src), JSONC)
		if err != nil || !e.Blank() || !e.Empty() {
			t.Fatalf("%q: blank=%v empty=%v err=%v", src, e != nil && e.Blank(), e != nil && e.Empty(), err)
		}
	}
	e, _ := New([]byte("{}\n"), JSONC)
	if e.Empty() {
		t.Errorf(`"{}\n" counted as empty: uninstall would remove a file the user wrote`)
	}
}

// TestJSON5KeysFollowTheFile: in a JSON5 file written with bare keys, new
// keys are bare too (and still quoted when they are not identifiers).
func TestJSON5KeysFollowTheFile(t *testing.T) {
	e, err := New([]byte("{\n  gateway: {port: 1},\n}\n"), JSON5)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Set(nil, "plugins", Obj{{"allow", []any{"memvault"}}, {"a-b", 1}}); err != nil {
		t.Fatal(err)
	}
	want := "{\n  gateway: {port: 1},\n  plugins: {\n    allow: [\n      \"memvault\"\n    ],\n    \"a-b\": 1\n  },\n}\n"
	if got := mustBytes(t, e); got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
}

func TestIsBareKey(t *testing.T) {
	for k, want := range map[string]bool{"hooks": true, "_a1": true, "$x": true, "A_b$9": true,
		"": false, "1a": false, "a-b": false, "a b": false, "é": false, "a.b": false} {
		if got := isBareKey(k); got != want {
			t.Errorf("isBareKey(%q) = %v, want %v", k, got, want)
		}
	}
}
