package bench

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	wrapOnce sync.Once
	wrapPath string
	wrapErr  error
)

// rsswrapBinary builds cmd/memvault/bench/rsswrap once.
func rsswrapBinary(b testing.TB) string {
	b.Helper()
	wrapOnce.Do(func() {
		dir, err := os.MkdirTemp("", "memvault-bench-rsswrap")
		if err != nil {
			wrapErr = err
			return
		}
		wrapPath = filepath.Join(dir, "rsswrap")
		if out, err := exec.Command("go", "build", "-o", wrapPath, "./rsswrap").CombinedOutput(); err != nil {
			wrapErr = fmt.Errorf("go build ./rsswrap: %v\n%s", err, out)
		}
	})
	if wrapErr != nil {
		b.Fatal(wrapErr)
	}
	return wrapPath
}

// measured runs one process through rsswrap, with stdin, and returns its
// wall time and peak resident memory in MiB; it fails unless the process
// exits 0.
func measured(b testing.TB, stdin []byte, name string, args ...string) (time.Duration, float64) {
	b.Helper()
	w := exec.Command(rsswrapBinary(b), append([]string{name}, args...)...)
	w.Env = benchEnv()
	w.Stdin = bytes.NewReader(stdin)
	pr, pw, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	w.ExtraFiles = []*os.File{pw}
	var out bytes.Buffer
	w.Stdout, w.Stderr = &out, &out
	err = w.Start()
	pw.Close()
	if err != nil {
		b.Fatal(err)
	}
	report, _ := io.ReadAll(pr)
	pr.Close()
	err = w.Wait()
	var ns, rss int64
	var code int
	if _, serr := fmt.Sscan(string(report), &ns, &rss, &code); serr != nil || err != nil {
		b.Fatalf("%s %s: %v (rsswrap: %q)\n%s", name, strings.Join(args, " "), err, report, out.Bytes())
	}
	return time.Duration(ns), float64(rss) / 1024
}

