package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/testvault"
	"github.com/memvault/memvault/vault/vaulttest"
)

// TestInvalidUTF8IsRefusedAsTheCommandLineRefusesIt sends, as raw bytes on
// the wire, arguments that hold text that is not UTF-8 (a bare byte, a
// truncated sequence, an escaped lone surrogate) to every tool that writes
// and to recall: each call is refused with the command line's error for
// the same text (vault.CheckText), class invalid, code 2, naming the
// argument, and the vault is unchanged; U+FFFD sent as such is stored
// (issue 33).
func TestInvalidUTF8IsRefusedAsTheCommandLineRefusesIt(t *testing.T) {
	t.Parallel()
	v := testvault.New(t)
	cli := vault.CheckText("text", "bad \xff", false).Error() // the command line's refusal
	if cli != "text: not valid utf-8" {
		t.Fatalf("the command line's error changed: %q; keep MCP's in step", cli)
	}
	bad := []string{"bad \xff", "cut \xe2\x82", `lone \ud800 surrogate`, `low \udc00 alone`, `pair \ud83d\u0041`}
	calls := []struct{ tool, arg, args string }{
		{"remember", "text", `{"text":%q}`},
		{"remember", "data", `{"text":"fine","data":{"k":%q}}`},
		{"commitment_open", "text", `{"text":%q}`},
		{"decide", "rationale", `{"decision":"fine","rationale":%q}`},
		{"learn", "prevention", `{"error":"fine","prevention":%q}`},
		{"next", "text", `{"text":%q}`},
		{"done", "text", `{"text":%q}`},
		{"recall", "query", `{"query":%q}`},
	}
	var in bytes.Buffer
	in.WriteString(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18",` +
		`"capabilities":{},"clientInfo":{"name":"bytes","version":"1"}}}` + "\n")
	in.WriteString(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n")
	want := map[int]string{}
	id := 1
	for _, c := range calls {
		for _, b := range bad {
			// %q escapes what is not UTF-8; put the raw bytes back.
			text := strings.NewReplacer(`\xff`, "\xff", `\xe2\x82`, "\xe2\x82", `\\u`, `\u`).Replace(fmt.Sprintf("%q", b))
			args := strings.Replace(c.args, "%q", text, 1)
			fmt.Fprintf(&in, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s}}`+"\n", id, c.tool, args)
			want[id] = c.tool + " " + c.arg
			id++
		}
	}
	before := vaulttest.Files(t, v.Root)
	var out bytes.Buffer
	if err := New(Options{Vault: v.Root, Dir: t.TempDir()}).Serve(context.Background(), &in, &out); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(&out)
	sc.Buffer(nil, 1<<20)
	answered := 0
	for sc.Scan() {
		var m struct {
			ID     int `json:"id"`
			Result struct {
				IsError bool `json:"isError"`
				Content []struct {
					Text string `json:"text"`
				} `json:"content"`
				Meta map[string]ToolError `json:"_meta"`
			} `json:"result"`
		}
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("%v: %s", err, sc.Text())
		}
		w, ok := want[m.ID]
		if !ok {
			continue
		}
		answered++
		tool, arg, _ := strings.Cut(w, " ")
		te := m.Result.Meta[ErrorMetaKey]
		msg := ""
		if len(m.Result.Content) > 0 {
			msg = m.Result.Content[0].Text
		}
		wantMsg := "memvault: " + strings.Replace(cli, "text", arg, 1)
		if !m.Result.IsError || te.Class != "invalid" || te.Code != 2 || !strings.HasPrefix(msg, wantMsg+"\n") {
			t.Errorf("%s %s (id %d): %+v %q, want %q", tool, arg, m.ID, te, msg, wantMsg)
		}
	}
	if answered != len(want) {
		t.Errorf("%d answers, want %d", answered, len(want))
	}
	(&fixture{t: t, v: v}).unchanged(before)

	// U+FFFD itself, sent as UTF-8 or escaped, is text like any other.
	f := setup(t, Options{}, "")
	var w writeOut
	f.ok("remember", map[string]any{"text": "a replacement \ufffd character \\ud800 as text"}, &w)
	if w.Event.Text != "a replacement \ufffd character \\ud800 as text" {
		t.Errorf("stored %q", w.Event.Text)
	}
}

func TestValidText(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]bool{
		`"plain"`: true, `"é \u00e9 \ud83d\ude00"`: true, `"\\ud800"`: true, `"\\\ud800"`: false,
		`"\ud800"`: false, `"\udc00"`: false, `"\ud800\u0041"`: false, `"\ud800"  `: false, "\"\xff\"": false,
		`"\u12"`: true, `"end \`: true, `"\ud83d\ude00\ud800"`: false,
	} {
		if got := validText([]byte(in)); got != want {
			t.Errorf("validText(%s) = %v, want %v", in, got, want)
		}
	}
}
