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
// prints the p50 and p90 of both times for each page. With
// MEMVAULT_BENCH_BASELINE set to another memvault binary, that build
// serves a copy of its own and the two take turns, page by page, in the
// same run.
func TestWebLatency(t *testing.T) {
	spec, ok := suiteSpecs[os.Getenv("MEMVAULT_SUITE")]
	if !ok {
		t.Skip("set MEMVAULT_SUITE to one size (small, week, large) to time the web view")
	}
	rounds := 20
	if n, err := fmt.Sscan(os.Getenv("MEMVAULT_SUITE_ROUNDS"), &rounds); n == 0 || err != nil {
		rounds = 20
	}
	src, _ := suiteEnsure(t, spec)
	builds := []*webBuild{{name: "this", bin: memvaultBinary(t)}}
	if base := os.Getenv("MEMVAULT_BENCH_BASELINE"); base != "" {
		builds = append(builds, &webBuild{name: "baseline", bin: base})
	}
	for _, b := range builds {
		b.start(t, src)
	}
	_, _, first := builds[0].fetch(t, "/timeline")
	nm := regexp.MustCompile(`id="next-page" href="([^"]*)"`).FindStringSubmatch(first)
	pages := []string{"/", "/timeline"}
	if nm != nil {
		pages = append(pages, strings.ReplaceAll(nm[1], "&amp;", "&"))
	}
	for r := range rounds + 1 {
		for _, p := range pages {
			for i := range builds {
				// Which build goes first swaps every round.
				b := builds[(i+r)%len(builds)]
				a, f, body := b.fetch(t, p)
				if r > 0 { // the first round warms up
					b.ttfb[p] = append(b.ttfb[p], a)
					b.full[p] = append(b.full[p], f)
				}
				b.size[p] = len(body)
			}
		}
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "\n### The web view on the %s vault, %d requests a page, pages in turn\n\n%s, load %s\n\n", spec.Name, rounds, machine(), loadAvg())
	fmt.Fprintf(&sb, "| build | page | bytes | first byte p50 | p90 | full body p50 | p90 |\n| --- | --- | --- | --- | --- | --- | --- |\n")
	for _, b := range builds {
		fmt.Fprintf(&sb, "| %s | server start to its address line | | %.1f ms | | | |\n", b.name, ms(b.startup))
		for _, p := range pages {
			slices.Sort(b.ttfb[p])
			slices.Sort(b.full[p])
			name := p
			if strings.Contains(p, "before=") {
				name = "/timeline?before=… (page 2)"
			}
			fmt.Fprintf(&sb, "| %s | %s | %d | %.1f ms | %.1f ms | %.1f ms | %.1f ms |\n", b.name, name, b.size[p],
				ms(pct(b.ttfb[p], 50)), ms(pct(b.ttfb[p], 90)), ms(pct(b.full[p], 50)), ms(pct(b.full[p], 90)))
		}
	}
	fmt.Fprint(os.Stderr, sb.String())
}

// webBuild is one memvault build serving its own copy of the vault, and
// what its pages took.
type webBuild struct {
	name, bin   string
	base, token string
	startup     time.Duration
	client      http.Client
	ttfb, full  map[string][]time.Duration
	size        map[string]int
}

// start copies src, stamps the copy with one write, and starts memvault
// serve on it until the test ends.
func (b *webBuild) start(t *testing.T, src string) {
	t.Helper()
	b.ttfb, b.full, b.size = map[string][]time.Duration{}, map[string][]time.Duration{}, map[string]int{}
	root, _ := suiteCopy(t, src)
	// A write stamps the copied segments (new inodes) as checked, as every
	// write of a vault in use does: the overview's health check then costs
	// a stat per segment, not a walk of the chain.
	if out, err := exec.Command(b.bin, "--vault", root, "remember", "stamp the copy").CombinedOutput(); err != nil {
		t.Fatalf("%s: remember: %v\n%s", b.name, err, out)
	}
	cmd := exec.Command(b.bin, "--vault", root, "serve")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	began := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		if err := cmd.Wait(); err != nil {
			t.Errorf("%s: memvault serve after SIGTERM: %v", b.name, err)
		}
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("%s: memvault serve printed %q: %v", b.name, line, err)
	}
	b.startup = time.Since(began)
	m := regexp.MustCompile(`at (http://127\.0\.0\.1:\d+)/\?token=([0-9a-f]{64})$`).FindStringSubmatch(strings.TrimSpace(line))
	if m == nil {
		t.Fatalf("%s: memvault serve printed %q", b.name, line)
	}
	b.base, b.token = m[1], m[2]
}

// fetch gets path with the token: the time to the first byte, to the end
// of the body, and the body.
func (b *webBuild) fetch(t *testing.T, path string) (ttfb, full time.Duration, body string) {
	t.Helper()
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	req, _ := http.NewRequest("GET", b.base+path+sep+"token="+b.token, nil)
	began := time.Now()
	req = req.WithContext(httptrace.WithClientTrace(req.Context(),
		&httptrace.ClientTrace{GotFirstResponseByte: func() { ttfb = time.Since(began) }}))
	resp, err := b.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	full = time.Since(began)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("%s: GET %s: %d %v\n%.2000s", b.name, path, resp.StatusCode, err, data)
	}
	return ttfb, full, string(data)
}
