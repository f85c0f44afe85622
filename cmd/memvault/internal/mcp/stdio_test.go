package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/testvault"
)

// TestServeAnswersWhatItRead: a client that writes its requests and closes
// stdin at once (a batch on a pipe) gets every answer, and its writes are
// made, before Serve returns: the end of the input waits for them.
func TestServeAnswersWhatItRead(t *testing.T) {
	t.Parallel()
	v := testvault.New(t)
	var in bytes.Buffer
	in.WriteString(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",` +
		`"capabilities":{},"clientInfo":{"name":"pipe","version":"1"}}}` + "\n")
	in.WriteString(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n")
	const writes = 8
	for i := range writes {
		fmt.Fprintf(&in, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"remember","arguments":{"text":"row %d"}}}`+"\n", 10+i, i)
	}
	// The last line without its newline, as a client may end.
	in.WriteString(`{"jsonrpc":"2.0","id":99,"method":"tools/call","params":{"name":"status"}}`)
	var out bytes.Buffer
	// The writes run at once and queue for the vault lock; on a loaded
	// machine under -race the last of eight waits longer than the default
	// second. This test is about the end of input, not a busy vault
	// (TestBusyVault is): they wait as long as it takes.
	s := New(Options{Vault: v.Root, Dir: t.TempDir(), LockWait: 2 * time.Minute})
	if err := s.Serve(context.Background(), &in, &out); err != nil {
		t.Fatal(err)
	}
	answered := map[int]bool{}
	sc := bufio.NewScanner(&out)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m struct {
			ID     *int            `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("not JSON-RPC: %q", sc.Text())
		}
		if m.ID == nil || m.Result == nil || strings.Contains(string(m.Result), `"isError":true`) {
			t.Errorf("unexpected message %s", sc.Text())
			continue
		}
		answered[*m.ID] = true
	}
	if len(answered) != writes+2 || !answered[1] || !answered[99] {
		t.Errorf("answered %v, want 1, 10-%d and 99", answered, 10+writes-1)
	}
	w, err := vault.Open(v.Root)
	if err != nil {
		t.Fatal(err)
	}
	st, err := w.LoadState()
	if err != nil || len(st.Rows) != writes {
		t.Fatalf("rows %d, err %v: want %d", len(st.Rows), err, writes)
	}
	testvault.MustVerify(t, w)
}

func TestPendingWaitsForTheAnswers(t *testing.T) {
	t.Parallel()
	p := newPending()
	one, _ := jsonrpc.MakeID(float64(1))
	two, _ := jsonrpc.MakeID("2")
	if !p.start(one, true) || !p.start(two, true) || p.start(one, true) || p.start(one, false) {
		t.Fatal("start: a new id is taken, an id waiting for its answer is not")
	}
	done := make(chan struct{})
	go func() { p.wait(time.Minute); close(done) }()
	p.done(one)
	select {
	case <-done:
		t.Fatal("wait returned with a request unanswered")
	case <-time.After(50 * time.Millisecond):
	}
	p.done(two)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("wait did not return once every request was answered")
	}
	p.done(one) // an answer to nothing waiting changes nothing
	p.wait(0)   // returns at once with nothing pending
}

