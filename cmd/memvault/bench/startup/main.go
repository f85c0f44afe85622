// Command startup measures start-up and the hooks' own work in CPU time
// (docs/PERFORMANCE.md, rows 25 and 26).
//
//	go run ./cmd/memvault/bench/startup ROUNDS BINARY [BINARY…]
//
// (e.g. the build before a change, then this one). For each binary, in
// turn and alternating the order every round: a do-nothing Go binary
// (built here), `memvault version` with and without GODEBUG=inittrace=1,
// and the four hooks of one Claude Code call (session-start,
// prompt-submit, stop, session-end) on a vault of fifty decisions, each
// its own process. CPU is the child's user + system time (rusage, from
// os.ProcessState.SysUsage), which load changes far less than wall time.
// Prints medians with the spread (the 25th and 75th percentiles): CPU of
// each, the ratios, each hook's own work (its CPU less version's), and the
// package inits over THR ms (default 0.1). It needs only Go: the
// do-nothing binary (testdata/noop) is built with the go command on PATH.
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

type event struct {
	name    string
	payload map[string]any
}

var events = []event{
	{"session-start", map[string]any{"hook_event_name": "SessionStart", "source": "startup"}},
	{"prompt-submit", map[string]any{"hook_event_name": "UserPromptSubmit", "prompt": "which database does the billing ledger use?"}},
	{"stop", map[string]any{"hook_event_name": "Stop", "stop_hook_active": false, "last_assistant_message": "It uses postgres."}},
	{"session-end", map[string]any{"hook_event_name": "SessionEnd", "reason": "other"}},
}

func main() {
	if len(os.Args) < 3 {
		fail("usage: startup ROUNDS BINARY [BINARY…]")
	}
	rounds, err := strconv.Atoi(os.Args[1])
	if err != nil || rounds < 1 {
		fail("startup: ROUNDS must be a positive number, not %q", os.Args[1])
	}
	var bins []string
	for _, b := range os.Args[2:] {
		abs, err := filepath.Abs(b)
		if err != nil {
			fail("startup: %v", err)
		}
		bins = append(bins, abs)
	}
	tmp, err := os.MkdirTemp("", "mvstartup")
	if err != nil {
		fail("startup: %v", err)
	}
	defer os.RemoveAll(tmp)
	noop := buildNoop(tmp)
	m := &measure{cpu: map[string][]float64{}, init: map[string]map[string][]float64{}}
	envs := map[string][]string{}
	projs := map[string]string{}
	for i, b := range bins {
		envs[b], projs[b] = makeVault(tmp, i, b)
	}
	for r := range rounds {
		order := slices.Clone(bins)
		if r%2 == 1 {
			slices.Reverse(order)
		}
		for _, b := range order {
			m.round(b, noop, envs[b], projs[b], r)
		}
	}
	load, _ := os.ReadFile("/proc/loadavg")
	fmt.Printf("load average %s, %d rounds\n", strings.Join(strings.Fields(string(load))[:3], " "), rounds)
	thr := 0.1
	if s := os.Getenv("THR"); s != "" {
		if thr, err = strconv.ParseFloat(s, 64); err != nil {
			fail("startup: THR: %v", err)
		}
	}
	for _, b := range bins {
		m.report(b, thr)
	}
	time.Sleep(2 * time.Second) // the detached workers finish their jobs
}

type measure struct {
	cpu  map[string][]float64            // binary + "\x00" + what → CPU ms per run
	init map[string]map[string][]float64 // binary → package → init ms per run
}

func (m *measure) add(b, what string, ms float64) {
	m.cpu[b+"\x00"+what] = append(m.cpu[b+"\x00"+what], ms)
}

func (m *measure) round(b, noop string, env []string, proj string, r int) {
	ms, _ := run([]string{noop}, nil, nil, "")
	m.add(b, "noop", ms)
	ms, _ = run([]string{b, "version"}, nil, nil, "")
	m.add(b, "version", ms)
	_, stderr := run([]string{b, "version"}, append(os.Environ(), "GODEBUG=inittrace=1"), nil, "")
	if m.init[b] == nil {
		m.init[b] = map[string][]float64{}
	}
	for _, line := range strings.Split(stderr, "\n") {
		f := strings.Fields(line)
		if len(f) > 5 && f[0] == "init" {
			if v, err := strconv.ParseFloat(f[4], 64); err == nil {
				m.init[b][f[1]] = append(m.init[b][f[1]], v)
			}
		}
	}
	for _, e := range events {
		p := map[string]any{"session_id": fmt.Sprintf("s%d", r), "cwd": proj, "transcript_path": ""}
		for k, v := range e.payload {
			p[k] = v
		}
		data, _ := json.Marshal(p)
		ms, _ := run([]string{b, "hook", "claude-code", e.name}, env, data, proj)
		m.add(b, e.name, ms)
	}
}

