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
// moment memvault holds that lock can fail a person's command. Reported:
// the person's rounds and how many failed, on index.lock and on the
// branch (its lock held, or the branch moved under the commit), and
// memvault's writes and failures. Run with -benchtime
// 1x; each iteration is one such run.
func BenchmarkPersonCommitsWhileMemvaultWrites(b *testing.B) {
	bin := memvaultBinary(b)
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
	var rounds, failed, onIndex, onRef, onHook, writes, mvFailed int
	for i := 0; i < b.N; i++ {
		root := filepath.Join(b.TempDir(), ".memory")
		run(b, "", bin, "--vault", root, "init")
		run(b, "", bin, "--vault", root, "remember", "warm up")
		if os.Getenv("MEMVAULT_BENCH_GIT_HOOKS") == "1" {
			run(b, root, bin, "--vault", root, "install", "git")
		}
		stop := time.Now().Add(time.Duration(seconds) * time.Second)
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; time.Now().Before(stop); n++ {
				cmd := exec.Command(bin, "--vault", root, "remember", fmt.Sprintf("memvault writes, %d", n))
				cmd.Env = benchEnv()
				writes++
				if cmd.Run() != nil {
					mvFailed++
				}
			}
		}()
		person := filepath.Join(root, "person.md")
		for n := 0; time.Now().Before(stop); n++ {
			f, err := os.OpenFile(person, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
			if err != nil {
				b.Fatal(err)
			}
			fmt.Fprintf(f, "- the person's line %d\n", n)
			f.Close()
			rounds++
			out, ok := personGit(root, "add", "person.md")
			if ok {
				out, ok = personGit(root, "commit", "-q", "-m", fmt.Sprintf("person: line %d", n))
			}
			switch {
			case ok:
			case strings.Contains(out, "index.lock"):
				failed++
				onIndex++
			case strings.Contains(out, "cannot lock ref"):
				// the branch's lock was held, or memvault's commit moved
				// the branch between git's read of it and its update
				failed++
				onRef++
			case strings.Contains(out, "would leave the ledger broken"):
				// the vault's pre-commit hook: memvault committed while
				// git held the index, so what the person staged lacks
				// memvault's newest events
				failed++
				onHook++
			case strings.Contains(out, "nothing to commit") || strings.Contains(out, "no changes added"):
				rounds-- // an add that failed on the lock left the line for the next round
			default:
				wg.Wait()
				b.Fatalf("the person's git failed for another reason:\n%s", out)
			}
		}
		wg.Wait()
	}
	b.ReportMetric(float64(rounds)/float64(b.N), "person-rounds")
	b.ReportMetric(float64(failed)/float64(b.N), "person-failed")
	b.ReportMetric(float64(onIndex)/float64(b.N), "on-index.lock")
	b.ReportMetric(float64(onRef)/float64(b.N), "on-ref.lock")
	b.ReportMetric(float64(onHook)/float64(b.N), "on-pre-commit")
	b.ReportMetric(float64(writes)/float64(b.N), "memvault-writes")
	b.ReportMetric(float64(mvFailed)/float64(b.N), "memvault-failed")
}

// personGit runs git in the vault as the person and returns its output and
// whether it exited 0.
func personGit(root string, args ...string) (string, bool) {
	cmd := exec.Command("git", append([]string{"-C", root}, args...)...)
	cmd.Env = benchEnv()
	out, err := cmd.CombinedOutput()
	return string(out), err == nil
}
