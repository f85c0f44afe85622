package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestOutsideNamesCannotEscape feeds every name that comes from outside
// (thread, session, agent, head, scope path, node and event ids) a path
// escape: a relative climb, an absolute path, a NUL byte (through a hook
// payload, the only way a NUL reaches memvault) and a very long name. Each is
// refused, or encoded into a single file name inside the vault; nothing is
// ever written outside it.
func TestOutsideNamesCannotEscape(t *testing.T) {
	t.Parallel()
	r := newRig(t, plainMemvault(t))
	r.run("remember", "a fact to point at")
	long := strings.Repeat("a", 5000)
	escapes := []string{"../escaped", "/tmp/escaped", long}
	if !testing.Short() && os.Getenv("MEMVAULT_TORTURE_ROUNDS") != "" {
		escapes = append(escapes, "../../escaped", "a/../../escaped")
	}
	var runs [][]string
	for _, e := range escapes {
		runs = append(runs,
			[]string{"remember", "--thread", e, "x"},
			[]string{"remember", "--thread", "project:" + e, "x"},
			[]string{"--agent", e, "remember", "x"},
			[]string{"transcript", "append", "--session", e, "--role", "user", "x"},
			[]string{"transcript", "import", "--format", "generic", "--session", e, fixturePath(t, "transcripts", "generic", "session.jsonl")},
			[]string{"learn", "--error", "e", "--prevention", "p", "--scope", "file:" + e},
			[]string{"expand", e},
			[]string{"retract", e, "--why", "w"},
			[]string{"supersede", e, "new text"},
			[]string{"commitment", "close", e},
			[]string{"render", "--thread", e},
			[]string{"edit", e},
			[]string{"summarize", "--session", e},
		)
	}
	for _, args := range runs {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		cmd := r.cmd(ctx, args...)
		cmd.Env = append(cmd.Env, "EDITOR=true", "VISUAL=true")
		cmd.Run()
		cancel()
	}
	// Hook payloads carry session ids and working folders with NUL bytes,
	// climbs and absolute paths.
	for _, s := range []string{"a\x00b", "../escaped", "/tmp/escaped", long, "..", "."} {
		for _, ev := range []string{"SessionStart", "UserPromptSubmit", "Stop", "SessionEnd"} {
			payload, _ := json.Marshal(map[string]any{"session_id": s, "cwd": r.proj, "hook_event_name": ev,
				"prompt": "x", "last_assistant_message": "x", "transcript_path": "/etc/passwd"})
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			cmd := r.cmd(ctx, "hook", "claude-code", ev)
			cmd.Stdin = bytes.NewReader(payload)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("hook %s with session %.20q: %v (a hook always exits 0)\n%s", ev, s, err, out)
			}
			cancel()
		}
	}
	// Nothing appeared beside the vault, and nothing inside it is named
	// after the escape.
	entries, _ := os.ReadDir(r.dir)
	for _, e := range entries {
		switch e.Name() {
		case "vault", "home", "proj":
		default:
			t.Errorf("%s was written outside the vault", filepath.Join(r.dir, e.Name()))
		}
	}
	for _, p := range []string{"/tmp/escaped", "/tmp/escaped.jsonl", "/tmp/escaped.md"} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s was written", p)
		}
	}
	filepath.WalkDir(r.vault, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if strings.Contains(d.Name(), "escaped") && !strings.Contains(d.Name(), "%2F") && !strings.Contains(d.Name(), "%2E") {
			t.Errorf("%s: an outside name became a path unencoded", p)
		}
		if len(d.Name()) > 255 {
			t.Errorf("%s: name longer than file systems allow", p)
		}
		return nil
	})
	r.checkRepo()
}

