package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestIsTerminal: install asks only a terminal whether to create the vault
// (issue 38). /dev/null is a character device but no terminal: a prompt
// there would read EOF and take it for yes; a pipe and a file are none
// either; a pseudo-terminal, what a person's shell has, is one.
func TestIsTerminal(t *testing.T) {
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	if isTerminal(null) {
		t.Errorf("%s is taken for a terminal", os.DevNull)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if isTerminal(r) {
		t.Error("a pipe is taken for a terminal")
	}
	f, err := os.CreateTemp(t.TempDir(), "stdin")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if isTerminal(f) {
		t.Error("a file is taken for a terminal")
	}

	_, pts := openPTY(t)
	if !isTerminal(pts) {
		t.Error("a pseudo-terminal is not taken for a terminal")
	}
}

// openPTY opens a pseudo-terminal: what a person types goes into master,
// and the program reads it from pts.
func openPTY(t *testing.T) (master, pts *os.File) {
	t.Helper()
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	t.Cleanup(func() { ptmx.Close() })
	if err := unix.IoctlSetPointerInt(int(ptmx.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Skipf("unlockpt: %v", err)
	}
	n, err := unix.IoctlGetInt(int(ptmx.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Skipf("ptsname: %v", err)
	}
	pts, err = os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("open the pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { pts.Close() })
	return ptmx, pts
}

// TestInstallAsksATerminal: at a terminal, an install that finds no vault
// still asks (issue 38 keeps the prompt): "n" creates none and warns, "y"
// and a bare Enter create the project's .memory.
func TestInstallAsksATerminal(t *testing.T) {
	for _, c := range []struct {
		answer string
		vault  bool
	}{{"n\n", false}, {"y\n", true}, {"\n", true}} {
		proj := t.TempDir()
		if err := os.Mkdir(filepath.Join(proj, ".git"), 0o700); err != nil {
			t.Fatal(err)
		}
		t.Chdir(proj)
		t.Setenv("HOME", t.TempDir())
		master, pts := openPTY(t)
		if _, err := master.WriteString(c.answer); err != nil {
			t.Fatal(err)
		}
		var out, errOut bytes.Buffer
		e := env{stdin: pts, stdout: &out, stderr: &errOut, userUmask: -1}
		opts := installOptions{scope: "project", args: []string{"claude-code"}}
		in, err := installer(opts, "install")
		if err != nil {
			t.Fatal(err)
		}
		if err := ensureProjectVault(e, opts, &out, in); err != nil {
			t.Fatalf("answer %q: %v\n%s", c.answer, err, errOut.String())
		}
		if !strings.Contains(out.String(), "[Y/n] ") {
			t.Errorf("answer %q: no prompt at a terminal: %q", c.answer, out.String())
		}
		_, serr := os.Stat(filepath.Join(proj, ".memory", "memvault.toml"))
		if got := serr == nil; got != c.vault {
			t.Errorf("answer %q: vault made %v, want %v\n%s%s", c.answer, got, c.vault, out.String(), errOut.String())
		}
		if !c.vault && !strings.Contains(errOut.String(), "warning: no vault") {
			t.Errorf("answer %q: no warning: %q", c.answer, errOut.String())
		}
	}
}
