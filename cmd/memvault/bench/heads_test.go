package bench

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/memory"
)

const headEvents = 100000

// headsVault builds a vault with n ledger events through memvault's own
// transactions, a thousand per transaction: rows of every kind the heads
// show, spread over 200 threads, with commitments and blockers open.
func headsVault(b testing.TB, n int) string {
	b.Helper()
	root := filepath.Join(b.TempDir(), ".memory")
	v, _, err := vault.Init(root)
	if err != nil {
		b.Fatal(err)
	}
	kinds := []string{"fact", "decision", "learning", "next", "fact", "constraint", "reflection", "blocker"}
	const batch = 1000
	for start := 0; start < n; start += batch {
		// A background gc (autoPack) may hold the lock for seconds.
		_, err := v.Update(vault.TxOptions{Session: fmt.Sprintf("s%05d", start/batch), LockTimeout: 5 * time.Minute}, func(tx *vault.Tx) error {
			for i := start; i < min(n, start+batch); i++ {
				thread := fmt.Sprintf("project:p%03d", i%200)
				if i%10 == 0 {
					thread = ""
				}
				text := fmt.Sprintf("row %d: a line of memory about the work on %s, long enough to be realistic", i, thread)
				var err error
				if i%25 == 0 {
					_, err = memory.OpenCommitment(tx, memory.Input{Thread: thread, Text: text})
				} else {
					kind := kinds[i%len(kinds)]
					if kind == "constraint" && i%1000 != 5 {
						kind = "fact"
					}
					_, err = memory.Remember(tx, memory.Input{Kind: kind, Thread: thread, Text: text})
				}
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
	return root
}

// BenchmarkRenderHeads times one process rendering MEMORY.md and one thread
// head (memvault render --dry-run --head --thread T) on a vault with 100k
// ledger events: with the derived state warm, right after one new event
// (folded on top of the cache), and cold (no .state/). The anchor is git
// printing the committed MEMORY.md (git show HEAD:MEMORY.md).
func BenchmarkRenderHeads(b *testing.B) {
	bin := memvaultBinary(b)
	root := headsVault(b, headEvents)
	render := func() *exec.Cmd {
		return exec.Command(bin, "--vault", root, "render", "--dry-run", "--head", "--thread", "project:p007")
	}
	// Write the heads once, so the anchor has a committed MEMORY.md.
	run(b, root, bin, "--vault", root, "render", "--head", "--thread", "project:p007")
	b.Run("warm", func(b *testing.B) {
		timeProcesses(b, func(int) *exec.Cmd { return render() })
	})
	n := 0
	b.Run("after-one-event", func(b *testing.B) {
		timeProcesses(b, func(int) *exec.Cmd {
			n++
			run(b, root, bin, "--vault", root, "remember", "--thread", "project:p007", fmt.Sprintf("new row %d", n))
			return render()
		})
	})
	b.Run("cold", func(b *testing.B) {
		timeProcesses(b, func(int) *exec.Cmd {
			os.RemoveAll(filepath.Join(root, ".state"))
			return render()
		})
	})
	b.Run("refresh-after-one-event", func(b *testing.B) {
		timeProcesses(b, func(int) *exec.Cmd {
			n++
			run(b, root, bin, "--vault", root, "remember", "--session", "bench", "--thread", "project:p007", fmt.Sprintf("new row %d", n))
			return exec.Command(bin, "--vault", root, "refresh", "--on", "session-end", "--session", "bench")
		})
	})
	if _, err := exec.LookPath("git"); err == nil {
		b.Run("git-show-anchor", func(b *testing.B) {
			timeProcesses(b, func(int) *exec.Cmd { return exec.Command("git", "-C", root, "show", "HEAD:MEMORY.md") })
		})
	}
}