// proseTranscript writes a Claude Code transcript of about mb MiB of turns
// of plain prose, a few hundred words each: the text redaction, the
// costliest step of an import, works hardest on.
func proseTranscript(b testing.TB, path string, mb int) {
	b.Helper()
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	w := bufio.NewWriterSize(f, 1<<20)
	words := strings.Fields("the quick brown fox jumps over the lazy dog while memory keeps every turn of the " +
		"session in its vault and the import reads the transcript a window at a time within its budget")
	rnd := rand.New(rand.NewPCG(16, 6))
	for n, written := 0, 0; written < mb<<20; n++ {
		role := [2]string{"user", "assistant"}[n%2]
		text := make([]string, 150)
		for i := range text {
			text[i] = words[rnd.IntN(len(words))]
		}
		line, _ := json.Marshal(map[string]any{"type": role, "sessionId": "big", "uuid": fmt.Sprintf("u%07d", n),
			"timestamp": "2020-01-15T10:00:00Z", "message": map[string]any{"role": role, "content": strings.Join(text, " ")}})
		w.Write(append(line, '\n'))
		written += len(line) + 1
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkImportUnderBudget measures issue 16's large first import: a
// Claude Code transcript of MEMVAULT_BENCH_IMPORT_MB MiB (60 by default) of
// prose, imported (1) in one `memvault transcript import`, and (2) by
// Stop hooks, one after the other, each within its budget, until one finds
// nothing left; then (3) that caught-up Stop, and (4) the session end that
// commits it all. Each is one process, its peak RSS read by rsswrap.
// MEMVAULT_BENCH_BASELINE=BINARY also times another build's one command
// and its first Stop on the same file, in the same run.
// Run with: go test -run '^$' -bench ImportUnderBudget -benchtime 1x ./cmd/memvault/bench/
func BenchmarkImportUnderBudget(b *testing.B) {
	bin := memvaultBinary(b)
	mb := 60
	if s := os.Getenv("MEMVAULT_BENCH_IMPORT_MB"); s != "" {
		fmt.Sscan(s, &mb)
	}
	dir := b.TempDir()
	src := filepath.Join(dir, "big.jsonl")
	proseTranscript(b, src, mb)
	payloadFor := func(event, proj string) []byte {
		p, _ := json.Marshal(map[string]string{"session_id": "big", "transcript_path": src, "cwd": proj, "hook_event_name": event})
		return p
	}
	if base := os.Getenv("MEMVAULT_BENCH_BASELINE"); base != "" {
		one := filepath.Join(b.TempDir(), ".memory")
		run(b, "", base, "--vault", one, "init")
		wall, rss := measured(b, nil, base, "--vault", one, "transcript", "import", "--format", "claude-code", "--session", "big", src)
		b.Logf("baseline transcript import, %d MiB: %s, peak RSS %.0f MiB", mb, wall.Round(10*time.Millisecond), rss)
		hv := filepath.Join(b.TempDir(), ".memory")
		run(b, "", base, "--vault", hv, "init")
		wall, rss = measured(b, payloadFor("Stop", b.TempDir()), base, "--vault", hv, "hook", "claude-code", "stop")
		b.Logf("baseline first stop: %s, peak RSS %.0f MiB, %d MiB stored", wall.Round(10*time.Millisecond), rss,
			dirBytes(b, filepath.Join(hv, "transcripts"))>>20)
	}
	for i := 0; i < b.N; i++ {
		// (1) one command
		one := filepath.Join(b.TempDir(), ".memory")
		run(b, "", bin, "--vault", one, "init")
		wall, rss := measured(b, nil, bin, "--vault", one, "transcript", "import", "--format", "claude-code", "--session", "big", src)
		b.Logf("transcript import, %d MiB: %s, peak RSS %.0f MiB", mb, wall.Round(10*time.Millisecond), rss)
		b.ReportMetric(rss, "import-MiB")

		// (2) stops, until one stores nothing more
		hv := filepath.Join(b.TempDir(), ".memory")
		run(b, "", bin, "--vault", hv, "init")
		proj := b.TempDir()
		payload := func(event string) []byte { return payloadFor(event, proj) }
		var hooks int
		var total, longest time.Duration
		var peak float64
		var stopWall time.Duration
		var stopRSS float64
		for {
			before := dirBytes(b, filepath.Join(hv, "transcripts"))
			wall, rss := measured(b, payload("Stop"), bin, "--vault", hv, "hook", "claude-code", "stop")
			if dirBytes(b, filepath.Join(hv, "transcripts")) == before {
				stopWall, stopRSS = wall, rss // (3) caught up
				break
			}
			hooks++
			total += wall
			longest = max(longest, wall)
			peak = max(peak, rss)
			if hooks > 100*mb+100 {
				b.Fatalf("%d stops and not done", hooks)
			}
		}
		b.Logf("stops: %d to import it all, %s in all, the longest %s, peak RSS %.0f MiB", hooks,
			total.Round(10*time.Millisecond), longest.Round(time.Millisecond), peak)
		b.Logf("a stop once caught up: %s, peak RSS %.0f MiB", stopWall.Round(time.Millisecond), stopRSS)
		b.ReportMetric(float64(hooks), "stops")
		b.ReportMetric(float64(longest.Milliseconds()), "longest-stop-ms")
		b.ReportMetric(peak, "stop-MiB")

		// (4) the session end commits it all
		wall, rss = measured(b, payload("SessionEnd"), bin, "--vault", hv, "hook", "claude-code", "session-end")
		b.Logf("session end (commits %d MiB of parts): %s, peak RSS %.0f MiB", dirBytes(b, filepath.Join(hv, "transcripts"))>>20,
			wall.Round(10*time.Millisecond), rss)
		b.ReportMetric(rss, "end-MiB")
	}
}
