package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSuiteAB times the suite's budgeted commands for two builds of
// memvault in one run, on two copies of one cached vault, so a change can
// be judged against the code before it under the same load:
//
//	MEMVAULT_AB_BASE=/path/to/old/memvault MEMVAULT_SUITE=large \
//	MEMVAULT_BENCH_CACHE=/tmp/mvcache \
//	    go test -count=1 -run '^TestSuiteAB$' -timeout 2h -v ./cmd/memvault/bench/
//
// The builds take turns command by command, and which goes first swaps
// every round, so a drift of the machine's speed falls on both alike. Each
// build warms up on its copy first (it may rebuild caches of a format the
// other build does not write). It prints the p50 of each build and their
// ratio; MEMVAULT_SUITE_ROUNDS (default 20) sets the runs of each.
func TestSuiteAB(t *testing.T) {
	base := os.Getenv("MEMVAULT_AB_BASE")
	if base == "" || os.Getenv("MEMVAULT_SUITE") == "" {
		t.Skip("set MEMVAULT_AB_BASE to the other build and MEMVAULT_SUITE to one size")
	}
	spec, ok := suiteSpecs[os.Getenv("MEMVAULT_SUITE")]
	if !ok {
		t.Fatalf("MEMVAULT_SUITE=%s: want one of small, week, large", os.Getenv("MEMVAULT_SUITE"))
	}
	rounds := 20
	if n, err := fmt.Sscan(os.Getenv("MEMVAULT_SUITE_ROUNDS"), &rounds); n == 0 || err != nil {
		rounds = 20
	}
	builds := []struct {
		name string
		bin  string
		cmds []suiteCmd
	}{{name: "base", bin: base}, {name: "this", bin: memvaultBinary(t)}}
	src, d := suiteEnsure(t, spec)
	for i := range builds {
		b := &builds[i]
		vd := d
		vd.root, vd.corpus = suiteCopy(t, src)
		for _, c := range suiteCommands(b.bin, "", vd) {
			if !c.anchor {
				b.cmds = append(b.cmds, c)
			}
		}
		for _, c := range b.cmds { // warm-up: caches of this build's format
			abRun(t, c, 0)
		}
	}
	n := len(builds[0].cmds)
	times := make([][2][]time.Duration, n)
	for r := 1; r <= rounds; r++ {
		for ci := 0; ci < n; ci++ {
			for k := 0; k < 2; k++ {
				bi := (k + r) % 2
				times[ci][bi] = append(times[ci][bi], abRun(t, builds[bi].cmds[ci], r))
			}
		}
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "\n### A/B on the %s vault, p50 of %d runs each, turns interleaved\n\n", spec.Name, rounds)
	fmt.Fprintf(&sb, "base: %s\nthis: %s\n%s\n\n", base, builds[1].bin, machine())
	sb.WriteString("| command | budget | base | this | this / base |\n| --- | --- | --- | --- | --- |\n")
	for ci, c := range builds[0].cmds {
		a, b := pct(times[ci][0], 50), pct(times[ci][1], 50)
		fmt.Fprintf(&sb, "| %s | %s | %.1f ms | %.1f ms | %.2f |\n", c.name, c.budget, ms(a), ms(b), float64(b)/float64(a))
	}
	fmt.Fprint(os.Stderr, sb.String())
	if out := os.Getenv("MEMVAULT_SUITE_OUT"); out != "" {
		if err := os.WriteFile(out, []byte(sb.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// abRun runs one timed command and fails the test if it fails.
func abRun(t *testing.T, c suiteCmd, i int) time.Duration {
	t.Helper()
	cmd := c.mk(i)
	cmd.Env = benchEnv()
	start := time.Now()
	out, err := cmd.CombinedOutput()
	d := time.Since(start)
	if err != nil && (c.okExit == nil || !c.okExit(err)) {
		t.Fatalf("%s (%s): %v\n%s", c.name, filepath.Base(cmd.Path), err, out)
	}
	return d
}
