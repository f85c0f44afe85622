package bench

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// BenchmarkPersonCommitsWhileMemvaultWrites is a person and memvault
// writing to one vault at once (issue 16): memvault runs `remember` in a
// loop, one process after another, while the person appends a line to a
// file of their own and runs `git add` and `git commit` in a loop, for
// MEMVAULT_BENCH_SECONDS seconds (5 by default). git takes its index's lock
// (.git/index.lock) for both and fails at once when it is held, so every
// moment memvault holds that lock can fail a person's command; and a
// commit fails when memvault moved the branch under it.
// MEMVAULT_BENCH_PERSON=commit-a makes the person run `git commit -a`
// alone instead. Reported: the person's rounds and how many failed, on
// index.lock, on the branch's lock, on the branch moved under the commit
// and, with MEMVAULT_BENCH_GIT_HOOKS=1 (the vault's git hooks installed),
// on the pre-commit hook; memvault's writes and failures. MEMVAULT_BENCH_BASELINE=BINARY runs another build in
// turn with this one, its figures prefixed base-. Run with -benchtime 1x
// or more; each iteration is one such run per build.
func BenchmarkPersonCommitsWhileMemvaultWrites(b *testing.B) {
	if _, err := exec.LookPath("git"); err != nil {
		b.Skip("the person uses git")
	}
	seconds := 5
	if s := os.Getenv("MEMVAULT_BENCH_SECONDS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			b.Fatalf("MEMVAULT_BENCH_SECONDS=%q: want a number of seconds", s)
		}
		seconds = n
	}
	builds := []struct{ prefix, bin string }{{"", memvaultBinary(b)}}
	if base := os.Getenv("MEMVAULT_BENCH_BASELINE"); base != "" {
		builds = append(builds, struct{ prefix, bin string }{"base-", base})
	}
	totals := make([]contention, len(builds))
	for i := 0; i < b.N; i++ {
		for j, build := range builds {
			totals[j].add(contend(b, build.bin, time.Duration(seconds)*time.Second))
		}
	}
	for j, build := range builds {
		t := totals[j]
		for _, m := range []struct {
			n    int
			unit string
		}{{t.rounds, "person-rounds"}, {t.failed, "person-failed"}, {t.onIndex, "on-index.lock"},
			{t.onRef, "on-branch.lock"}, {t.onMoved, "on-branch-moved"}, {t.onHook, "on-pre-commit"}, {t.writes, "memvault-writes"}, {t.mvFailed, "memvault-failed"}} {
			b.ReportMetric(float64(m.n)/float64(b.N), build.prefix+m.unit)
		}
	}
}

// contention is what one run of a person's commits against memvault's
// writes counted.
type contention struct{ rounds, failed, onIndex, onRef, onMoved, onHook, writes, mvFailed int }

func (c *contention) add(o contention) {
	c.rounds += o.rounds
	c.failed += o.failed
	c.onIndex += o.onIndex
	c.onRef += o.onRef
	c.onMoved += o.onMoved
	c.onHook += o.onHook
	c.writes += o.writes
	c.mvFailed += o.mvFailed
}

// contend runs the person's loop against memvault bin's remember loop on a
// new vault for d.
func contend(b *testing.B, bin string, d time.Duration) contention {
	b.Helper()
	var c contention
	root := filepath.Join(b.TempDir(), ".memory")
	run(b, "", bin, "--vault", root, "init")
	run(b, "", bin, "--vault", root, "remember", "warm up")
	if os.Getenv("MEMVAULT_BENCH_GIT_HOOKS") == "1" {
		run(b, root, bin, "--vault", root, "install", "git")
	}
	stop := time.Now().Add(d)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for n := 0; time.Now().Before(stop); n++ {
			cmd := exec.Command(bin, "--vault", root, "remember", fmt.Sprintf("memvault writes, %d", n))
			cmd.Env = benchEnv()
			c.writes++
			if cmd.Run() != nil {
				c.mvFailed++
			}
		}
	}()
	defer wg.Wait()
	person := filepath.Join(root, "person.md")
	all := os.Getenv("MEMVAULT_BENCH_PERSON") == "commit-a"
	if all {
		// commit -a commits tracked files only
		if err := os.WriteFile(person, nil, 0o600); err != nil {
			b.Fatal(err)
		}
		if out, ok := personGit(root, "add", "person.md"); !ok {
			b.Fatal(out)
		}
	}
	for n := 0; time.Now().Before(stop); n++ {
		f, err := os.OpenFile(person, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			b.Fatal(err)
		}
		fmt.Fprintf(f, "- the person's line %d\n", n)
		f.Close()
		c.rounds++
		msg := fmt.Sprintf("person: line %d", n)
		var out string
		ok := false
		if all {
			out, ok = personGit(root, "commit", "-q", "-a", "-m", msg)
		} else if out, ok = personGit(root, "add", "person.md"); ok {
			out, ok = personGit(root, "commit", "-q", "-m", msg)
		}
		switch {
		case ok:
		case strings.Contains(out, "index.lock"):
			c.failed++
			c.onIndex++
		case strings.Contains(out, "cannot lock ref") && strings.Contains(out, "File exists"):
			c.failed++
			c.onRef++
		case strings.Contains(out, "cannot lock ref"):
			// memvault's commit moved the branch between git's read of
			// it and its update
			c.failed++
			c.onMoved++
		case strings.Contains(out, "would leave the ledger broken"):
			// the vault's pre-commit hook: memvault committed while git
			// held the index, so what the person staged lacks memvault's
			// newest events
			c.failed++
			c.onHook++
		case strings.Contains(out, "nothing to commit") || strings.Contains(out, "no changes added"):
			c.rounds-- // an add that failed on the lock left the line for the next round
		default:
			b.Errorf("the person's git failed for another reason:\n%s", out)
			return c
		}
	}
	return c
}

// personGit runs git in the vault as the person and returns its output and
// whether it exited 0.
func personGit(root string, args ...string) (string, bool) {
	cmd := exec.Command("git", append([]string{"-C", root}, args...)...)
	cmd.Env = benchEnv()
	out, err := cmd.CombinedOutput()
	return string(out), err == nil
}
