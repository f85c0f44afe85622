package bench

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/memvault/memvault/cmd/memvault/internal/cli"
	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/memory"
)

// BenchmarkRememberInProcess runs `memvault remember` through the command
// line's own entry point inside the benchmark's process, so that a CPU
// profile (-cpuprofile) shows the write path without the process's start:
// on a small vault (1,000 events) and on the 100k-event vault
// (MEMVAULT_BENCH_CACHE keeps it). The heads' refresh is off
// (MEMVAULT_REFRESH=off): it runs after the command, off the write path.
//
//	MEMVAULT_BENCH_CACHE=/tmp/mvcache go test -run '^$' -bench RememberInProcess \
//	    -benchtime 200x -cpuprofile /tmp/w.prof ./cmd/memvault/bench/
func BenchmarkRememberInProcess(b *testing.B) {
	b.Setenv("MEMVAULT_REFRESH", "off")
	b.Setenv("MEMVAULT_DIR", "")
	b.Setenv("MEMVAULT_AGENT", "")
	for _, size := range []string{"small", "events"} {
		b.Run(size, func(b *testing.B) {
			root := writeVault(b, size)
			b.ResetTimer()
			cpu0 := processCPU()
			for i := 0; i < b.N; i++ {
				args := []string{"--vault", root, "remember", "--thread", "project:bench", fmt.Sprintf("benchmark fact %d", i)}
				if code := cli.Run(args, nil, io.Discard, os.Stderr); code != 0 {
					b.Fatalf("remember: exit %d", code)
				}
			}
			b.ReportMetric(ms(processCPU()-cpu0)/float64(b.N), "cpu-ms/op")
		})
	}
}

// writeVault is a vault for the write benchmarks: small, 1,000 events in
// 100 transactions; large, the 100k-event vault of BenchmarkVerify. Its
// loose objects are packed, so that no write of the benchmark starts the
// automatic pack, and one write has checked the ledger (a copy has new
// inodes: its first write verifies it again), so that the benchmark times
// the writes that follow.
func writeVault(b *testing.B, size string) string {
	b.Helper()
	root := buildWriteVault(b, size)
	run(b, root, "git", "gc", "-q")
	v, err := vault.Open(root)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := v.Update(vault.TxOptions{LockTimeout: 5 * time.Minute}, func(tx *vault.Tx) error {
		_, err := memory.Remember(tx, memory.Input{Text: "warm up"})
		return err
	}); err != nil {
		b.Fatal(err)
	}
	return root
}

