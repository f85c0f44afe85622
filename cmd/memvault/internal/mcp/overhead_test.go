package mcp_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/memvault/memvault/vault/vaulttest/e2etest"
)

// The overhead test's knobs (docs/PERFORMANCE.md, "What memvault costs a
// Claude Code call").
const (
	// overheadRunsEnv: how many timed calls of each variant (default 5).
	overheadRunsEnv = "MEMVAULT_E2E_OVERHEAD_RUNS"
	// overheadMaxEnv: when set, the test fails when memvault's call is
	// more than this many times the minimal server's. Unset, it reports:
	// a speed target is checked by a benchmark, never by a timed test
	// (the machine is shared, and its load is not the test's to control).
	overheadMaxEnv = "MEMVAULT_E2E_OVERHEAD_MAX"
	// minimalEnv: the minimal MCP server, built outside the network
	// namespace and handed to the inner run.
	minimalEnv = "MEMVAULT_E2E_MCPMINIMAL"
)

// overheadVariant is one way the project is set up for the same call: the
// bytes of .claude/settings.json (memvault's hooks) and of .mcp.json, nil
// for none.
type overheadVariant struct {
	name           string
	settings, mcps []byte
}

// TestE2EMCPOverhead: what memvault costs a real Claude Code call.
// `claude -p "hello"` offline against the fake model, in the same project,
// alternating N times each between: nothing; a minimal MCP server
// (fixtures/mcpminimal: one tool, no resources); memvault's hooks only;
// memvault's hooks and MCP server as `memvault install claude-code` wires
// them. It prints the four medians and the ratio memvault ÷ minimal
// server (issue 35's target: at most 1.3), then runs the last variant once
// more with the server's trace (MEMVAULT_MCP_TRACE) and each memvault
// process timed, and prints where that call's time went. It fails on the
// ratio only when MEMVAULT_E2E_OVERHEAD_MAX is set.
func TestE2EMCPOverhead(t *testing.T) {
	claude := e2etest.HarnessBin(t, "MEMVAULT_E2E_CLAUDE", "claude-code")
	runs, maxRatio := overheadKnobs(t)
	if os.Getenv(minimalEnv) == "" {
		t.Setenv(minimalEnv, buildMinimal(t))
	}
	if e2etest.InNetns(t) {
		return
	}
	e := newE2E(t)
	requireMCPCommand(t, e.Bin)
	e.Setenv("ANTHROPIC_BASE_URL="+e.Model.URL(), "ANTHROPIC_API_KEY=sk-fake",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1")
	e.Install("claude-code")
	settings := e.readProj(".claude/settings.json")
	mcps := e.readProj(".mcp.json")
	minimal := fmt.Appendf(nil, `{"mcpServers": {"minimal": {"type": "stdio", "command": %q, "args": []}}}`, os.Getenv(minimalEnv))
	variants := []overheadVariant{
		{name: "nothing"},
		{name: "minimal MCP server", mcps: minimal},
		{name: "memvault hooks", settings: settings},
		{name: "memvault hooks + MCP", settings: settings, mcps: mcps},
	}
	call := func(v overheadVariant) time.Duration {
		t.Helper()
		e.setVariant(v)
		r := e.MustRun(120*time.Second, claude, "-p", "hello", "--output-format", "json")
		if !strings.Contains(r.Stdout, "Fake answer") {
			t.Fatalf("%s: the call did not end with the model's answer:\n%s\nstderr: %s", v.name, e2etest.ClipHead(r.Stdout), e2etest.ClipHead(r.Stderr))
		}
		return r.Took
	}
	// A call of each first, untimed: Node's and memvault's files come
	// into the page cache, and Claude Code makes its home's files.
	for _, v := range variants {
		call(v)
	}
	took := make([][]time.Duration, len(variants))
	for round := range runs {
		// Each round starts with another variant, so that a burst of
		// load on the shared machine falls on each in turn.
		for i := range variants {
			k := (i + round) % len(variants)
			took[k] = append(took[k], call(variants[k]))
		}
	}
	ratio := reportOverhead(t, variants, took)
	for _, v := range variants {
		e.traceOneCall(claude, v)
	}
	if maxRatio > 0 && ratio > maxRatio {
		t.Errorf("memvault (hooks + MCP) ÷ the minimal MCP server: %.2f, over %s=%.2f", ratio, overheadMaxEnv, maxRatio)
	}
}

// overheadKnobs reads the runs and the ratio the test may fail above (0:
// report only); a value that is not a number fails the test.
func overheadKnobs(t *testing.T) (runs int, maxRatio float64) {
	t.Helper()
	runs = 5
	if s := os.Getenv(overheadRunsEnv); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 100 {
			t.Fatalf("%s=%q: want a whole number from 1 to 100", overheadRunsEnv, s)
		}
		runs = n
	}
	if s := os.Getenv(overheadMaxEnv); s != "" {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || f <= 0 {
			t.Fatalf("%s=%q: want a ratio above 0, such as 1.3", overheadMaxEnv, s)
		}
		maxRatio = f
	}
	return runs, maxRatio
}

// buildMinimal builds fixtures/mcpminimal.
func buildMinimal(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "mcpminimal")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/memvault/memvault/fixtures/mcpminimal").CombinedOutput()
	if err != nil {
		t.Fatalf("go build fixtures/mcpminimal: %v\n%s", err, out)
	}
	return bin
}

func (e *e2e) readProj(rel string) []byte {
	e.T.Helper()
	data, err := os.ReadFile(filepath.Join(e.Proj, rel))
	if err != nil {
		e.T.Fatalf("memvault install claude-code wrote no %s: %v", rel, err)
	}
	return data
}

