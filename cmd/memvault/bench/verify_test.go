package bench

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"testing"
	"time"
)

// verifyVault returns a private copy of a vault with headEvents ledger
// events written through memvault's own transactions (headsVault), kept
// in MEMVAULT_BENCH_CACHE when it is set so that reruns skip the
// generation.
func verifyVault(b *testing.B) string {
	b.Helper()
	cache := os.Getenv("MEMVAULT_BENCH_CACHE")
	if cache == "" {
		return headsVault(b, headEvents)
	}
	src := filepath.Join(cache, fmt.Sprintf("verify-%d-v1", headEvents))
	if _, err := os.Stat(filepath.Join(src, "done")); err != nil {
		fmt.Fprintf(os.Stderr, "verify: generating the vault in %s\n", src)
		os.RemoveAll(src)
		root := headsVault(b, headEvents)
		if err := os.MkdirAll(src, 0o755); err != nil {
			b.Fatal(err)
		}
		if out, err := exec.Command("cp", "-a", root, src).CombinedOutput(); err != nil {
			b.Fatalf("cp: %v\n%s", err, out)
		}
		if err := os.WriteFile(filepath.Join(src, "done"), nil, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	dir := b.TempDir()
	if out, err := exec.Command("cp", "-a", filepath.Join(src, ".memory"), dir).CombinedOutput(); err != nil {
		b.Fatalf("cp: %v\n%s", err, out)
	}
	return filepath.Join(dir, ".memory")
}

// BenchmarkVerify times whole processes of memvault verify on a vault of
// 100k ledger events: the full verification, the incremental one right
// after a clean check, and the incremental one after one new event (a
// writer's append and commit between); the anchor is grep counting the
// ledger's lines (grep -c hash -r ledger/). With MEMVAULT_BENCH_BASELINE
// set to another memvault binary, its full verification is timed too, the
// two builds taking turns process by process. Each reports p50 and p90
// wall time and the peak RSS of the largest run.
//
//	MEMVAULT_BENCH_CACHE=/tmp/mvcache MEMVAULT_BENCH_BASELINE=/tmp/memvault-before \
//	    go test -run '^$' -bench Verify -benchtime 15x ./cmd/memvault/bench/
func BenchmarkVerify(b *testing.B) {
	bin := memvaultBinary(b)
	root := verifyVault(b)
	verify := func(bin string, args ...string) func(int) []string {
		return func(int) []string { return append([]string{bin, "--vault", root, "verify"}, args...) }
	}
	full := map[string]func(int) []string{"this": verify(bin)}
	if base := os.Getenv("MEMVAULT_BENCH_BASELINE"); base != "" {
		full["baseline"] = verify(base)
	}
	b.Run("full", func(b *testing.B) { timeTurns(b, full) })
	run(b, root, bin, "--vault", root, "verify") // a clean check: every segment stamped
	b.Run("incremental", func(b *testing.B) {
		timeTurns(b, map[string]func(int) []string{"this": verify(bin, "--incremental")})
	})
	b.Run("incremental-after-one-event", func(b *testing.B) {
		mk := verify(bin, "--incremental")
		timeTurns(b, map[string]func(int) []string{"this": func(i int) []string {
			run(b, root, bin, "--vault", root, "remember", fmt.Sprintf("one more row %d", i))
			return mk(i)
		}})
	})
	if _, err := exec.LookPath("grep"); err == nil {
		b.Run("grep-anchor", func(b *testing.B) {
			timeTurns(b, map[string]func(int) []string{"grep": func(int) []string {
				return []string{"grep", "-c", "hash", "-r", filepath.Join(root, "ledger")}
			}})
		})
	}
}

// timeTurns runs each build's command b.N times, the builds taking turns,
// each through rsswrap (measured), and reports each one's p50 and p90 wall
// time and the peak RSS of its largest run.
func timeTurns(b *testing.B, builds map[string]func(int) []string) {
	b.Helper()
	names := make([]string, 0, len(builds))
	for n := range builds {
		names = append(names, n)
	}
	sort.Strings(names)
	durs := make(map[string][]time.Duration)
	rss := make(map[string]float64)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, n := range names {
			argv := builds[n](i)
			d, mib := measured(b, nil, argv[0], argv[1:]...)
			durs[n] = append(durs[n], d)
			rss[n] = max(rss[n], mib)
		}
	}
	b.StopTimer()
	for _, n := range names {
		d := durs[n]
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		b.ReportMetric(ms(d[len(d)/2]), n+"-p50-ms")
		b.ReportMetric(ms(d[len(d)*9/10]), n+"-p90-ms")
		b.ReportMetric(rss[n], n+"-rss-MiB")
	}
}
