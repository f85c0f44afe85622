package gitrepo

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/memvault/memvault/vault/vaulttest"
)

// BenchmarkLockWindow measures how long a commit holds git's lock files:
// index.lock, which every `git add` and `git commit` of a person needs and
// fails at once without, and the branch's lock. One iteration is one
// transaction's commit and index update, one file changed, in a repository
// of 100 and of 10,000 files (git's index about 10 KB and 1 MB). Reported:
// the median, 90th percentile and longest time each lock file existed,
// from its creation to its rename, in microseconds.
func BenchmarkLockWindow(b *testing.B) {
	if !vaulttest.HasGit() {
		b.Skip("the repository is made with git")
	}
	for _, files := range []int{100, 10000} {
		b.Run(fmt.Sprintf("files=%d", files), func(b *testing.B) {
			dir := b.TempDir()
			git := vaulttest.Git{Dir: dir}
			git.Run(b, "init", "-q", "-b", "main")
			for i := range files {
				p := filepath.Join(dir, fmt.Sprintf("d%02d", i%100), fmt.Sprintf("f%05d.md", i))
				os.MkdirAll(filepath.Dir(p), 0o700)
				if err := os.WriteFile(p, []byte(fmt.Sprintf("file %d\n", i)), 0o600); err != nil {
					b.Fatal(err)
				}
			}
			git.Run(b, "add", ".")
			git.Run(b, "commit", "-q", "-m", "base")
			r, err := Open(dir)
			if err != nil {
				b.Fatal(err)
			}
			held := map[string][]time.Duration{}
			r.lockHeld = func(name string, d time.Duration) { held[name] = append(held[name], d) }
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				p := "d00/f00000.md"
				data := []byte(fmt.Sprintf("change %d\n", i))
				if err := os.WriteFile(filepath.Join(dir, p), data, 0o600); err != nil {
					b.Fatal(err)
				}
				info, _ := os.Stat(filepath.Join(dir, p))
				changes := []*Change{{Path: p, Content: data, Stat: info}}
				h, err := r.Commit(changes, fmt.Sprintf("change %d\n", i), Signature{"m", "m@x"}, fixedTime)
				if err != nil {
					b.Fatal(err)
				}
				if err := r.UpdateIndex(h, changes); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			for _, name := range []string{"index.lock", "main.lock"} {
				d := held[name]
				if len(d) != b.N {
					b.Fatalf("%s held %d times in %d commits", name, len(d), b.N)
				}
				slices.Sort(d)
				us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }
				b.ReportMetric(us(d[len(d)/2]), name+"-p50-us")
				b.ReportMetric(us(d[len(d)*9/10]), name+"-p90-us")
				b.ReportMetric(us(d[len(d)-1]), name+"-max-us")
			}
		})
	}
}
