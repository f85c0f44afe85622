package bench

// The benchmark suite of issue #8: every budget of DESIGN §11 as whole
// processes, on vaults of three sizes, beside its anchors, in one table.
//
//	cmd/memvault/bench/run.sh                 # small and week
//	MEMVAULT_SUITE_LARGE=1 cmd/memvault/bench/run.sh   # and large (generation takes minutes)
//
// or directly:
//
//	MEMVAULT_SUITE=small,week MEMVAULT_BENCH_CACHE=/tmp/mvcache \
//	    go test -count=1 -run '^TestSuite$' -timeout 4h -v ./cmd/memvault/bench/
//
// TestSuite is skipped unless MEMVAULT_SUITE names the sizes, so `go test
// ./...` never runs it. MEMVAULT_SUITE_ROUNDS (default 20) is how many
// times each command is timed; MEMVAULT_SUITE_PROFILES=DIR writes a CPU
// profile of each memvault command at each size (MEMVAULT_CPUPROFILE);
// MEMVAULT_SUITE_GROWTH=N (default 5000, 0 to skip) sizes the git growth
// series; MEMVAULT_SUITE_OUT=FILE also writes the tables there;
// MEMVAULT_SUITE_AGGRESSIVE=1 runs git gc --aggressive on the large vault
// too (over ten minutes of CPU).

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/gc"
	"github.com/memvault/memvault/vault/gitrepo"
	"github.com/memvault/memvault/vault/memory"
	"github.com/memvault/memvault/vault/units"
)

// suiteCmd is one timed command: a memvault budget or an anchor.
type suiteCmd struct {
	name   string
	budget string // DESIGN §11 goal, "" for none
	anchor bool
	mk     func(i int) *exec.Cmd
	okExit func(error) bool
}

// suiteTiming is what a command measured at one size.
type suiteTiming struct {
	p50, p90 time.Duration
	rssKB    int64
}

// suiteSize is everything measured at one size.
type suiteSize struct {
	d       suiteVault
	commits int
	content int64 // work-tree files, derived folders excluded
	git     gitrepo.Size
	index   int64
	state   int64
	disk    int64 // the whole vault folder
	// parts splits content: ledger/, transcripts/, nodes/, the heads
	// (threads/, MEMORY.md, CONTINUITY.md, .rendered/) and the rest.
	parts map[string]int64
	// stateFiles is .state's files, largest first: "name size".
	stateFiles []string
	gc         *gc.Report // memvault gc, engine auto (git)
	gcRSS      int64
	gcFsck     string
	gogc       *gc.Report // memvault gc --engine go-git, on a fresh copy
	gogcRSS    int64
	gogcFsck   string
	aggr       int64 // .git after git gc --aggressive
	aggrDur    time.Duration
	times      map[string]suiteTiming
}