func buildWriteVault(b *testing.B, size string) string {
	if size != "small" {
		return verifyVault(b)
	}
	root := filepath.Join(b.TempDir(), ".memory")
	v, _, err := vault.Init(root)
	if err != nil {
		b.Fatal(err)
	}
	for t := 0; t < 100; t++ {
		if _, err := v.Update(vault.TxOptions{}, func(tx *vault.Tx) error {
			for i := 0; i < 10; i++ {
				if _, err := memory.Remember(tx, memory.Input{Thread: fmt.Sprintf("project:p%02d", i),
					Text: fmt.Sprintf("row %d.%d of the small vault", t, i)}); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			b.Fatal(err)
		}
	}
	return root
}

// BenchmarkRememberVsGit is the write budget's check (docs/PERFORMANCE.md
// rows 5 and 6): one `memvault remember` process against one `git commit`
// process of one changed file, taking turns in the same run, on a vault
// and on a copy of it that only git touches (so neither side pays for the
// other's commits). Each side is timed as a whole process; it reports the
// p50 of the wall time and of the CPU time (user + system, from the
// process's rusage, which other work on the machine does not inflate), and
// the ratios memvault ÷ git.
//
// Durability, each side (docs/PERFORMANCE.md, "Writes"): memvault fsyncs
// the ledger line (the content) and the branch's lock file; it does not
// fsync git's loose objects. git runs with core.fsync=reference,index, its
// closest: it fsyncs the branch's lock file (the index of `commit --only`
// is a temporary one, not fsynced), not the content. The anchor
// git-committed (core.fsync=committed,index: every object and the ref)
// is stronger than memvault on the git side and is reported beside it.
//
// The heads' refresh is off (MEMVAULT_REFRESH=off): with it on, it runs in
// a detached worker after the command has exited and would load the next
// turn. Sizes: small (1,000 events in 100 commits), large (10k commits and
// 10k files: git's index is the large one), events (100k ledger events,
// MEMVAULT_BENCH_CACHE keeps it). MEMVAULT_BENCH_BASELINE names another
// memvault binary (a build before a change) that takes its turn too, on a
// copy of the vault of its own.
//
//	go test -run '^$' -bench RememberVsGit -benchtime 40x ./cmd/memvault/bench/
func BenchmarkRememberVsGit(b *testing.B) {
	bin := memvaultBinary(b)
	if _, err := exec.LookPath("git"); err != nil {
		b.Skip("needs git as the anchor")
	}
	for _, size := range []string{"small", "large", "events"} {
		b.Run(size, func(b *testing.B) {
			var root string
			if size == "large" {
				root = largeVault(b, bin)
			} else {
				root = writeVault(b, size)
			}
			twin := filepath.Join(b.TempDir(), "twin")
			if out, err := exec.Command("cp", "-a", root, twin).CombinedOutput(); err != nil {
				b.Fatalf("cp: %v\n%s", err, out)
			}
			sides := []struct {
				name string
				cmd  func(i int) *exec.Cmd
			}{
				{"memvault", func(i int) *exec.Cmd {
					return exec.Command(bin, "--vault", root, "remember", "--thread", "project:bench", fmt.Sprintf("benchmark fact %d", i))
				}},
				{"git-reference", gitCommitOne(b, twin, "reference,index")},
				{"git-committed", gitCommitOne(b, twin, "committed,index")},
			}
			if base := os.Getenv("MEMVAULT_BENCH_BASELINE"); base != "" {
				// Another build (the code before a change) on a copy of
				// its own, in the same turns: x-baseline is after ÷ before.
				copyOf := filepath.Join(b.TempDir(), "baseline")
				if out, err := exec.Command("cp", "-a", root, copyOf).CombinedOutput(); err != nil {
					b.Fatalf("cp: %v\n%s", err, out)
				}
				sides = append(sides[:1], append([]struct {
					name string
					cmd  func(i int) *exec.Cmd
				}{{"baseline", func(i int) *exec.Cmd {
					return exec.Command(base, "--vault", copyOf, "remember", "--thread", "project:bench", fmt.Sprintf("benchmark fact %d", i))
				}}}, sides[1:]...)...)
			}
			wall := make([][]time.Duration, len(sides))
			cpu := make([][]time.Duration, len(sides))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				for s, side := range sides {
					cmd := side.cmd(i)
					cmd.Env = append(benchEnv(), "MEMVAULT_REFRESH=off")
					start := time.Now()
					out, err := cmd.CombinedOutput()
					wall[s] = append(wall[s], time.Since(start))
					if err != nil {
						b.Fatalf("%v: %v\n%s", cmd.Args, err, out)
					}
					cpu[s] = append(cpu[s], cpuOf(cmd.ProcessState))
				}
			}
			b.StopTimer()
			for s, side := range sides {
				b.ReportMetric(ms(median(wall[s])), side.name+"-ms")
				b.ReportMetric(ms(median(cpu[s])), side.name+"-cpu-ms")
			}
			for s := 1; s < len(sides); s++ {
				b.ReportMetric(float64(median(wall[0]))/float64(median(wall[s])), "x"+sides[s].name)
				b.ReportMetric(float64(median(cpu[0]))/float64(median(cpu[s])), "cpu-x"+sides[s].name)
			}
		})
	}
}

// gitCommitOne returns a command maker that changes one file three folders
// deep in repo, as deep as the ledger segment a remember appends to
// (ledger/2026/11/29.jsonl), and commits it alone with core.fsync set to
// fsync: both sides then write as many objects (a blob, four trees, the
// commit), and on a machine where creating a file costs more than writing
// one (docs/PERFORMANCE.md, "Writes") a shallower path would spare git one.
func gitCommitOne(b *testing.B, repo, fsync string) func(i int) *exec.Cmd {
	rel := filepath.Join("notes", "bench", "2026", "edit.md")
	return func(i int) *exec.Cmd {
		f := filepath.Join(repo, rel)
		if err := os.MkdirAll(filepath.Dir(f), 0o700); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(f, []byte(fmt.Sprintf("edit %d %s\n", i, fsync)), 0o600); err != nil {
			b.Fatal(err)
		}
		if i == 0 {
			run(b, repo, "git", "add", rel)
		}
		return exec.Command("git", "-C", repo, "-c", "core.fsync="+fsync, "-c", "gc.auto=0",
			"commit", "-q", "-m", fmt.Sprintf("edit %d", i), "--", rel)
	}
}

// processCPU is the CPU time, user and system, this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// cpuOf is a finished process's CPU time, user and system, its waited-for
// children included.
func cpuOf(ps *os.ProcessState) time.Duration { return ps.UserTime() + ps.SystemTime() }

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}