func (m *measure) report(b string, thr float64) {
	med := func(what string) float64 { return quantile(m.cpu[b+"\x00"+what], 0.5) }
	spread := func(what string) string {
		xs := m.cpu[b+"\x00"+what]
		return fmt.Sprintf("%.2f–%.2f", quantile(xs, 0.25), quantile(xs, 0.75))
	}
	noop, ver := med("noop"), med("version")
	var total, own float64
	for k, v := range m.init[b] {
		total += quantile(v, 0.5)
		if strings.HasPrefix(k, "github.com/memvault/") {
			own += quantile(v, 0.5)
		}
	}
	fmt.Printf("%s\n  do-nothing %.2f ms (%s); version %.2f ms (%s, %.1fx); init %.2f ms in %d packages, memvault's own %.2f ms\n",
		b, noop, spread("noop"), ver, spread("version"), ver/noop, total, len(m.init[b]), own)
	hooks := 0.0
	for _, e := range events {
		h := med(e.name)
		hooks += h
		fmt.Printf("  %-14s %6.2f ms (%s), own work %5.2f ms\n", e.name, h, spread(e.name), h-ver)
	}
	fmt.Printf("  four hooks %.2f ms = %.2fx version = %.1fx do-nothing; own work %.2f ms\n",
		hooks, hooks/ver, hooks/noop, hooks-4*ver)
	type pkg struct {
		ms   float64
		name string
	}
	var pkgs []pkg
	for k, v := range m.init[b] {
		if q := quantile(v, 0.5); q > thr {
			pkgs = append(pkgs, pkg{q, k})
		}
	}
	slices.SortFunc(pkgs, func(a, b pkg) int { return -cmpFloat(a.ms, b.ms) })
	for _, p := range pkgs {
		fmt.Printf("    init %.3f ms  %s\n", p.ms, p.name)
	}
}

// run runs args and returns the child's CPU (user + system) in ms and its
// standard error; a failure ends the measurement.
func run(args, env []string, stdin []byte, dir string) (float64, string) {
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env, cmd.Dir = env, dir
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		fail("%v: %v: %s", args, err, stderr.String())
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		fail("startup: no rusage on this system")
	}
	cpu := time.Duration(syscall.TimevalToNsec(ru.Utime) + syscall.TimevalToNsec(ru.Stime))
	return float64(cpu.Microseconds()) / 1000, stderr.String()
}

// buildNoop builds the do-nothing Go binary (testdata/noop, beside this
// file) into tmp.
func buildNoop(tmp string) string {
	_, self, _, ok := runtime.Caller(0)
	if !ok {
		fail("startup: cannot find testdata/noop")
	}
	bin := filepath.Join(tmp, "noop-bin")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Dir = filepath.Join(filepath.Dir(self), "testdata", "noop")
	cmd.Env = append(os.Environ(), "GOWORK=off", "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		fail("startup: building the do-nothing binary: %v: %s", err, out)
	}
	return bin
}

// makeVault makes the vault of fifty decisions binary i measures on, and
// returns the environment that points the binary at it and its project.
func makeVault(tmp string, i int, b string) ([]string, string) {
	proj := filepath.Join(tmp, fmt.Sprintf("v%d", i), "proj")
	must(os.MkdirAll(proj, 0o755))
	env := append(os.Environ(), "MEMVAULT_DIR="+filepath.Join(proj, ".memory"))
	run([]string{b, "init"}, env, nil, proj)
	for n := range 50 {
		run([]string{b, "remember", "--kind", "decision", "--thread", "project:proj",
			fmt.Sprintf("decision %d: use postgres shard %d for the billing ledger service", n, n)}, env, nil, proj)
	}
	return env, proj
}

// quantile is the q-quantile of xs, interpolated between neighbours.
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	pos := q * float64(len(s)-1)
	lo := int(pos)
	if lo+1 >= len(s) {
		return s[lo]
	}
	return s[lo] + (pos-float64(lo))*(s[lo+1]-s[lo])
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func must(err error) {
	if err != nil {
		fail("startup: %v", err)
	}
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
	os.Exit(1)
}
