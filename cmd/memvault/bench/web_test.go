package bench

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestWebLatency times the pages of `memvault serve` on a copy of a suite
// vault, through a real HTTP client against the binary: the time to the
// first byte of the answer and to the end of its body, for the overview,
// the first page of the timeline and its second page (before=), each
// fetched in turn (docs/PERFORMANCE.md; the budget is 100 ms for the
// overview and the timeline):
//
//	MEMVAULT_SUITE=large MEMVAULT_BENCH_CACHE=/tmp/mvcache \
//	    go test -count=1 -run '^TestWebLatency$' -timeout 2h -v ./cmd/memvault/bench/
//
// MEMVAULT_SUITE_ROUNDS (default 20) sets the requests of each page. It
// prints the p50 and p90 of both times for each page.
func TestWebLatency(t *testing.T) {
	spec, ok := suiteSpecs[os.Getenv("MEMVAULT_SUITE")]
	if !ok {
		t.Skip("set MEMVAULT_SUITE to one size (small, week, large) to time the web view")
	}
	rounds := 20
	if n, err := fmt.Sscan(os.Getenv("MEMVAULT_SUITE_ROUNDS"), &rounds); n == 0 || err != nil {
		rounds = 20
	}
	bin := memvaultBinary(t)
	src, _ := suiteEnsure(t, spec)
	root, _ := suiteCopy(t, src)
	// A write stamps the copied segments (new inodes) as checked, as every
	// write of a vault in use does: the overview's health check then costs
	// a stat per segment, not a walk of the chain.
	if out, err := exec.Command(bin, "--vault", root, "remember", "stamp the copy").CombinedOutput(); err != nil {
		t.Fatalf("remember: %v\n%s", err, out)
	}

	cmd := exec.Command(bin, "--vault", root, "serve")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		if err := cmd.Wait(); err != nil {
			t.Errorf("memvault serve after SIGTERM: %v", err)
		}
	}()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("memvault serve printed %q: %v", line, err)
	}
	startup := time.Since(start)
	m := regexp.MustCompile(`at (http://127\.0\.0\.1:\d+)/\?token=([0-9a-f]{64})$`).FindStringSubmatch(strings.TrimSpace(line))
	if m == nil {
		t.Fatalf("memvault serve printed %q", line)
	}
	base, token := m[1], m[2]
	client := &http.Client{}
	fetch := func(path string) (ttfb, full time.Duration, body string) {
		sep := "?"
		if strings.Contains(path, "?") {
			sep = "&"
		}
		req, _ := http.NewRequest("GET", base+path+sep+"token="+token, nil)
		began := time.Now()
		req = req.WithContext(httptrace.WithClientTrace(req.Context(),
			&httptrace.ClientTrace{GotFirstResponseByte: func() { ttfb = time.Since(began) }}))
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		full = time.Since(began)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("GET %s: %d %v\n%.2000s", path, resp.StatusCode, err, data)
		}
		return ttfb, full, string(data)
	}
	_, _, first := fetch("/timeline")
	nm := regexp.MustCompile(`id="next-page" href="([^"]*)"`).FindStringSubmatch(first)
	pages := []string{"/", "/timeline"}
	if nm != nil {
		pages = append(pages, strings.ReplaceAll(nm[1], "&amp;", "&"))
	}
	ttfb := map[string][]time.Duration{}
	full := map[string][]time.Duration{}
	var size = map[string]int{}
	for r := range rounds + 1 {
		for _, p := range pages {
			a, b, body := fetch(p)
			if r > 0 { // the first round warms up
				ttfb[p] = append(ttfb[p], a)
				full[p] = append(full[p], b)
			}
			size[p] = len(body)
		}
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "\n### The web view on the %s vault, %d requests a page, pages in turn\n\n%s, load %s\n\n", spec.Name, rounds, machine(), loadAvg())
	fmt.Fprintf(&sb, "server start to its address line: %.1f ms\n\n| page | bytes | first byte p50 | p90 | full body p50 | p90 |\n| --- | --- | --- | --- | --- | --- |\n", ms(startup))
	for _, p := range pages {
		slices.Sort(ttfb[p])
		slices.Sort(full[p])
		name := p
		if strings.Contains(p, "before=") {
			name = "/timeline?before=… (page 2)"
		}
		fmt.Fprintf(&sb, "| %s | %d | %.1f ms | %.1f ms | %.1f ms | %.1f ms |\n", name, size[p],
			ms(pct(ttfb[p], 50)), ms(pct(ttfb[p], 90)), ms(pct(full[p], 50)), ms(pct(full[p], 90)))
	}
	fmt.Fprint(os.Stderr, sb.String())
}