func TestSuite(t *testing.T) {
	sel := os.Getenv("MEMVAULT_SUITE")
	if sel == "" {
		t.Skip("set MEMVAULT_SUITE=small,week[,large] (or run cmd/memvault/bench/run.sh) to run the benchmark suite")
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("the suite needs git: anchors and hand edits")
	}
	rounds := 20
	if s := os.Getenv("MEMVAULT_SUITE_ROUNDS"); s != "" {
		fmt.Sscan(s, &rounds)
	}
	bin := memvaultBinary(t)
	fts := fts5Binary(t)
	suiteNoop = buildNoop(t)
	suiteWrap = filepath.Join(t.TempDir(), "rsswrap")
	if out, err := exec.Command("go", "build", "-o", suiteWrap, "./rsswrap").CombinedOutput(); err != nil {
		t.Fatalf("go build ./rsswrap: %v\n%s", err, out)
	}
	var loads []string
	loads = append(loads, loadAvg())
	sizes := map[string]*suiteSize{}
	var order []string
	for _, name := range strings.Split(sel, ",") {
		spec, ok := suiteSpecs[strings.TrimSpace(name)]
		if !ok {
			t.Fatalf("MEMVAULT_SUITE: %q: want small, week or large", name)
		}
		order = append(order, spec.Name)
		sizes[spec.Name] = suiteMeasure(t, bin, fts, spec, rounds)
		loads = append(loads, loadAvg())
	}
	var growth string
	n := 5000
	if s := os.Getenv("MEMVAULT_SUITE_GROWTH"); s != "" {
		fmt.Sscan(s, &n)
	}
	if n > 0 {
		growth = suiteGrowth(t, n)
		loads = append(loads, loadAvg())
	}
	out := suiteTables(order, sizes, growth, loads, rounds)
	fmt.Print(out)
	if p := os.Getenv("MEMVAULT_SUITE_OUT"); p != "" {
		if err := os.WriteFile(p, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// suiteCommands are the budgets and their anchors on the vault d.
func suiteCommands(bin, fts string, d suiteVault) []suiteCmd {
	root := d.root
	mv := func(args ...string) *exec.Cmd {
		return exec.Command(bin, append([]string{"--vault", root}, args...)...)
	}
	queries := scaleQueries()
	hook := func(event, extra string, i int) *exec.Cmd {
		cmd := mv("hook", "claude-code", event)
		cmd.Stdin = strings.NewReader(fmt.Sprintf(`{"session_id":"suite-%03d","transcript_path":"","cwd":%q,"hook_event_name":%q%s}`, i, root, event, extra))
		return cmd
	}
	grepExit := func(err error) bool { // grep exits 1 when nothing matched
		e, ok := err.(*exec.ExitError)
		return ok && e.ExitCode() == 1
	}
	return []suiteCmd{
		{name: "hook session-start", budget: "≤ 50 ms", mk: func(i int) *exec.Cmd {
			return hook("SessionStart", `,"source":"startup"`, i)
		}},
		{name: "hook prompt-submit", budget: "≤ 30 ms", mk: func(i int) *exec.Cmd {
			return hook("UserPromptSubmit", fmt.Sprintf(`,"prompt":%q`, queries[i%len(queries)]), i)
		}},
		{name: "a do-nothing Go binary", anchor: true, mk: func(int) *exec.Cmd { return exec.Command(suiteNoop) }},
		{name: "git status --porcelain", anchor: true, mk: func(int) *exec.Cmd { return exec.Command("git", "-C", root, "status", "--porcelain") }},
		{name: "remember", budget: "≤ 20 ms", mk: func(i int) *exec.Cmd {
			return mv("remember", "--thread", d.Thread, fmt.Sprintf("suite fact %d: the build cache moved to the shared disk", i))
		}},
		{name: "git commit, one path", anchor: true, mk: func(i int) *exec.Cmd {
			os.WriteFile(filepath.Join(root, "anchor.md"), []byte(fmt.Sprintf("edit %d\n", i)), 0o600)
			exec.Command("git", "-C", root, "add", "anchor.md").Run() // the first time only it matters
			// With fsyncs as memvault makes them: git by default makes none;
			// memvault fsyncs the ledger line and the branch, git here the
			// branch and its index.
			return exec.Command("git", "-C", root, "-c", "core.fsync=reference,index", "-c", "core.fsyncMethod=fsync",
				"commit", "-q", "-m", fmt.Sprintf("anchor %d", i), "--", "anchor.md")
		}},
		{name: "recall --all-threads", budget: "≤ 50 ms", mk: func(i int) *exec.Cmd {
			return mv("recall", "--all-threads", "--limit", "10", "--json", queries[i%len(queries)])
		}},
		{name: "grep -rli (words) transcripts/", anchor: true, okExit: grepExit, mk: func(i int) *exec.Cmd {
			args := []string{"-rli"}
			for _, w := range strings.Fields(queries[i%len(queries)]) {
				if !scaleStop[w] {
					args = append(args, "-e", w)
				}
			}
			cmd := exec.Command("grep", append(args, "transcripts/")...)
			cmd.Dir = root
			return cmd
		}},
		{name: "SQLite FTS5 query", anchor: true, mk: func(i int) *exec.Cmd {
			return exec.Command(fts, filepath.Join(filepath.Dir(root), "fts5.db"), queries[i%len(queries)])
		}},
		{name: "render --dry-run --head --thread", budget: "≤ 50 ms", mk: func(int) *exec.Cmd {
			return mv("render", "--dry-run", "--head", "--thread", d.Thread)
		}},
		{name: "git show HEAD:MEMORY.md", anchor: true, mk: func(int) *exec.Cmd { return exec.Command("git", "-C", root, "show", "HEAD:MEMORY.md") }},
		{name: "expand NODE", budget: "≤ 30 ms", mk: func(int) *exec.Cmd { return mv("expand", d.Node, "--json") }},
		{name: "grep -rl NODE nodes/", anchor: true, mk: func(int) *exec.Cmd {
			return exec.Command("grep", "-rl", "--include=*.md", d.Node, filepath.Join(root, "nodes"))
		}},
		{name: "continuity status", budget: "≤ 20 ms", mk: func(int) *exec.Cmd { return mv("continuity", "status") }},
		{name: "verify", mk: func(int) *exec.Cmd { return mv("verify", "--json") }},
		{name: "grep -c hash -r ledger/", anchor: true, mk: func(int) *exec.Cmd {
			return exec.Command("grep", "-c", "-r", `"hash"`, filepath.Join(root, "ledger"))
		}},
	}
}

var suiteWrap string // the rsswrap binary, built once by TestSuite

// suiteRun runs cmd once through rsswrap and returns its wall time and its
// peak resident memory in KiB (ru_maxrss of the command's own process).
func suiteRun(t *testing.T, c suiteCmd, cmd *exec.Cmd) (time.Duration, int64) {
	w := exec.Command(suiteWrap, append([]string{cmd.Path}, cmd.Args[1:]...)...)
	w.Dir, w.Stdin = cmd.Dir, cmd.Stdin
	w.Env = append(benchEnv(), cmd.Env...)
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	w.ExtraFiles = []*os.File{pw}
	var out bytes.Buffer
	w.Stdout, w.Stderr = &out, &out
	if cmd.Stdout != nil {
		w.Stdout = io.MultiWriter(cmd.Stdout, &out)
	}
	err = w.Start()
	pw.Close()
	if err != nil {
		t.Fatal(err)
	}
	report, _ := io.ReadAll(pr)
	pr.Close()
	err = w.Wait()
	var ns, rss int64
	var code int
	if _, serr := fmt.Sscan(string(report), &ns, &rss, &code); serr != nil {
		t.Fatalf("%s: rsswrap reported %q: %v\n%s", c.name, report, err, out.Bytes())
	}
	if err != nil && (c.okExit == nil || !c.okExit(err)) {
		t.Fatalf("%s: %v: %v\n%s", c.name, cmd.Args, err, out.Bytes())
	}
	return time.Duration(ns), rss
}

// suiteMeasure times every command on a private copy of the vault of spec,
// then measures its size and what gc makes of it.
func suiteMeasure(t *testing.T, bin, fts string, spec suiteSpec, rounds int) *suiteSize {
	src, d := suiteEnsure(t, spec)
	d.root, d.corpus = suiteCopy(t, src)
	s := &suiteSize{d: d, times: map[string]suiteTiming{}}
	s.commits = gitCount(t, d.root)
	suiteSizes(t, s)
	if out, err := exec.Command(fts, "build", filepath.Join(filepath.Dir(d.root), "fts5.db"), d.corpus).CombinedOutput(); err != nil {
		t.Fatalf("fts5q build: %v\n%s", err, out)
	}
	cmds := suiteCommands(bin, fts, d)
	for i, c := range cmds { // warm: page cache and derived state, as a vault in use has them
		suiteRun(t, c, c.mk(1000+i))
	}
	durs := make([][]time.Duration, len(cmds))
	rss := make([]int64, len(cmds))
	for r := 0; r < rounds; r++ { // round-robin, so that load spikes spread over all commands
		for i, c := range cmds {
			dur, kb := suiteRun(t, c, c.mk(r))
			durs[i] = append(durs[i], dur)
			rss[i] = max(rss[i], kb)
		}
	}
	for i, c := range cmds {
		sort.Slice(durs[i], func(a, b int) bool { return durs[i][a] < durs[i][b] })
		s.times[c.name] = suiteTiming{p50: pct(durs[i], 50), p90: pct(durs[i], 90), rssKB: rss[i]}
	}
	if log, err := os.ReadFile(filepath.Join(d.root, ".logs", "hooks.log")); err == nil && len(bytes.TrimSpace(log)) > 0 {
		t.Logf("%s: hooks.log (hooks fail open, so these runs injected nothing):\n%s", spec.Name, lastLines(string(log), 5))
	}
	if dir := os.Getenv("MEMVAULT_SUITE_PROFILES"); dir != "" {
		os.MkdirAll(dir, 0o755)
		for i, c := range cmds {
			if c.anchor {
				continue
			}
			name := strings.NewReplacer(" ", "-", "/", "", "(", "", ")", "", "--", "").Replace(c.name)
			for k := 0; k < 5; k++ { // merge them: go tool pprof -top BIN DIR/SIZE-NAME-*.pprof
				cmd := c.mk(2000 + 10*i + k)
				cmd.Env = []string{fmt.Sprintf("MEMVAULT_CPUPROFILE=%s-%s-%d.pprof", filepath.Join(dir, spec.Name), name, k)}
				suiteRun(t, c, cmd)
			}
		}
	}
	// gc on this copy: memvault's (git where installed), then git's most
	// thorough, for comparison; and memvault's in-process engine on a fresh
	// copy, since git gc reuses the deltas of an existing pack.
	s.gc, s.gcRSS, s.gcFsck = suiteGC(t, bin, d.root)
	fresh, _ := suiteCopy(t, src)
	s.gogc, s.gogcRSS, s.gogcFsck = suiteGC(t, bin, fresh, "--engine", "go-git")
	os.RemoveAll(filepath.Dir(fresh))
	// git gc --aggressive (window 250, every delta recomputed) takes over
	// ten minutes of CPU on the large vault: only on request there.
	if spec.Name != "large" || os.Getenv("MEMVAULT_SUITE_AGGRESSIVE") == "1" {
		start := time.Now()
		if out, err := exec.Command("git", "-C", d.root, "-c", "gc.autoDetach=false", "gc", "--aggressive", "--quiet", "--prune=now").CombinedOutput(); err != nil {
			t.Fatalf("git gc --aggressive: %v\n%s", err, out)
		}
		s.aggrDur = time.Since(start)
		g, err := gitrepo.Measure(filepath.Join(d.root, ".git"))
		if err != nil {
			t.Fatal(err)
		}
		s.aggr = g.GitBytes
	}
	// The table comes at the end; this keeps a long run's figures if a
	// later size fails.
	fmt.Fprint(os.Stderr, suiteTables([]string{spec.Name}, map[string]*suiteSize{spec.Name: s}, "", nil, rounds))
	os.RemoveAll(filepath.Dir(d.root)) // large copies are gigabytes
	return s
}

// suiteGC runs memvault gc on root and checks the repository after it.
func suiteGC(t *testing.T, bin, root string, args ...string) (*gc.Report, int64, string) {
	var out bytes.Buffer
	cmd := exec.Command(bin, append([]string{"--vault", root, "gc", "--json"}, args...)...)
	cmd.Stdout = &out
	_, rss := suiteRun(t, suiteCmd{name: "gc"}, cmd)
	rep := &gc.Report{}
	if err := json.Unmarshal(out.Bytes(), rep); err != nil {
		t.Fatalf("memvault gc --json: %v\n%s", err, out.Bytes())
	}
	fsck := "fsck clean"
	if out, err := exec.Command("git", "-C", root, "fsck", "--no-progress").CombinedOutput(); err != nil {
		fsck = "FSCK FAILED: " + oneLineOf(string(out))
	}
	return rep, rss, fsck
}

// suiteSizes measures the vault as generated, before any command ran.
func suiteSizes(t *testing.T, s *suiteSize) {
	root := s.d.root
	var err error
	if s.git, err = gitrepo.Measure(filepath.Join(root, ".git")); err != nil {
		t.Fatal(err)
	}
	s.index = dirBytes(t, filepath.Join(root, ".index"))
	s.state = dirBytes(t, filepath.Join(root, ".state"))
	s.disk = dirBytes(t, root)
	s.content = s.disk - s.git.GitBytes - s.index - s.state
	for _, d := range []string{".locks", ".logs"} {
		if _, err := os.Stat(filepath.Join(root, d)); err == nil {
			s.content -= dirBytes(t, filepath.Join(root, d))
		}
	}
	s.parts = map[string]int64{}
	rest := s.content
	for part, names := range suiteParts {
		for _, name := range names {
			p := filepath.Join(root, name)
			info, err := os.Stat(p)
			switch {
			case err != nil:
				continue
			case info.IsDir():
				s.parts[part] += dirBytes(t, p)
			default:
				s.parts[part] += info.Size()
			}
		}
		rest -= s.parts[part]
	}
	s.parts["other"] = rest
	if es, err := os.ReadDir(filepath.Join(root, ".state")); err == nil {
		sort.Slice(es, func(i, j int) bool { return entryBytes(es[i]) > entryBytes(es[j]) })
		for _, e := range es {
			s.stateFiles = append(s.stateFiles, e.Name()+" "+units.Bytes(entryBytes(e)))
		}
	}
}

// entryBytes is a folder entry's size, 0 for a folder.
func entryBytes(e os.DirEntry) int64 {
	if info, err := e.Info(); err == nil && info.Mode().IsRegular() {
		return info.Size()
	}
	return 0
}

// suiteParts names the folders and files of each part of a vault's content.
var suiteParts = map[string][]string{
	"ledger":      {"ledger"},
	"transcripts": {"transcripts"},
	"nodes":       {"nodes"},
	"heads":       {"threads", "MEMORY.md", "CONTINUITY.md", ".rendered"},
}

func gitCount(t *testing.T, root string) int {
	out, err := exec.Command("git", "-C", root, "rev-list", "--count", "HEAD").Output()
	if err != nil {
		t.Fatalf("git rev-list: %v", err)
	}
	var n int
	fmt.Sscan(string(out), &n)
	return n
}

// suiteGrowth appends n events one transaction (one commit) each, as n
// `memvault remember` runs would, and measures .git at checkpoints, before
// and after a gc.
func suiteGrowth(t *testing.T, n int) string {
	root := filepath.Join(t.TempDir(), ".memory")
	v, _, err := vault.Init(root)
	if err != nil {
		t.Fatal(err)
	}
	g := newScaleGen(n, 31)
	checkpoints := map[int]bool{}
	for _, c := range []int{1000, 2000, 5000, 10000, 20000, 50000, 100000} {
		if c <= n {
			checkpoints[c] = true
		}
	}
	checkpoints[n] = true
	var sb strings.Builder
	sb.WriteString("| events (one commit each) | content | .git before gc | per event | after memvault gc (git) | per event | ÷ content | gc time | after gc --engine go-git | per event | ÷ content | gc time |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	start := time.Now()
	for i := 1; i <= n; i++ {
		_, err := v.Update(vault.TxOptions{Command: "bench", LockTimeout: benchLockWait}, func(tx *vault.Tx) error {
			_, err := memory.Remember(tx, memory.Input{Kind: suiteKinds[i%len(suiteKinds)], Thread: suiteThread(i % 40), Text: g.message(true, "")})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if !checkpoints[i] {
			continue
		}
		before, err := gitrepo.Measure(filepath.Join(root, ".git"))
		if err != nil {
			t.Fatal(err)
		}
		// go-git on a copy first: git gc would reuse the deltas of its pack.
		dir := t.TempDir()
		if out, err := exec.Command("cp", "-a", root, dir).CombinedOutput(); err != nil {
			t.Fatalf("cp: %v\n%s", err, out)
		}
		cv, err := vault.Open(filepath.Join(dir, ".memory"))
		if err != nil {
			t.Fatal(err)
		}
		grep, err := gc.Run(cv, gc.Options{Engine: gc.EngineGoGit})
		if err != nil {
			t.Fatal(err)
		}
		os.RemoveAll(dir)
		rep, err := gc.Run(v, gc.Options{Engine: gc.EngineGit})
		if err != nil {
			t.Fatal(err)
		}
		per := func(n int64) string { return units.Bytes(n / int64(i)) }
		fmt.Fprintf(&sb, "| %d | %s | %s | %s | %s | %s | %.2f× | %s | %s | %s | %.2f× | %s |\n", i, units.Bytes(rep.ContentBytes), units.Bytes(before.GitBytes),
			per(before.GitBytes), units.Bytes(rep.After.GitBytes), per(rep.After.GitBytes),
			float64(rep.After.GitBytes)/float64(rep.ContentBytes), rep.Duration.Round(time.Millisecond),
			units.Bytes(grep.After.GitBytes), per(grep.After.GitBytes),
			float64(grep.After.GitBytes)/float64(grep.ContentBytes), grep.Duration.Round(time.Millisecond))
		fmt.Fprintf(os.Stderr, "growth: %d events, %s\n", i, time.Since(start).Round(time.Second))
	}
	if out, err := exec.Command("git", "-C", root, "fsck", "--no-progress").CombinedOutput(); err != nil {
		t.Fatalf("git fsck after the growth series: %v\n%s", err, out)
	}
	return sb.String()
}

// suiteTables prints the suite's tables as markdown.
func suiteTables(order []string, sizes map[string]*suiteSize, growth string, loads []string, rounds int) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "\n### Whole-process times, p50 / p90 (peak RSS), %d runs each\n\n", rounds)
	sb.WriteString("| command | budget |")
	for _, n := range order {
		fmt.Fprintf(&sb, " %s |", n)
	}
	hasGrowth := sizes["small"] != nil && sizes["large"] != nil
	if hasGrowth {
		sb.WriteString(" large ÷ small (p50) |")
	}
	sb.WriteString("\n| --- | --- |")
	for range order {
		sb.WriteString(" --- |")
	}
	if hasGrowth {
		sb.WriteString(" --- |")
	}
	sb.WriteString("\n")
	var names []suiteCmd
	for _, n := range order {
		names = suiteCommands("", "", sizes[n].d)
		break
	}
	for _, c := range names {
		label := "**memvault " + c.name + "**"
		if c.anchor {
			label = "anchor: " + c.name
		}
		fmt.Fprintf(&sb, "| %s | %s |", label, c.budget)
		for _, n := range order {
			tm := sizes[n].times[c.name]
			fmt.Fprintf(&sb, " %.1f / %.1f ms (%d MB) |", ms(tm.p50), ms(tm.p90), tm.rssKB/1024)
		}
		if hasGrowth {
			fmt.Fprintf(&sb, " %.1f× |", float64(sizes["large"].times[c.name].p50)/float64(max(1, sizes["small"].times[c.name].p50)))
		}
		sb.WriteString("\n")
	}

	sb.WriteString("\n### The vaults, and their size on disk\n\n| | ")
	sb.WriteString(strings.Join(order, " | "))
	sb.WriteString(" |\n| --- |")
	for range order {
		sb.WriteString(" --- |")
	}
	sb.WriteString("\n")
	row := func(what string, f func(s *suiteSize) string) {
		fmt.Fprintf(&sb, "| %s |", what)
		for _, n := range order {
			fmt.Fprintf(&sb, " %s |", f(sizes[n]))
		}
		sb.WriteString("\n")
	}
	x := func(a, b int64) string { return fmt.Sprintf("%.2f×", float64(a)/float64(max(1, b))) }
	row("events / sessions / messages", func(s *suiteSize) string {
		return fmt.Sprintf("%d / %d / %d", s.d.Events, s.d.Sessions, s.d.Messages)
	})
	row("nodes / threads / commits / hand edits", func(s *suiteSize) string {
		return fmt.Sprintf("%d / %d / %d / %d", s.d.Nodes, s.d.Threads, s.commits, s.d.HandEdits)
	})
	row("generated in", func(s *suiteSize) string { return fmt.Sprintf("%.0f s", s.d.GenSeconds) })
	row("raw text (messages, events)", func(s *suiteSize) string { return units.Bytes(s.d.TextBytes) })
	row("content: the vault's files", func(s *suiteSize) string { return units.Bytes(s.content) })
	row(".git as generated (÷ content)", func(s *suiteSize) string {
		return fmt.Sprintf("%s (%s; %d loose objects, %d packs)", units.Bytes(s.git.GitBytes), x(s.git.GitBytes, s.content), s.git.LooseObjects, s.git.Packs)
	})
	row(".git after memvault gc, engine "+sizes[order[0]].gc.Engine+" (÷ content)", func(s *suiteSize) string {
		return fmt.Sprintf("%s (%s) in %s, %d MB RSS, %s", units.Bytes(s.gc.After.GitBytes), x(s.gc.After.GitBytes, s.gc.ContentBytes),
			s.gc.Duration.Round(10*time.Millisecond), s.gcRSS/1024, s.gcFsck)
	})
	row(".git after memvault gc --engine go-git (÷ content)", func(s *suiteSize) string {
		return fmt.Sprintf("%s (%s) in %s, %d MB RSS, %s", units.Bytes(s.gogc.After.GitBytes), x(s.gogc.After.GitBytes, s.gogc.ContentBytes),
			s.gogc.Duration.Round(10*time.Millisecond), s.gogcRSS/1024, s.gogcFsck)
	})
	row(".git after git gc --aggressive (÷ content)", func(s *suiteSize) string {
		if s.aggr == 0 {
			return "not run (MEMVAULT_SUITE_AGGRESSIVE=1)"
		}
		return fmt.Sprintf("%s (%s) in %s", units.Bytes(s.aggr), x(s.aggr, s.gc.ContentBytes), s.aggrDur.Round(10*time.Millisecond))
	})
	row(".index (Bleve) / .state", func(s *suiteSize) string { return units.Bytes(s.index) + " / " + units.Bytes(s.state) })
	row("whole vault on disk, as generated (÷ content)", func(s *suiteSize) string {
		return fmt.Sprintf("%s (%s)", units.Bytes(s.disk), x(s.disk, s.content))
	})
	// Each part ÷ the raw text it holds (issue 22's measure: the whole
	// vault ≤ 2.5× the raw text at the large size).
	for _, p := range []struct {
		name string
		f    func(s *suiteSize) int64
	}{
		{"content: ledger/", func(s *suiteSize) int64 { return s.parts["ledger"] }},
		{"content: transcripts/", func(s *suiteSize) int64 { return s.parts["transcripts"] }},
		{"content: nodes/", func(s *suiteSize) int64 { return s.parts["nodes"] }},
		{"content: heads (threads/, MEMORY.md, CONTINUITY.md, .rendered/)", func(s *suiteSize) int64 { return s.parts["heads"] }},
		{"content: the rest (memvault.toml, .gitignore, …)", func(s *suiteSize) int64 { return s.parts["other"] }},
		{"content, all", func(s *suiteSize) int64 { return s.content }},
		{".index", func(s *suiteSize) int64 { return s.index }},
		{".state", func(s *suiteSize) int64 { return s.state }},
		{".git as generated", func(s *suiteSize) int64 { return s.git.GitBytes }},
		{"whole vault as generated", func(s *suiteSize) int64 { return s.disk }},
	} {
		row(p.name+" (÷ raw text)", func(s *suiteSize) string {
			return fmt.Sprintf("%s (%s)", units.Bytes(p.f(s)), x(p.f(s), s.d.TextBytes))
		})
	}
	row(".state's files, largest first", func(s *suiteSize) string { return strings.Join(s.stateFiles, ", ") })
	sb.WriteString(suiteTargetTable(order, sizes))
	if growth != "" {
		sb.WriteString("\n### .git as events are appended, one commit each\n\n")
		sb.WriteString(growth)
	}
	fmt.Fprintf(&sb, "\nMachine: %s\nLoad average (1, 5, 15 min) at the start, after each size, at the end: %s\n",
		machine(), strings.Join(loads, "; "))
	return sb.String()
}

func loadAvg() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(data))
	return strings.Join(f[:3], " ")
}

// machine describes where the suite ran.
func machine() string {
	cpu := "?"
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				cpu = strings.TrimSpace(v)
				break
			}
		}
	}
	mem := "?"
	if data, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb int64
		if _, err := fmt.Sscanf(string(data), "MemTotal: %d kB", &kb); err == nil {
			mem = fmt.Sprintf("%.0f GiB", float64(kb)/(1<<20))
		}
	}
	gitv, _ := exec.Command("git", "--version").Output()
	return fmt.Sprintf("nproc %d, %s, %s RAM, %s, %s, %s, %s", runtime.NumCPU(), cpu, mem, runtime.Version(),
		strings.TrimSpace(string(gitv)), runtime.GOOS+"/"+runtime.GOARCH, time.Now().UTC().Format("2006-01-02 15:04 UTC"))
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

func oneLineOf(s string) string { return strings.Join(strings.Fields(s), " ") }