// The secrets tried: shapes the redaction rules of vault/redact
// know. Each needle is a part of the secret that must never be stored.
var secrets = []struct{ text, needle string }{
	{"AKIAIOSFODNN7EXAMPLE", "IOSFODNN7EXAMPLE"},
	{"ghp_Zq3xK9mW2pL7vN4rT8yB1cF6hJ0dS5gA2eQw", "Zq3xK9mW2pL7vN4rT8yB1cF6hJ0dS5gA2eQw"},
	{"-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\n-----END RSA PRIVATE KEY-----",
		"MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun"},
	{"cookie: session=eyJhbGciOiJIUzI1NiJ9.eyJ1c2VyIjoiYWxpY2UifQ.c2lnbmF0dXJlLWhlcmU", "c2lnbmF0dXJlLWhlcmU"},
	{"https://deploy:Hunt3rPassw0rd77@db.internal/prod", "Hunt3rPassw0rd77"},
	{"AWS secret key: Zq3vK9mW2pL7vN4rT8yB1cF6hJ0dS5gA2eQwXy7u", "Zq3vK9mW2pL7vN4rT8yB1cF6hJ0dS5gA2eQwXy7u"},
	{"mysql -u root -pS3cretPass77 shop", "S3cretPass77"},
	{"redis://:Rd1sPw0rd42@cache:6379/0", "Rd1sPw0rd42"},
	{"Cookie: theme=dark; sid=9f8e7d6c5b4a39281706", "9f8e7d6c5b4a39281706"},
	{"Authorization: Basic ZGVwbG95Okh1bnQzcg==", "ZGVwbG95Okh1bnQzcg=="},
	{"curl -H 'Authorization: Bearer 0123456789abcdef0123' https://api.internal", "0123456789abcdef0123"},
	{"stripe sk_live_4eC39HqLyjWDarjtT1zdp7dc", "4eC39HqLyjWDarjtT1zdp7dc"},
	{"gitlab glpat-xYz12AbC34dEf56GhI78", "xYz12AbC34dEf56GhI78"},
	{"maps key AIzaSyA1b2C3d4E5f6G7h8I9j0KlMnOpQrStUvW", "SyA1b2C3d4E5f6G7h8I9j0KlMnOpQrStUvW"},
	{"AccountName=shop;AccountKey=Kx7Qm2Lp9Rt4Vw6Yz8Ab1Cd3Ef5Gh7Ij9Kl0Mn2Op4Qr6St8==", "Kx7Qm2Lp9Rt4Vw6Yz8Ab1Cd3Ef5Gh7Ij9Kl0Mn2Op4Qr6St8"},
	{"https://hooks.slack.com/services/T0123ABCD/B0456EFGH/aBcDeFgHiJkLmNoPqRsTuVwX", "aBcDeFgHiJkLmNoPqRsTuVwX"},
	{"-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n-----END OPENSSH PRIVATE KEY-----", "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ"},
}

