package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

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

func TestPendingCountsRequestsAndAnswers(t *testing.T) {
	t.Parallel()
	p := newPending()
	for _, line := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call"}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`, // a notification: no answer due
		`[{"jsonrpc":"2.0","id":"a","method":"ping"},{"jsonrpc":"2.0","id":2,"method":"tools/list"}]`,
		`{"jsonrpc":"2.0","id":5,"result":{"roots":[]}}`, // the client's answer to the server's request
		`not json`,
		`{"jsonrpc":"2.0","id":null,"method":"x"}`,
	} {
		p.count([]byte(line), true)
	}
	if p.n != 3 {
		t.Fatalf("pending %d after the requests, want 3", p.n)
	}
	for _, line := range []string{
		`{"jsonrpc":"2.0","id":7,"method":"roots/list"}`, // the server's own request: no answer
		`{"jsonrpc":"2.0","id":1,"result":{}}`,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32700}}`,
		`[{"jsonrpc":"2.0","id":"a","result":{}},{"jsonrpc":"2.0","id":2,"error":{"code":1}}]`,
	} {
		p.count([]byte(line), false)
	}
	if p.n != 0 {
		t.Errorf("pending %d after the answers, want 0", p.n)
	}
	p.wait(0) // returns at once with nothing pending
}
