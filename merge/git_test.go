package merge

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

// gitMerger runs `git merge-file -p` as the oracle Lines must agree with.
// It works in its own directory, outside any repository and with no user or
// system config, because merge.conflictStyle in a config would change git's
// output.
type gitMerger struct {
	git string
	dir string
	env []string
}

// newGitMerger returns nil when git is not on PATH, so callers skip the
// comparison instead of failing.
func newGitMerger(tb testing.TB) *gitMerger {
	tb.Helper()
	git, err := exec.LookPath("git")
	if err != nil {
		return nil
	}
	dir := tb.TempDir()
	return &gitMerger{
		git: git,
		dir: dir,
		env: []string{
			"PATH=" + os.Getenv("PATH"),
			"HOME=" + dir,
			"XDG_CONFIG_HOME=" + dir,
			"GIT_CONFIG_NOSYSTEM=1",
			"GIT_CONFIG_GLOBAL=" + os.DevNull,
			"GIT_CEILING_DIRECTORIES=" + filepath.Dir(dir),
			"LC_ALL=C",
		},
	}
}

// gitComparable reports whether git would merge these inputs at all: it
// refuses anything with a NUL byte in its first 8000 bytes as binary.
func gitComparable(in ...[]byte) bool {
	for _, b := range in {
		if bytes.IndexByte(b[:min(len(b), 8000)], 0) >= 0 {
			return false
		}
	}
	return true
}

// merge returns git's output and its exit status, the number of conflicts
// capped at 127.
func (g *gitMerger) merge(tb testing.TB, base, ours, theirs []byte, o Options) ([]byte, int) {
	tb.Helper()
	o, err := o.normalized()
	if err != nil {
		tb.Fatal(err)
	}
	for name, b := range map[string][]byte{"ours": ours, "base": base, "theirs": theirs} {
		if err := os.WriteFile(filepath.Join(g.dir, name), b, 0o600); err != nil {
			tb.Fatal(err)
		}
	}
	args := []string{"merge-file", "-p"}
	switch o.Style {
	case StyleDiff3:
		args = append(args, "--diff3")
	case StyleZealousDiff3:
		args = append(args, "--zdiff3")
	}
	switch o.Favor {
	case FavorOurs:
		args = append(args, "--ours")
	case FavorTheirs:
		args = append(args, "--theirs")
	case FavorUnion:
		args = append(args, "--union")
	}
	args = append(args, "--marker-size="+strconv.Itoa(o.MarkerSize),
		"-L", o.OursLabel, "-L", o.BaseLabel, "-L", o.TheirsLabel,
		"ours", "base", "theirs")
	cmd := exec.Command(g.git, args...)
	cmd.Dir = g.dir
	cmd.Env = g.env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	code := 0
	if err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() < 0 || ee.ExitCode() > 127 {
			tb.Fatalf("git merge-file: %v\n%s", err, stderr.Bytes())
		}
		code = ee.ExitCode()
	}
	return stdout.Bytes(), code
}

// checkAgainstGit fails tb when Lines and git disagree on output or
// conflict count.
func checkAgainstGit(tb testing.TB, g *gitMerger, base, ours, theirs []byte, o Options) {
	tb.Helper()
	got, err := Lines(base, ours, theirs, o)
	if err != nil {
		tb.Fatalf("Lines: %v", err)
	}
	want, code := g.merge(tb, base, ours, theirs, o)
	if !bytes.Equal(got.Merged, want) || min(got.Conflicts, 127) != code {
		tb.Fatalf("disagree with git (options %+v)\nbase:   %q\nours:   %q\ntheirs: %q\ngit (%d conflicts):\n%q\nLines (%d conflicts):\n%q",
			o, base, ours, theirs, code, want, got.Conflicts, got.Merged)
	}
}
