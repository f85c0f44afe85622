package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memvault/memvault/vault/embed/embedtest"
)

// Semantic search through the real binary (issue 36), against the fake
// embeddings endpoint on 127.0.0.1: without [embed] nothing is sent;
// with it, a paraphrase with no shared word is found and --explain names
// its ranking; an endpoint that fails leaves stdout byte-identical to the
// lexical path's; a hook returns at once while the endpoint hangs; an
// api_key in the file is a clear error; doctor and reindex report the
// endpoint and the vectors.
func TestSemanticRecallBinary(t *testing.T) {
	srv := embedtest.New(64)
	defer srv.Close()
	r := newRig(t, plainMemvault(t))
	for _, m := range []struct{ session, speaker, text string }{
		{"s1", "caroline", "we finally acquired a sedan last weekend"},
		{"s2", "mel", "when is the garden party"},
		{"s3", "dana", "the car park near the office is full again"},
	} {
		r.run("transcript", "append", "--session", m.session, "--role", "user", "--speaker", m.speaker, m.text)
	}
	q := []string{"recall", "--json", "--all-threads", "--tier", "transcripts", "when did Caroline purchase the car"}
	lexical := r.run(q...)
	if srv.Requests.Load() != 0 || strings.Contains(lexical, "sedan") {
		t.Fatalf("without [embed]: %d requests, output %s", srv.Requests.Load(), lexical)
	}
	cfgPath := filepath.Join(r.vault, "memvault.toml")
	base, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	table := "\n[embed]\nurl = \"" + srv.URL() + "\"\nmodel = \"fake\"\ntimeout = \"2s\"\n"
	writeConfig := func(extra string) {
		t.Helper()
		if err := os.WriteFile(cfgPath, append(append([]byte{}, base...), table+extra...), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writeConfig("")
	for _, mode := range []string{embedtest.Fail, embedtest.Garbage, embedtest.Redirect, embedtest.Hang} {
		srv.SetMode(mode)
		if got := r.run(q...); got != lexical {
			t.Errorf("endpoint %s: stdout differs from the lexical path's:\n%s\n%s", mode, got, lexical)
		}
	}
	srv.SetMode(embedtest.OK)
	if got := r.run(q...); !strings.Contains(got, "sedan") {
		t.Fatalf("with [embed]: the paraphrase is not found: %s", got)
	}
	explain := r.run("recall", "--explain", "--all-threads", "--tier", "transcripts", "when did Caroline purchase the car")
	if !strings.Contains(explain, "fused from vector, vector rank 1") {
		t.Fatalf("--explain does not name the vector ranking:\n%s", explain)
	}
	if out := r.run("doctor"); !strings.Contains(out, "answers fake with 64 dimensions") {
		t.Errorf("doctor does not report the endpoint:\n%s", out)
	}
	if out := r.run("reindex"); !strings.Contains(out, "embedded 0 documents (") || !strings.Contains(out, " reused, 0 requests)") {
		t.Errorf("reindex does not report the vectors:\n%s", out)
	}

	// A hook never waits on the endpoint, even one that hangs.
	srv.SetMode(embedtest.Hang)
	cmd := r.cmd(context.Background(), "hook", "claude-code", "UserPromptSubmit")
	cmd.Stdin = bytes.NewReader(r.payload("UserPromptSubmit", "s9", map[string]any{"prompt": "did caroline buy a vehicle"}))
	// Counted, not timed: a hook that asked would wait on the hang.
	asked := srv.Requests.Load()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("hook: %v\n%s", err, out)
	}
	if n := srv.Requests.Load() - asked; n != 0 {
		t.Errorf("the prompt hook sent %d requests to the endpoint", n)
	}
	srv.SetMode(embedtest.OK)

	// A key written in the file is refused, and nothing is sent.
	writeConfig("api_key = \"sk-live-abcdef123456\"\n")
	before := srv.Requests.Load()
	cmd = r.cmd(context.Background(), q...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err == nil || !strings.Contains(stderr.String(), "api_key: a key is never written in the file") {
		t.Fatalf("an api_key in the file: %v %s", err, stderr.String())
	}
	if strings.Contains(stderr.String(), "abcdef123456") || srv.Requests.Load() != before {
		t.Fatalf("the key was repeated or a request sent: %s", stderr.String())
	}
}