// setVariant writes the project's .claude/settings.json and .mcp.json as
// v has them, or removes them.
func (e *e2e) setVariant(v overheadVariant) {
	e.T.Helper()
	for rel, data := range map[string][]byte{".claude/settings.json": v.settings, ".mcp.json": v.mcps} {
		path := filepath.Join(e.Proj, rel)
		var err error
		if data == nil {
			err = os.Remove(path)
			if os.IsNotExist(err) {
				err = nil
			}
		} else {
			err = os.WriteFile(path, data, 0o644)
		}
		if err != nil {
			e.T.Fatal(err)
		}
	}
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// reportOverhead logs each variant's median and runs, the ratios, and a
// row for docs/PERFORMANCE.md; it returns memvault (hooks + MCP) ÷ the
// minimal server.
func reportOverhead(t *testing.T, variants []overheadVariant, took [][]time.Duration) float64 {
	t.Helper()
	med := make([]time.Duration, len(variants))
	for i, v := range variants {
		med[i] = median(took[i])
		var each []string
		for _, d := range took[i] {
			each = append(each, fmt.Sprintf("%.2f", d.Seconds()))
		}
		t.Logf("claude -p hello, %-22s median %.2f s (runs: %s)", v.name+":", med[i].Seconds(), strings.Join(each, " "))
	}
	ratio := float64(med[3]) / float64(med[1])
	t.Logf("memvault (hooks + MCP) ÷ minimal MCP server: %.2f (target ≤ 1.3); memvault's MCP alone, (hooks + MCP) − hooks: %+.2f s, the minimal server's, minimal − nothing: %+.2f s",
		ratio, (med[3] - med[2]).Seconds(), (med[1] - med[0]).Seconds())
	load, _ := os.ReadFile("/proc/loadavg")
	t.Logf("for docs/PERFORMANCE.md: | | `claude -p hello`, %d runs each alternating: nothing · minimal MCP server · memvault's hooks · hooks + MCP | | %.2f · %.2f · %.2f · %.2f s; hooks + MCP ÷ minimal %.2f | | %s |",
		len(took[0]), med[0].Seconds(), med[1].Seconds(), med[2].Seconds(), med[3].Seconds(), ratio, strings.Join(strings.Fields(string(load))[:3], " "))
	return ratio
}

// traceOneCall makes one more call of v with every memvault process the
// call starts timed (a wrapper first on the PATH) and the MCP server's
// messages traced (MEMVAULT_MCP_TRACE; the wrapper execs the server, so
// that the harness's signals reach it as they reach an installed one),
// and logs them and the model's requests against the call's start: what
// the call waited for.
func (e *e2e) traceOneCall(claude string, v overheadVariant) {
	e.T.Helper()
	dir := filepath.Join(e.Dir, "timed")
	runs := filepath.Join(e.Dir, "memvault-timed.log")
	trace := filepath.Join(e.Dir, "mcp-trace.log")
	os.Remove(runs)
	os.Remove(trace)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		e.T.Fatal(err)
	}
	script := fmt.Sprintf(`#!/bin/sh
t0=$(date +%%s.%%N)
if [ "$1" = mcp ]; then MEMVAULT_MCP_TRACE=1 exec %[1]q "$@" 2>>%[2]q; fi
%[1]q "$@"
rc=$?
echo "$t0 $(date +%%s.%%N) $rc $*" >> %[3]q
exit $rc
`, e.Bin, trace, runs)
	if err := os.WriteFile(filepath.Join(dir, "memvault"), []byte(script), 0o755); err != nil {
		e.T.Fatal(err)
	}
	saved := slices.Clone(e.Env)
	defer func() { e.Env = saved }()
	e.PrependPath(dir)
	e.setVariant(v)
	start, before := time.Now(), e.Model.Count()
	r := e.MustRun(120*time.Second, claude, "-p", "hello", "--output-format", "json")
	at := func(unix float64) float64 { return unix - float64(start.UnixMicro())/1e6 }
	var lines []string
	for _, req := range e.Model.Requests("/") {
		if req.N > before {
			lines = append(lines, fmt.Sprintf("%6.3f s  model request #%d %s (%d B)", req.At.Sub(start).Seconds(), req.N, req.Path, len(req.Body)))
		}
	}
	if f, err := os.Open(runs); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			var t0, t1 float64
			var rc int
			if n, _ := fmt.Sscanf(sc.Text(), "%f %f %d", &t0, &t1, &rc); n == 3 {
				args := strings.SplitN(sc.Text(), " ", 4)[3]
				lines = append(lines, fmt.Sprintf("%6.3f s  memvault %s: %.0f ms (exit %d)", at(t0), args, (t1-t0)*1000, rc))
			}
		}
		f.Close()
	}
	if f, err := os.Open(trace); err == nil {
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var t0 float64
			if n, _ := fmt.Sscanf(sc.Text(), "%f", &t0); n == 1 {
				rest := strings.SplitN(sc.Text(), " ", 3)
				lines = append(lines, fmt.Sprintf("%6.3f s    mcp %s", at(t0), rest[len(rest)-1]))
			}
		}
		f.Close()
	}
	slices.Sort(lines)
	e.T.Logf("one call of %s, traced (%.2f s; the wrapper's date calls add a few ms a process):\n%s\n%6.3f s  claude exited",
		v.name, r.Took.Seconds(), strings.Join(lines, "\n"), r.Took.Seconds())
}
