// Package bench holds whole-process benchmarks of memvault against the tools
// a person would otherwise use, measured in the same run on the same vault.
// Run with: go test -run '^$' -bench . -benchtime 200x ./cmd/memvault/bench/
package bench

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

const (
	fixtureFiles   = 10000
	fixtureCommits = 10000
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// TestMain removes the binary memvaultBinary built, so a bench run leaves
// nothing in the temporary folder.
func TestMain(m *testing.M) {
	code := m.Run()
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}

// memvaultBinary builds the real binary once, as a user would install it
// (the README's build command, its build tag included).
func memvaultBinary(b testing.TB) string {
	b.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "memvault-bench-bin")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "memvault")
		out, err := exec.Command("go", "build", "-tags", "urfave_cli_no_docs", "-o", binPath, "github.com/memvault/memvault/cmd/memvault").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		b.Fatal(buildErr)
	}
	return binPath
}

// largeVault makes a vault whose git history has fixtureCommits commits and
// whose tree has fixtureFiles files, written with git fast-import (seconds,
// not the minutes that 10k separate commits would take), then checked out
// and adopted by memvault init.
func largeVault(b *testing.B, bin string) string {
	b.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		b.Skip("needs git to build the fixture and as the anchor")
	}
	root := filepath.Join(b.TempDir(), ".memory")
	run(b, "", "git", "init", "-q", "-b", "main", root)
	cmd := exec.Command("git", "-C", root, "fast-import", "--quiet")
	cmd.Stderr = os.Stderr
	stdin, _ := cmd.StdinPipe()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriter(stdin)
	when := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	perCommit := fixtureFiles / fixtureCommits
	if perCommit == 0 {
		perCommit = 1
	}
	for c := 0; c < fixtureCommits; c++ {
		msg := fmt.Sprintf("note %d", c)
		fmt.Fprintf(w, "commit refs/heads/main\ncommitter Bench <bench@example.com> %d +0000\ndata %d\n%s\n", when+int64(c), len(msg), msg)
		for f := 0; f < perCommit; f++ {
			n := c*perCommit + f
			body := fmt.Sprintf("# note %d\n\nsome hand-written text for note %d\n", n, n)
			fmt.Fprintf(w, "M 100644 inline notes/%02d/note-%05d.md\ndata %d\n%s\n", n%100, n, len(body), body)
		}
	}
	w.Flush()
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		b.Fatalf("fast-import: %v", err)
	}
	run(b, root, "git", "reset", "-q", "--hard", "main")
	run(b, root, bin, "--vault", root, "init", "--adopt")
	run(b, root, bin, "--vault", root, "remember", "warm up")
	return root
}

func run(b *testing.B, dir string, name string, args ...string) {
	b.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = benchEnv()
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

func benchEnv() []string {
	return append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=Bench", "GIT_AUTHOR_EMAIL=bench@example.com",
		"GIT_COMMITTER_NAME=Bench", "GIT_COMMITTER_EMAIL=bench@example.com", "MEMVAULT_DIR=", "MEMVAULT_AGENT=")
}

// timeProcesses runs mk(i) b.N times and reports the median and 90th
// percentile of the whole-process wall time.
func timeProcesses(b *testing.B, mk func(i int) *exec.Cmd) {
	b.Helper()
	timeProcessesAfter(b, nil, mk)
}

// timeProcessesAfter is timeProcesses with before(i), when not nil, run
// untimed ahead of each timed process.
func timeProcessesAfter(b *testing.B, before func(i int), mk func(i int) *exec.Cmd) {
	b.Helper()
	durs := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if before != nil {
			before(i)
		}
		cmd := mk(i)
		cmd.Env = benchEnv()
		start := time.Now()
		out, err := cmd.CombinedOutput()
		durs = append(durs, time.Since(start))
		if err != nil {
			b.Fatalf("%v: %v\n%s", cmd.Args, err, out)
		}
	}
	b.StopTimer()
	sort.Slice(durs, func(i, j int) bool { return durs[i] < durs[j] })
	b.ReportMetric(ms(durs[len(durs)/2]), "p50-ms")
	b.ReportMetric(ms(durs[len(durs)*9/10]), "p90-ms")
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// BenchmarkCommitOneChange compares one memvault remember (append, commit,
// index update) with the git CLI committing one changed file, on the same
// 10k-file, 10k-commit vault, one after the other in the same run.
func BenchmarkCommitOneChange(b *testing.B) {
	bin := memvaultBinary(b)
	root := largeVault(b, bin)
	edits := 0 // unique text per run: benchmarks run their body more than once
	b.Run("memvault-remember", func(b *testing.B) {
		timeProcesses(b, func(int) *exec.Cmd {
			edits++
			return exec.Command(bin, "--vault", root, "remember", "--thread", "project:bench", fmt.Sprintf("benchmark fact %d", edits))
		})
	})
	b.Run("git-commit", func(b *testing.B) {
		timeProcesses(b, func(int) *exec.Cmd {
			edits++
			i := edits
			f := filepath.Join(root, "notes", "00", "note-00000.md")
			if err := os.WriteFile(f, []byte(fmt.Sprintf("edit %d\n", i)), 0o600); err != nil {
				b.Fatal(err)
			}
			// One process, as fair as git allows: stage and commit one path.
			return exec.Command("git", "-C", root, "commit", "-q", "-m", fmt.Sprintf("edit %d", i), "--", "notes/00/note-00000.md")
		})
	})
}
