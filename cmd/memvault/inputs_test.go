package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/memvault/memvault/vault/vaulttest"
)

// pathInputs are the commands that read a file a person names, each with
// the largest file it accepts. cmd/memvault/internal/cli's
// TestEveryPathInputIsListed walks the command tree and fails when a
// command takes a file this list does not name, so a new one is tried here
// too. Each reads through fileio.OpenInput (or ReadBounded for "-").
var pathInputs = []struct {
	name string
	args func(path string) []string
	max  int64
}{
	{"import", func(p string) []string { return []string{"import", p} }, 1 << 30},
	{"delegate --file", func(p string) []string { return []string{"delegate", "--file", p} }, 8 << 20},
	{"compact --file", func(p string) []string { return []string{"compact", "--session", "s1", "--file", p} }, 1 << 20},
	{"transcript import", func(p string) []string {
		return []string{"transcript", "import", "--session", "s1", "--format", "generic", p}
	}, 4 << 30},
}

// TestPathInputsBounded (issue 33, items 12 and 13): every command that
// reads a named file refuses a named pipe without a writer, /dev/zero, a
// folder and a file one byte over its limit (sparse: nothing is read to
// make it), at once, in one line, with exit 2 and the vault as it was;
// and the same commands given "-" refuse /dev/zero as their stdin. Each
// run has a timeout, so a command that blocks fails the test quickly
// instead of hanging it.
func TestPathInputsBounded(t *testing.T) {
	r := newRig(t, plainMemvault(t))
	r.run("remember", "fact", "kept")
	fifo := filepath.Join(r.dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	folder := filepath.Join(r.dir, "folder")
	os.Mkdir(folder, 0o700)
	before := vaulttest.Files(t, r.vault)
	for _, in := range pathInputs {
		big := filepath.Join(r.dir, "big-"+strings.ReplaceAll(in.name, " ", "-"))
		if err := os.WriteFile(big, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(big, in.max+1); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct{ path, want string }{
			{fifo, "not a regular file (a named pipe)"},
			{"/dev/zero", "not a regular file (a character device)"},
			{folder, "not a regular file (a folder)"},
			{big, "over "},
		} {
			stderr, code, took := runBounded(t, r, nil, in.args(c.path)...)
			what := in.name + " " + c.path
			if code != 2 {
				t.Errorf("%s: exit %d, want 2\n%s", what, code, stderr)
			}
			if line := errorLine(stderr); !strings.Contains(line, c.want) {
				t.Errorf("%s: error %q, want one line saying %q", what, line, c.want)
			}
			if took > 5*time.Second {
				t.Errorf("%s: took %v to refuse", what, took)
			}
		}
		os.Remove(big)
	}
	for _, args := range [][]string{{"import", "-"}, {"delegate", "-"}, {"delegate", "--file", "-"}, {"compact", "--session", "s1", "--file", "-"}} {
		zero, err := os.Open("/dev/zero")
		if err != nil {
			t.Fatal(err)
		}
		stderr, code, _ := runBounded(t, r, zero, args...)
		zero.Close()
		if code != 2 || !strings.Contains(errorLine(stderr), "stdin: not a regular file, a pipe or a terminal") {
			t.Errorf("%s < /dev/zero: exit %d: %s", strings.Join(args, " "), code, stderr)
		}
	}
	if after := vaulttest.Files(t, r.vault); !sameFiles(before, after) {
		t.Errorf("the vault changed")
	}
	r.checkRepo()
}

// runBounded runs memvault with a deadline of 20 s, long past any refusal:
// a command that blocks is killed and reported rather than hanging the
// suite. It returns the error output and the exit code.
func runBounded(t *testing.T, r *rig, stdin *os.File, args ...string) (string, int, time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := r.cmd(ctx, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if stdin != nil {
		cmd.Stdin = stdin
	}
	start := time.Now()
	err := cmd.Run()
	took := time.Since(start)
	if ctx.Err() != nil {
		t.Fatalf("memvault %s: still running after 20 s (blocked)", strings.Join(args, " "))
	}
	code := 0
	if err != nil {
		code = cmd.ProcessState.ExitCode()
	}
	return stderr.String(), code, took
}

// errorLine is the one "memvault: …" line of stderr, "" unless there is
// exactly one.
func errorLine(stderr string) string {
	var found []string
	for _, l := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(l, "memvault: ") && !strings.HasPrefix(l, "memvault: thread ") {
			found = append(found, l)
		}
	}
	if len(found) != 1 {
		return ""
	}
	return found[0]
}

func sameFiles(a, b map[string][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || !bytes.Equal(v, w) {
			return false
		}
	}
	return true
}

// TestExportRefusesTheVault (issue 33, item 5): export -o refuses every
// spelling of a path inside the vault: a file of it (MEMORY.md, which holds
// a hand edit not yet committed; memvault.toml), through "..", through a
// link to the vault's folder, through a link to a folder inside it, the
// vault's folder itself, and a file in .git; exit 2, one line, the vault
// byte for byte as it was, and a later write still works. A path outside
// is written.
func TestExportRefusesTheVault(t *testing.T) {
	r := newRig(t, plainMemvault(t))
	r.run("remember", "--thread", "project:x", "fact", "kept")
	r.run("render")
	mem := filepath.Join(r.vault, "MEMORY.md")
	data, err := os.ReadFile(mem)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(mem, append(data, "\nmy hand edit\n"...), 0o600); err != nil {
		t.Fatal(err)
	}
	vaulttest.Symlink(t, r.vault, filepath.Join(r.dir, "tovault"))
	vaulttest.Symlink(t, filepath.Join(r.vault, "ledger"), filepath.Join(r.dir, "toledger"))
	before := vaulttest.Files(t, r.vault)
	for _, out := range []string{
		mem,
		filepath.Join(r.vault, "memvault.toml"),
		filepath.Join(r.vault, "ledger", "..", "memvault.toml"),
		filepath.Join(r.dir, "tovault", "MEMORY.md"),
		filepath.Join(r.dir, "tovault", "new.md"),
		filepath.Join(r.dir, "toledger", "x.jsonl"),
		r.vault,
		filepath.Join(r.vault, ".git", "HEAD"),
		filepath.Join(r.proj, "..", "vault", "MEMORY.md"),
	} {
		for _, format := range []string{"md", "json"} {
			stderr, code, _ := runBounded(t, r, nil, "export", "--thread", "project:x", "--format", format, "-o", out)
			if code != 2 || !strings.Contains(errorLine(stderr), "inside the vault") {
				t.Errorf("export -o %s: exit %d: %s", out, code, stderr)
			}
		}
	}
	if after := vaulttest.Files(t, r.vault); !sameFiles(before, after) {
		t.Fatalf("the vault changed")
	}
	outside := filepath.Join(r.dir, "export.md")
	r.run("export", "--thread", "project:x", "-o", outside)
	if _, err := os.Stat(outside); err != nil {
		t.Fatal(err)
	}
	r.run("remember", "--thread", "project:x", "fact", "still writable")
	if got, _ := os.ReadFile(mem); !bytes.Contains(got, []byte("my hand edit")) {
		t.Fatalf("the hand edit is gone:\n%s", got)
	}
	r.checkRepo()
}
