package bench

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memvault/memvault/vault/units"
)

// The targets of issue 22, each read from the suite's own measurements
// beside the anchor it is judged against, so that one run says which hold.

// suiteNoop is a Go binary whose main does nothing, built once by TestSuite:
// the floor under every memvault process (runtime start and exit, no
// package init of ours or of our dependencies).
var suiteNoop string

// buildNoop writes and builds the do-nothing binary with the toolchain the
// suite's memvault is built with.
func buildNoop(t *testing.T) string {
	dir := t.TempDir()
	src := "package main\n\nfunc main() {}\n"
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module noop\n\ngo 1.21\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "noop")
	cmd := exec.Command("go", "build", "-o", out, ".")
	cmd.Dir = dir
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build (do-nothing binary): %v\n%s", err, msg)
	}
	return out
}

// suiteTarget is one figure with a target.
type suiteTarget struct {
	what, target string
	sizes        []string // where the target applies; the figure is shown for every size
	figure       func(s *suiteSize) (value string, met bool)
}

// p50Within is a time target; limits are by size, and "" is every other
// size.
func p50Within(cmd string, limits map[string]time.Duration) func(s *suiteSize) (string, bool) {
	return func(s *suiteSize) (string, bool) {
		limit, ok := limits[s.d.Spec]
		if !ok {
			limit = limits[""]
		}
		p := s.times[cmd].p50
		return fmt.Sprintf("%.1f ms", ms(p)), p > 0 && p <= limit
	}
}

// p50NoSlowerThan compares a memvault command with its anchor's p50 in the
// same run.
func p50NoSlowerThan(cmd, anchor string) func(s *suiteSize) (string, bool) {
	return func(s *suiteSize) (string, bool) {
		a, b := s.times[cmd].p50, s.times[anchor].p50
		return fmt.Sprintf("%.1f ms vs %.1f ms (%.2f×)", ms(a), ms(b), float64(a)/float64(max(1, b))), a > 0 && a <= b
	}
}

// ratioWithin is a size target: part ÷ whole at most limit.
func ratioWithin(part, whole func(s *suiteSize) int64, limit float64) func(s *suiteSize) (string, bool) {
	return func(s *suiteSize) (string, bool) {
		p, w := part(s), whole(s)
		r := float64(p) / float64(max(1, w))
		return fmt.Sprintf("%s, %.2f×", units.Bytes(p), r), w > 0 && r <= limit
	}
}

func suiteTargets() []suiteTarget {
	raw := func(s *suiteSize) int64 { return s.d.TextBytes }
	content := func(s *suiteSize) int64 { return s.content }
	return []suiteTarget{
		{what: "hook prompt-submit, p50", target: "≤ 10 ms (small, week), ≤ 15 ms (large)", sizes: []string{"small", "week", "large"},
			figure: p50Within("hook prompt-submit", map[string]time.Duration{"": 10 * time.Millisecond, "large": 15 * time.Millisecond})},
		{what: "hook session-start, p50", target: "≤ 20 ms", sizes: []string{"large"},
			figure: p50Within("hook session-start", map[string]time.Duration{"": 20 * time.Millisecond})},
		{what: "remember, p50, against git commit of one path", target: "no slower", sizes: []string{"small", "large"},
			figure: p50NoSlowerThan("remember", "git commit, one path")},
		{what: "verify, p50", target: "≤ 500 ms at 100k events", sizes: []string{"large"},
			figure: p50Within("verify", map[string]time.Duration{"": 500 * time.Millisecond})},
		{what: ".index ÷ raw text", target: "≤ 0.8×", sizes: []string{"large"},
			figure: ratioWithin(func(s *suiteSize) int64 { return s.index }, raw, 0.8)},
		{what: "whole vault ÷ raw text", target: "≤ 2.5×", sizes: []string{"large"},
			figure: ratioWithin(func(s *suiteSize) int64 { return s.disk }, raw, 2.5)},
		{what: "whole vault as generated ÷ content", target: "≤ 3×", sizes: []string{"week"},
			figure: ratioWithin(func(s *suiteSize) int64 { return s.disk }, content, 3)},
	}
}

// suiteTargetTable prints, for each target, the figure at every measured
// size, marked where the target applies: "met" or "MISSED".
func suiteTargetTable(order []string, sizes map[string]*suiteSize) string {
	var sb strings.Builder
	sb.WriteString("\n### Targets of issue 22\n\n| figure | target |")
	for _, n := range order {
		fmt.Fprintf(&sb, " %s |", n)
	}
	sb.WriteString("\n| --- | --- |")
	for range order {
		sb.WriteString(" --- |")
	}
	sb.WriteString("\n")
	for _, tg := range suiteTargets() {
		fmt.Fprintf(&sb, "| %s | %s |", tg.what, tg.target)
		for _, n := range order {
			v, met := tg.figure(sizes[n])
			applies := false
			for _, a := range tg.sizes {
				applies = applies || a == n
			}
			switch {
			case !applies:
				fmt.Fprintf(&sb, " %s |", v)
			case met:
				fmt.Fprintf(&sb, " **%s, met** |", v)
			default:
				fmt.Fprintf(&sb, " %s, MISSED |", v)
			}
		}
		sb.WriteString("\n")
	}
	return sb.String()
}
