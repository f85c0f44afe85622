package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestMCPLatency times the recall tool of `memvault mcp` through a real
// stdio client (the official SDK's, over the binary's stdin and stdout)
// against `memvault recall` as a process, turn about, on one copy of a
// suite vault, in one run: the budget of a tool call is recall's
// (docs/PERFORMANCE.md, row 20):
//
//	MEMVAULT_SUITE=large MEMVAULT_BENCH_CACHE=/tmp/mvcache \
//	    go test -count=1 -run '^TestMCPLatency$' -timeout 2h -v ./cmd/memvault/bench/
//
// MEMVAULT_SUITE_ROUNDS (default 40) sets the calls of each. It prints the
// p50 and p90 of both and their ratio.
func TestMCPLatency(t *testing.T) {
	spec, ok := suiteSpecs[os.Getenv("MEMVAULT_SUITE")]
	if !ok {
		t.Skip("set MEMVAULT_SUITE to one size (small, week, large) to time the MCP server")
	}
	rounds := 40
	if n, err := fmt.Sscan(os.Getenv("MEMVAULT_SUITE_ROUNDS"), &rounds); n == 0 || err != nil {
		rounds = 40
	}
	bin := memvaultBinary(t)
	src, _ := suiteEnsure(t, spec)
	root, _ := suiteCopy(t, src)

	ctx := context.Background()
	client := sdk.NewClient(&sdk.Implementation{Name: "memvault-bench", Version: "0"}, nil)
	start := time.Now()
	session, err := client.Connect(ctx, &sdk.CommandTransport{Command: exec.Command(bin, "--vault", root, "mcp")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer session.Close()
	startup := time.Since(start)

	queries := scaleQueries()
	var tool, process []time.Duration
	for r := range rounds + 1 {
		q := queries[r%len(queries)]
		for k := range 2 {
			began := time.Now()
			if (k+r)%2 == 0 {
				res, err := session.CallTool(ctx, &sdk.CallToolParams{Name: "recall",
					Arguments: map[string]any{"query": q, "all_threads": true}})
				if err != nil || res.IsError {
					t.Fatalf("recall %q: %v %+v", q, err, res)
				}
				if r > 0 { // the first call of each warms up
					tool = append(tool, time.Since(began))
				}
			} else {
				if out, err := exec.Command(bin, "--vault", root, "recall", "--all-threads", q).CombinedOutput(); err != nil {
					t.Fatalf("memvault recall %q: %v\n%s", q, err, out)
				}
				if r > 0 {
					process = append(process, time.Since(began))
				}
			}
		}
	}
	slices.Sort(tool)
	slices.Sort(process)
	var sb strings.Builder
	fmt.Fprintf(&sb, "\n### MCP recall on the %s vault, %d calls each, turns alternating\n\n%s, load %s\n\n", spec.Name, rounds, machine(), loadAvg())
	fmt.Fprintf(&sb, "server start and initialize: %.1f ms\n\n| call | p50 | p90 |\n| --- | --- | --- |\n", ms(startup))
	fmt.Fprintf(&sb, "| recall tool (server running) | %.1f ms | %.1f ms |\n", ms(pct(tool, 50)), ms(pct(tool, 90)))
	fmt.Fprintf(&sb, "| memvault recall --all-threads (a process) | %.1f ms | %.1f ms |\n", ms(pct(process, 50)), ms(pct(process, 90)))
	fmt.Fprintf(&sb, "\ntool ÷ process, p50: %.2f\n", float64(pct(tool, 50))/float64(pct(process, 50)))
	fmt.Fprint(os.Stderr, sb.String())
}