// hostileLines are lines a client may send that are not one message the
// SDK can take, each with the error answer it must get: its code and the
// id it is answered with ("null" when it has none to give).
var hostileLines = []struct {
	name, line string
	code       int
	id         string
}{
	{"not JSON", `not json`, -32700, "null"},
	{"torn line", `{"jsonrpc":"2.0","id":3,"method":"tools/li`, -32700, "null"},
	{"NUL in a string", "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"ping\",\"params\":{\"x\":\"\x00\"}}", -32700, "null"},
	{"batch", `[{"jsonrpc":"2.0","id":5,"method":"ping"},{"jsonrpc":"2.0","id":6,"method":"ping"}]`, -32600, "null"},
	{"empty batch", `[]`, -32600, "null"},
	{"wrong version", `{"jsonrpc":"1.0","id":7,"method":"ping"}`, -32600, "7"},
	{"no version", `{"id":"eight","method":"ping"}`, -32600, `"eight"`},
	{"a number", `42`, -32600, "null"},
	{"null", `null`, -32600, "null"},
	{"an object id", `{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, -32600, "null"},
	{"too deep", `{"jsonrpc":"2.0","id":9,"method":"ping","params":` + strings.Repeat("[", 1500) + strings.Repeat("]", 1500) + `}`, -32600, "9"},
	{"too long", `{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"remember","arguments":{"text":"` +
		strings.Repeat("x", MaxMessageBytes) + `"}}}`, -32600, "10"},
}

// TestHostileLinesAreAnsweredAndTheServerGoesOn: each hostile line gets
// its JSON-RPC error answer, the ping after it is answered, and the server
// ends cleanly when the input does (issue 33).
func TestHostileLinesAreAnsweredAndTheServerGoesOn(t *testing.T) {
	t.Parallel()
	v := testvault.New(t)
	var in bytes.Buffer
	in.WriteString(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18",` +
		`"capabilities":{},"clientInfo":{"name":"pipe","version":"1"}}}` + "\n")
	in.WriteString(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n")
	for i, h := range hostileLines {
		in.WriteString(h.line + "\n")
		fmt.Fprintf(&in, `{"jsonrpc":"2.0","id":"ping-%d","method":"ping"}`+"\n", i)
	}
	// A torn line with a whole request glued to it: the fragment is a
	// parse error, the request is served.
	in.WriteString(`{"jsonrpc":"2.0","id":90,"method":"tools/call","params":{"name":"rec` +
		`{"jsonrpc":"2.0","id":91,"method":"tools/call","params":{"name":"status","arguments":{}}}` + "\n")
	// Blank lines and a CRLF line end are no problem.
	in.WriteString("\n  \n" + `{"jsonrpc":"2.0","id":92,"method":"ping"}` + "\r\n")
	var out bytes.Buffer
	s := New(Options{Vault: v.Root, Dir: t.TempDir()})
	done := make(chan error, 1)
	go func() { done <- s.Serve(context.Background(), &in, &out) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Serve did not end with its input: an answer is missing")
	}
	var got []string // "id code" of each answer
	sc := bufio.NewScanner(&out)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("not JSON-RPC: %q", sc.Text())
		}
		code := 0
		if m.Error != nil {
			code = m.Error.Code
			if m.Error.Message == "" || strings.Contains(m.Error.Message, "\n") {
				t.Errorf("error message %q is not one line", m.Error.Message)
			}
		}
		got = append(got, fmt.Sprintf("%s %d", m.ID, code))
	}
	want := []string{"0 0"}
	for i, h := range hostileLines {
		want = append(want, fmt.Sprintf("%s %d", h.id, h.code), fmt.Sprintf(`"ping-%d" 0`, i))
	}
	want = append(want, "null -32700", "91 0", "92 0")
	// The SDK answers requests as they finish, not in order.
	slices.Sort(got)
	slices.Sort(want)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("answers:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestGluedMessage: the message glued to the end of a torn line is found
// whatever its nesting, and nothing is found in a line that holds none.
func TestGluedMessage(t *testing.T) {
	t.Parallel()
	whole := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"remember","arguments":{"text":"a {\"b\": 1}","data":{"x":{"y":{}}}}}}`
	for _, torn := range []string{`{"jsonrpc":"2.0","id":1,"method":"tools/li`, `{"jsonrpc":"2.0","id":1,"params":{"a":`, `{`, `x`, `{"text":"{\"jsonrpc\":`} {
		m := gluedMessage([]byte(torn + whole))
		req, ok := m.(*jsonrpc.Request)
		if !ok || req.ID.Raw() != int64(2) {
			t.Errorf("%s + the request: found %#v", torn, m)
		}
	}
	for _, line := range []string{`{"jsonrpc":"2.0","id":1,"method":"tools/li`, `{"a":{"b":{}}} x`, strings.Repeat(`{"a":`, 10000)} {
		if m := gluedMessage([]byte(line)); m != nil {
			t.Errorf("%.40s: found %#v", line, m)
		}
	}
}

// claudeCodeOpening is how Claude Code 2.1.328 opens a session on the
// 2026-07-28 protocol (traced by TestE2EMCPOverhead): a discovery, a
// subscriptions/listen stream it keeps open for the whole session, and the
// lists.
var claudeCodeOpening = func() string {
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
		`"io.modelcontextprotocol/clientInfo":{"name":"claude-code","title":"Claude Code","version":"2.1.328"},` +
		`"io.modelcontextprotocol/clientCapabilities":{}}`
	return `{"jsonrpc":"2.0","id":"server-discover-probe-1","method":"server/discover","params":{` + meta + `}}` + "\n" +
		`{"jsonrpc":"2.0","id":"listen:0","method":"subscriptions/listen","params":{` + meta +
		`,"notifications":{"toolsListChanged":true,"promptsListChanged":true,"resourcesListChanged":true}}}` + "\n" +
		`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + meta + `}}` + "\n" +
		`{"jsonrpc":"2.0","id":2,"method":"resources/list","params":{` + meta + `}}` + "\n"
}()

// TestEndOfInputDoesNotWaitForAListen: a client on the 2026-07-28 protocol
// keeps a subscriptions/listen request open for its whole session, and
// ends the session by closing stdin. The server ends at once: a listen is
// answered only when it ends, so the end of the input must not wait for
// its answer as it waits for a tool's (drainWait). It did, and every
// Claude Code call waited about four seconds at its exit for a server
// that would not go, until the harness stopped it (issue 35).
func TestEndOfInputDoesNotWaitForAListen(t *testing.T) {
	t.Parallel()
	v := testvault.New(t)
	in, out := strings.NewReader(claudeCodeOpening), &syncBuffer{}
	s := New(Options{Vault: v.Root, Dir: t.TempDir()})
	done := make(chan error, 1)
	go func() { done <- s.Serve(context.Background(), in, out) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(drainWait / 2):
		t.Fatalf("Serve has not returned %s after the end of its input: it waits for the listen's answer (drainWait %s)", drainWait/2, drainWait)
	}
	got := out.String()
	for _, want := range []string{`"id":"server-discover-probe-1","result"`, `"method":"notifications/subscriptions/acknowledged"`,
		`"id":1,"result"`, `"id":2,"result"`} {
		if !strings.Contains(got, want) {
			t.Errorf("the server did not answer %s before it ended:\n%s", want, got)
		}
	}
}

// syncBuffer is a bytes.Buffer safe for the server's writer and the
// test's reader at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// TestTraceShowsEveryMessage: with Options.Trace (MEMVAULT_MCP_TRACE) the
// server writes a timed line for each message in and out, the end of the
// input and of the session, and nothing to the protocol's stream.
func TestTraceShowsEveryMessage(t *testing.T) {
	t.Parallel()
	v := testvault.New(t)
	var out, trace bytes.Buffer
	s := New(Options{Vault: v.Root, Dir: t.TempDir(), Trace: &trace})
	if err := s.Serve(context.Background(), strings.NewReader(claudeCodeOpening), &out); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(trace.String()), "\n")
	var in, sent int
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) < 3 || !strings.HasSuffix(f[1], "ms") {
			t.Fatalf("trace line without its times: %q", l)
		}
		switch f[2] {
		case "<":
			in++
		case ">":
			sent++
		}
	}
	if in != 4 || sent != strings.Count(out.String(), "\n") || !strings.Contains(trace.String(), "- end of input") ||
		!strings.HasSuffix(lines[len(lines)-1], "- session ended") {
		t.Errorf("trace: %d in (want 4), %d out (want %d), or no end:\n%s", in, sent, strings.Count(out.String(), "\n"), trace.String())
	}
	if strings.Contains(out.String(), "ms <") {
		t.Errorf("the trace reached the protocol's stream:\n%s", out.String())
	}
}