// TestSecretsNeverStored sends secrets through every way in (remember, a
// typed transcript message, a transcript import, a hook prompt, the
// assistant message and the compaction summary of hook payloads), then
// searches every byte of the vault, every git object decompressed, and the
// search index: no secret is anywhere.
func TestSecretsNeverStored(t *testing.T) {
	t.Parallel()
	r := newRig(t, plainMemvault(t))
	var all []string
	for _, s := range secrets {
		all = append(all, s.text)
	}
	secret := "my keys: " + strings.Join(all, " and ")

	r.run("remember", "--thread", "project:proj", secret)
	r.run("remember", "--kind", "decision", "--data", `{"note":"`+strings.ReplaceAll(all[0]+" "+all[1], `"`, ``)+`"}`, "decision with data")
	r.run("transcript", "append", "--session", "s-typed", "--role", "user", secret)
	r.run("learn", "--error", secret, "--prevention", "never paste "+all[1])
	// A transcript import of each harness format with the secret in it.
	gen := filepath.Join(r.dir, "gen.jsonl")
	line, _ := json.Marshal(map[string]string{"id": "g1", "ts": "2026-11-22T10:00:00Z", "role": "user", "speaker": "alice", "text": secret})
	os.WriteFile(gen, append(line, '\n'), 0o600)
	r.run("transcript", "import", "--format", "generic", "--session", "s-gen", gen)
	for _, f := range []string{"claude-code", "codex", "gemini", "openclaw"} {
		matches, _ := filepath.Glob(fixturePath(t, "transcripts", f, "*.jsonl"))
		for _, m := range matches {
			r.run("transcript", "import", "--format", f, "--session", "s-"+f, m)
		}
	}
	// Hooks: prompt, assistant message, compaction summary, transcript.
	r.addCCPrompt("s-hook", secret, 1)
	for _, ev := range []struct {
		name  string
		extra map[string]any
	}{
		{"SessionStart", map[string]any{"source": "startup"}},
		{"UserPromptSubmit", map[string]any{"prompt": secret, "prompt_id": "p1"}},
		{"Stop", map[string]any{"last_assistant_message": "DECISION: " + secret}},
		{"PostCompact", map[string]any{"trigger": "manual", "compact_summary": "<summary>" + secret + "</summary>"}},
		{"SessionEnd", map[string]any{"reason": "other"}},
	} {
		cmd := r.cmd(context.Background(), "hook", "claude-code", ev.name)
		cmd.Stdin = bytes.NewReader(r.payload(ev.name, "s-hook", ev.extra))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("hook %s: %v\n%s", ev.name, err, out)
		}
	}
	// A prompt-only harness (no transcript file): the prompt is all there is.
	cmd := r.cmd(context.Background(), "hook", "claude-code", "UserPromptSubmit")
	cmd.Stdin = bytes.NewReader([]byte(`{"session_id":"s-bare","cwd":"` + r.proj + `","prompt":` + mustJSON(secret) + `}`))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("hook: %v\n%s", err, out)
	}
	if got := r.transcriptText("s-bare"); !strings.Contains(got, "REDACTED") {
		t.Errorf("the prompt of s-bare was not stored (redacted): %q", got)
	}
	// The other harnesses' hooks, as their installed hooks and plugins send
	// them: prompt, assistant message, compaction summary.
	for _, h := range []string{"codex", "gemini", "opencode", "openclaw"} {
		sid := "s-" + h
		for _, ev := range []struct {
			name  string
			extra map[string]any
		}{
			{"prompt-submit", map[string]any{"prompt": secret}},
			{"stop", map[string]any{"last_assistant_message": "DECISION: " + secret}},
			{"compaction-complete", map[string]any{"compact_summary": secret}},
			{"session-end", nil},
		} {
			p := map[string]any{"session_id": sid, "cwd": r.proj}
			for k, v := range ev.extra {
				p[k] = v
			}
			data, _ := json.Marshal(p)
			cmd := r.cmd(context.Background(), "hook", h, ev.name)
			cmd.Stdin = bytes.NewReader(data)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("hook %s %s: %v\n%s", h, ev.name, err, out)
			}
		}
		if got := r.transcriptText(sid); !strings.Contains(got, "REDACTED") {
			t.Errorf("the prompt of %s was not stored (redacted): %q", sid, got)
		}
	}
	// Identity fields are refused when they hold a credential (the
	// credential named by kind only); a speaker's name is redacted.
	for _, args := range [][]string{
		{"--agent", "ghp_Zq3xK9mW2pL7vN4rT8yB1cF6hJ0dS5gA2eQw", "remember", "x"},
		{"remember", "--session", "AKIAIOSFODNN7EXAMPLE", "x"},
		{"remember", "--harness", "eyJhbGciOiJIUzI1NiJ9.eyJ1c2VyIjoiYWxpY2UifQ.c2lnbmF0dXJlLWhlcmU", "x"},
		{"transcript", "append", "--session", "s-id", "--role", "user", "--harness", "sk_live_4eC39HqLyjWDarjtT1zdp7dc", "x"},
	} {
		out, err := r.cmd(context.Background(), args...).CombinedOutput()
		if err == nil || !strings.Contains(string(out), "holds a credential") {
			t.Errorf("memvault %s: %v, want a refusal\n%s", strings.Join(args, " "), err, out)
		}
		for _, s := range secrets {
			if strings.Contains(string(out), s.needle) {
				t.Errorf("memvault %s printed the credential: %s", strings.Join(args, " "), out)
			}
		}
	}
	r.run("transcript", "append", "--session", "s-speaker", "--role", "user", "--speaker", "deploy password=Hunt3rPassw0rd77", "hi")
	r.run("refresh", "--on", "session-end")
	r.run("reindex")
	if log := r.hookLogTail(0); log != "" {
		t.Errorf("hooks failed open:\n%s", log)
	}

	// Every file on disk, .git, .index, .state and .logs included, and every
	// git object decompressed.
	_, objects := r.everyByte(func(where string, data []byte) {
		for _, s := range secrets {
			if i := bytes.Index(data, []byte(s.needle)); i >= 0 {
				t.Errorf("%s holds the secret %.12s…: %q", where, s.needle, data[max(0, i-200):i])
			}
		}
	})
	if hasGit() && len(objects) < 1000 {
		t.Fatalf("git cat-file gave %d bytes: the vault has no objects?", len(objects))
	}
	// The index: a search for the secret finds nothing.
	for _, s := range secrets {
		out := r.run("recall", "--all-threads", "--json", s.needle)
		if strings.Contains(out, s.needle) {
			t.Errorf("recall of the secret %.12s… finds it", s.needle)
		}
	}
	r.checkRepo()
}

