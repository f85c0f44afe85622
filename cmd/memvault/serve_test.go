package main

import (
	"bufio"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
)

// TestServeCommand runs `memvault serve` as a person does: its one line on
// stdout is the contract's, the address it prints answers with the page,
// the same path without the token or under another Host is refused, and
// SIGTERM ends it with exit 0. A bad --port is exit 2 with nothing served.
func TestServeCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	vaultDir := filepath.Join(dir, "vault")
	if out, err := memvaultCmd(t, home, "--vault", vaultDir, "init").CombinedOutput(); err != nil {
		t.Fatalf("init: %v\n%s", err, out)
	}
	if out, err := memvaultCmd(t, home, "--vault", vaultDir, "remember", "<script>alert(1)</script>").CombinedOutput(); err != nil {
		t.Fatalf("remember: %v\n%s", err, out)
	}
	bad := memvaultCmd(t, home, "--vault", vaultDir, "serve", "--port", "70000")
	if out, err := bad.CombinedOutput(); bad.ProcessState.ExitCode() != 2 {
		t.Errorf("serve --port 70000: %v\n%s", err, out)
	}

	cmd := memvaultCmd(t, home, "--vault", vaultDir, "serve")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := false
	defer func() {
		if !exited {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	}()
	out := bufio.NewReader(stdout)
	line, err := out.ReadString('\n')
	if err != nil {
		t.Fatalf("serve printed %q: %v", line, err)
	}
	root, _ := filepath.EvalSymlinks(vaultDir)
	m := regexp.MustCompile(`^memvault: serving (.+) at (http://127\.0\.0\.1:(\d+))/\?token=([0-9a-f]{64})\n$`).FindStringSubmatch(line)
	if m == nil || (m[1] != vaultDir && m[1] != root) {
		t.Fatalf("serve printed %q", line)
	}
	base, port, token := m[2], m[3], m[4]
	get := func(url, host string) (int, string) {
		req, _ := http.NewRequest("GET", url, nil)
		if host != "" {
			req.Host = host
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	if code, body := get(base+"/timeline?token="+token, ""); code != 200 || !strings.Contains(body, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Errorf("the timeline: %d\n%s", code, body)
	}
	if code, _ := get(base+"/timeline", ""); code != 403 {
		t.Errorf("without the token: %d", code)
	}
	if code, _ := get(base+"/?token="+token, "attacker.example:"+port); code != 403 {
		t.Errorf("another Host: %d", code)
	}
	if code, _ := get(base+"/?token="+token, "localhost:"+port); code != 200 {
		t.Errorf("localhost: %d", code)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	rest, _ := io.ReadAll(out)
	err = cmd.Wait()
	exited = true
	if err != nil || len(rest) != 0 {
		t.Errorf("after SIGTERM: %v, and more on stdout: %q", err, rest)
	}
}
