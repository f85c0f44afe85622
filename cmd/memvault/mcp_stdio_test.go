package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestMCPSurvivesHostileInput drives the real `memvault mcp` over its
// stdin and stdout as a broken or hostile client would: a line that is not
// JSON, a batch, a 50 MB line, a line torn mid-write with a request glued
// after it. Each gets a JSON-RPC error answer, every request after it is
// answered, the process ends with exit 0 when stdin closes, the write
// made after all of it is in the vault, and the 50 MB line is never held
// in memory (issue 33).
func TestMCPSurvivesHostileInput(t *testing.T) {
	t.Parallel()
	r := newRig(t, plainMemvault(t))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := r.cmd(ctx, "mcp")
	rssOut := filepath.Join(t.TempDir(), "rss")
	cmd.Args = append([]string{"rsswrap", cmd.Path}, cmd.Args[1:]...)
	p, err := exec.LookPath("rsswrap")
	if err != nil {
		t.Fatal(err)
	}
	cmd.Path = p
	cmd.Env = append(cmd.Env, "MEMVAULT_RSS_OUT="+rssOut)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	answers := make(chan map[string]any, 64)
	go func() {
		defer close(answers)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var m map[string]any
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				m = map[string]any{"not json": sc.Text()}
			}
			answers <- m
		}
	}()
	// next waits for the answer to request id ("" for an answer with a null
	// id) and returns its error code, 0 for a result.
	next := func(what, id string) int {
		t.Helper()
		select {
		case m, ok := <-answers:
			if !ok {
				t.Fatalf("%s: the server ended (stdout closed); stderr: %s", what, stderr.String())
			}
			got, _ := json.Marshal(m["id"])
			if want := id; (want == "" && string(got) != "null") || (want != "" && string(got) != want) {
				t.Fatalf("%s: answer %v, want the answer to id %s", what, m, id)
			}
			if e, ok := m["error"].(map[string]any); ok {
				code, _ := e["code"].(float64)
				return int(code)
			}
			return 0
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: no answer; stderr: %s", what, stderr.String())
		}
		return 0
	}
	send := func(s string) {
		t.Helper()
		if _, err := io.WriteString(stdin, s); err != nil {
			t.Fatalf("write %.40q: %v; stderr: %s", s, err, stderr.String())
		}
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",` +
		`"capabilities":{},"clientInfo":{"name":"hostile","version":"1"}}}` + "\n" +
		`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n")
	if code := next("initialize", "1"); code != 0 {
		t.Fatalf("initialize: error %d", code)
	}
	ping := func(id int) {
		t.Helper()
		send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping"}`+"\n", id))
		if code := next(fmt.Sprintf("ping %d", id), fmt.Sprint(id)); code != 0 {
			t.Fatalf("ping %d: error %d", id, code)
		}
	}
	send("this is not json\n")
	if code := next("a line that is not JSON", ""); code != -32700 {
		t.Errorf("a line that is not JSON: code %d, want -32700", code)
	}
	ping(2)
	send(`[{"jsonrpc":"2.0","id":3,"method":"ping"},{"jsonrpc":"2.0","id":4,"method":"ping"}]` + "\n")
	if code := next("a batch", ""); code != -32600 {
		t.Errorf("a batch: code %d, want -32600", code)
	}
	ping(5)
	// 50 MB in one line, written in pieces as a client streams it.
	send(`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"remember","arguments":{"text":"`)
	chunk := strings.Repeat("y", 1<<20)
	for range 50 {
		send(chunk)
	}
	send(`"}}}` + "\n")
	if code := next("a 50 MB line", "6"); code != -32600 {
		t.Errorf("a 50 MB line: code %d, want -32600", code)
	}
	ping(7)
	// A client dies mid-line; its successor writes a whole request.
	send(`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"remem`)
	time.Sleep(100 * time.Millisecond)
	send(`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"remember","arguments":{"text":"after the torn line"}}}` + "\n")
	if code := next("the torn line", ""); code != -32700 {
		t.Errorf("the torn line: code %d, want -32700", code)
	}
	if code := next("the request glued to the torn line", "9"); code != 0 {
		t.Errorf("the request glued to the torn line: code %d", code)
	}
	ping(10)
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("memvault mcp: %v (want exit 0 once stdin closed); stderr: %s", err, stderr.String())
	}
	if m, ok := <-answers; ok {
		t.Errorf("an answer nobody asked for: %v", m)
	}
	if texts := r.ledgerTexts(); !texts["after the torn line"] {
		t.Errorf("the write after the hostile lines is not in the ledger: %v", texts)
	}
	r.checkRepo()
	data, err := os.ReadFile(rssOut)
	if err != nil {
		t.Skip("no rusage here")
	}
	var kib int64
	fmt.Sscan(string(data), &kib)
	t.Logf("peak RSS of memvault mcp through a 50 MB line: %d MiB", kib/1024)
	// The line is read in 64 KiB pieces and dropped past 8 MiB: about 27
	// MiB for the process and 18 for the 8 MiB it reads before it knows
	// the line is too long. Holding the line would be over 77.
	if kib/1024 > 56 && !childIsRaceBuilt(r.bin) {
		t.Errorf("peak RSS %d MiB: the 50 MB line was held in memory", kib/1024)
	}
}
