package bench

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/memvault/memvault/vault/continuity"

	"github.com/memvault/memvault/vault"
)

// BenchmarkContinuity times `memvault continuity status` and `continuity
// index` as whole processes on a vault with 10k learnings (goal p50 ≤ 20 ms,
// issue 7), beside `git status` in the same vault. With
// MEMVAULT_BENCH_BASELINE set to another memvault binary (an older build),
// the same commands are timed with it too, on the same vault in the same
// run, for a before-and-after comparison.
func BenchmarkContinuity(b *testing.B) {
	bin := memvaultBinary(b)
	n := 10000
	if s := os.Getenv("MEMVAULT_BENCH_LEARNINGS"); s != "" {
		fmt.Sscan(s, &n)
	}
	root := filepath.Join(b.TempDir(), ".memory")
	v, _, err := vault.Init(root)
	if err != nil {
		b.Fatal(err)
	}
	const batch = 500
	for start := 0; start < n; start += batch {
		_, err := continuity.UpdateContinuity(v, continuity.ContinuityOptions{}, func(ct *continuity.ContinuityTx) error {
			for i := start; i < min(n, start+batch); i++ {
				_, err := ct.Learn(continuity.LearnInput{Error: fmt.Sprintf("step %d of the deploy failed on host %d", i, i%37),
					Cause: "a stale cache", Prevention: fmt.Sprintf("clear the cache before step %d", i),
					Scope: fmt.Sprintf("module:m%02d", i%40)})
				if err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	run(b, root, bin, "--vault", root, "continuity", "status") // warm the derived state
	b.Run("continuity-status", func(b *testing.B) {
		timeProcesses(b, func(int) *exec.Cmd { return exec.Command(bin, "--vault", root, "continuity", "status") })
	})
	b.Run("continuity-index", func(b *testing.B) {
		timeProcesses(b, func(int) *exec.Cmd { return exec.Command(bin, "--vault", root, "continuity", "index") })
	})
	if base := os.Getenv("MEMVAULT_BENCH_BASELINE"); base != "" {
		b.Run("baseline-continuity-status", func(b *testing.B) {
			timeProcesses(b, func(int) *exec.Cmd { return exec.Command(base, "--vault", root, "continuity", "status") })
		})
		b.Run("baseline-continuity-index", func(b *testing.B) {
			timeProcesses(b, func(int) *exec.Cmd { return exec.Command(base, "--vault", root, "continuity", "index") })
		})
	}
	b.Run("git-status", func(b *testing.B) {
		timeProcesses(b, func(int) *exec.Cmd { return exec.Command("git", "-C", root, "status", "--porcelain") })
	})
}