// fixturePath is a file of the repository's fixtures folder, absolute:
// the commands run in the rig's project folder.
func fixturePath(t *testing.T, elems ...string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join(append([]string{"..", "..", "fixtures"}, elems...)...))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func mustJSON(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestHugeHookPayload pipes 100 MB into a hook: the hook reads no more
// than its limit, stays small in memory, exits 0 and logs why it ignored
// the payload.
func TestHugeHookPayload(t *testing.T) {
	t.Parallel()
	r := newRig(t, plainMemvault(t))
	cmd := r.cmd(context.Background(), "hook", "claude-code", "UserPromptSubmit")
	// Measured through a small wrapper process (rsswrap in main_test.go).
	rssOut := filepath.Join(t.TempDir(), "rss")
	cmd.Args = append([]string{"rsswrap", cmd.Path}, cmd.Args[1:]...)
	cmd.Path = filepath.Join(filepath.Dir(cmd.Path), "rsswrap")
	if _, err := os.Stat(cmd.Path); err != nil {
		p, err := exec.LookPath("rsswrap")
		if err != nil {
			t.Fatal(err)
		}
		cmd.Path = p
	}
	cmd.Env = append(cmd.Env, "MEMVAULT_RSS_OUT="+rssOut)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	const total = 100 << 20
	go func() {
		w := bufio.NewWriterSize(stdin, 1<<20)
		w.WriteString(`{"session_id":"s1","prompt":"`)
		chunk := bytes.Repeat([]byte("x"), 1<<20)
		for n := 0; n < total; n += len(chunk) {
			if _, err := w.Write(chunk); err != nil {
				break // the hook stopped reading: expected
			}
		}
		w.WriteString(`"}`)
		w.Flush()
		stdin.Close()
	}()
	err = cmd.Wait()
	if err != nil {
		t.Fatalf("hook with a 100 MB payload: %v (it must fail open)\n%s", err, out.String())
	}
	if out.Len() != 0 {
		t.Errorf("hook printed %q", out.String())
	}
	data, err := os.ReadFile(rssOut)
	if err != nil {
		t.Skip("no rusage here")
	}
	var kib int64
	fmt.Sscan(string(data), &kib)
	rssMiB := kib / 1024 // kilobytes on Linux
	t.Logf("peak RSS of the hook with a 100 MB payload: %d MiB", rssMiB)
	// The limit is 8 MiB of payload; the race detector, when the hook is
	// race-built, costs more than the rest together.
	if rssMiB > 96 && !childIsRaceBuilt(r.bin) {
		t.Errorf("peak RSS %d MiB: the payload was not bounded", rssMiB)
	}
	if log := r.hookLogTail(0); !strings.Contains(log, "payload over") {
		t.Errorf("hooks.log: %q", log)
	}
}

// TestForgedLedger hand-edits a ledger line and forges its hash the way
// a careful forger would (the right hash for the new text): verify names
// the line where the chain breaks, and the vault's pre-commit hook refuses
// a commit of it.
func TestForgedLedger(t *testing.T) {
	t.Parallel()
	r := newRig(t, plainMemvault(t))
	r.run("remember", "the deploy key rotates on Fridays")
	r.run("remember", "a second fact")
	segs, _ := filepath.Glob(filepath.Join(r.vault, "ledger", "*", "*", "*.jsonl"))
	if len(segs) != 1 {
		t.Fatalf("segments: %v", segs)
	}
	data, err := os.ReadFile(segs[0])
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(data), "\n")
	var ev map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &ev); err != nil {
		t.Fatal(err)
	}
	// The canonical form is sorted keys, no whitespace: what json.Marshal
	// of a map gives for this plain text. Check on the untouched line.
	if forgeHash(t, ev) != ev["hash"] {
		t.Fatal("the test's canonical form differs from memvault's")
	}
	ev["text"] = "the deploy key never rotates"
	ev["hash"] = forgeHash(t, ev)
	forged, _ := json.Marshal(ev)
	lines[0] = string(forged) + "\n"
	if err := os.WriteFile(segs[0], []byte(strings.Join(lines, "")), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := r.cmd(ctx, "verify").CombinedOutput()
	if err == nil || !strings.Contains(string(out), ":2:") {
		t.Fatalf("verify of a forged ledger: %v\n%s", err, out)
	}
	// A write on the forged ledger is refused too.
	if out, err := r.cmd(ctx, "remember", "on top").CombinedOutput(); err == nil {
		t.Fatalf("remember on a forged ledger went through:\n%s", out)
	}
	if !hasGit() {
		return
	}
	ictx, icancel := context.WithTimeout(context.Background(), time.Minute)
	defer icancel()
	// install git finds the vault from the working folder (its own --vault
	// flag shadows the global one), so give it a .memory to find.
	around := filepath.Join(r.home, "around")
	os.MkdirAll(around, 0o700)
	if err := os.Symlink(r.vault, filepath.Join(around, ".memory")); err != nil {
		t.Fatal(err)
	}
	install := exec.CommandContext(ictx, r.bin, "install", "git", "--vault")
	install.Dir = around
	install.Env = append(os.Environ(), "HOME="+r.home, "GIT_CONFIG_NOSYSTEM=1", "MEMVAULT_DIR=")
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("install git --vault: %v\n%s", err, out)
	}
	if out, ok := r.git("commit", "-q", "-a", "-m", "my edit"); ok || !strings.Contains(out, "ledger") {
		t.Fatalf("the pre-commit hook let a forged ledger through:\n%s", out)
	}
	if log := r.mustGit("log", "--format=%s", "-1"); strings.Contains(log, "my edit") {
		t.Fatal("the forged commit landed")
	}
}

func forgeHash(t *testing.T, ev map[string]any) string {
	t.Helper()
	c := map[string]any{}
	for k, v := range ev {
		if k != "hash" {
			c[k] = v
		}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(c); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
	return hex.EncodeToString(sum[:])
}

// TestForgedClaimIsNamed: a claim appended to the ledger by hand, chained
// and hashed as memvault would, that says "accepted" of a commitment the
// ledger holds open, passes the chain and the policy; `memvault verify`
// names it as a claim no check wrote, and a retraction settles it (issue
// 33, item 9).
func TestForgedClaimIsNamed(t *testing.T) {
	t.Parallel()
	r := newRig(t, plainMemvault(t))
	id := strings.TrimSpace(r.run("commitment", "open", "ship the installer"))
	segs, _ := filepath.Glob(filepath.Join(r.vault, "ledger", "*", "*", "*.jsonl"))
	data, err := os.ReadFile(segs[len(segs)-1])
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	var tip map[string]any
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &tip); err != nil {
		t.Fatal(err)
	}
	forged := map[string]any{"id": "e_01m8zzzzzzzzzzzzzzzzzzzzzz", "ts": tip["ts"], "agent": tip["agent"],
		"kind": "claim", "source": "cli", "prev": tip["hash"], "text": `commitment.closed={"id":"` + id + `"}`,
		"data": map[string]any{"type": "commitment.closed", "value": map[string]any{"id": id}, "status": "accepted"}}
	forged["hash"] = forgeHash(t, forged)
	line, _ := json.Marshal(forged)
	if err := os.WriteFile(segs[len(segs)-1], append(data, append(line, '\n')...), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := r.cmd(ctx, "verify").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "a claim no check wrote") || !strings.Contains(string(out), id+" is open") ||
		!strings.Contains(string(out), "memvault retract") {
		t.Fatalf("verify of a forged accepted claim: %v\n%s", err, out)
	}
	r.run("retract", "e_01m8zzzzzzzzzzzzzzzzzzzzzz", "--why", "forged by hand")
	if out, err := r.cmd(ctx, "verify").CombinedOutput(); err != nil {
		t.Fatalf("verify after the forged claim was retracted: %v\n%s", err, out)
	}
}
