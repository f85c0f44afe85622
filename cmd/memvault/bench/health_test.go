package bench

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/memvault/memvault/vault"
)

// BenchmarkHealth measures what capture on a vault in need of repair costs
// (docs/HOOKS.md, "Capture never stops"), on a copy of the suite's vault
// (MEMVAULT_SUITE: small by default; cached in MEMVAULT_BENCH_CACHE):
// vault.Health in process, which status, doctor and `memvault context` run
// and a hook runs once it is refused (one stat per segment when the
// segments are as the last write left them), then session-start and
// prompt-submit as whole processes, on the healthy vault and after a
// letter of its first segment is changed by hand. A healthy session start
// does not call Health (its own transaction ran the check); on a forged
// ledger the first transaction reads the chain from the forged segment on
// and saves the failure, and the next ones answer from it.
//
//	MEMVAULT_SUITE=large MEMVAULT_BENCH_CACHE=/tmp/mvsuite \
//	    go test -run '^$' -bench Health -benchtime 20x ./cmd/memvault/bench/
func BenchmarkHealth(b *testing.B) {
	bin := memvaultBinary(b)
	size := os.Getenv("MEMVAULT_SUITE")
	if size == "" {
		size = "small"
	}
	spec, ok := suiteSpecs[size]
	if !ok {
		b.Fatalf("MEMVAULT_SUITE=%s: want one of small, week, large", size)
	}
	d := suiteCached(b, spec)
	cwd := filepath.Dir(d.root)
	hook := func(event, extra string) func(int) *exec.Cmd {
		return func(i int) *exec.Cmd {
			cmd := exec.Command(bin, "--vault", d.root, "hook", "claude-code", event)
			cmd.Stdin = strings.NewReader(fmt.Sprintf(`{"session_id":"health-%d","transcript_path":"","cwd":%q%s}`, i, cwd, extra))
			return cmd
		}
	}
	start := hook("session-start", `,"hook_event_name":"SessionStart","source":"startup"`)
	prompt := hook("prompt-submit", `,"hook_event_name":"UserPromptSubmit","prompt":"how did the migration go"`)
	// A write stamps the copied segments (new inodes) as checked.
	run(b, d.root, bin, "--vault", d.root, "remember", "stamp the copy")
	segs, _ := filepath.Glob(filepath.Join(d.root, "ledger", "*", "*", "*.jsonl"))
	sort.Strings(segs)
	b.Logf("%s vault: %d ledger segments", size, len(segs))

	measure := func(state string) {
		v, err := vault.OpenForCapture(d.root)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(state+"/health-in-process", func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if _, err := v.Health(); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(state+"/session-start", func(b *testing.B) { timeProcesses(b, start) })
		b.Run(state+"/prompt-submit", func(b *testing.B) { timeProcesses(b, prompt) })
	}
	measure("healthy")

	data, err := os.ReadFile(segs[0])
	if err != nil {
		b.Fatal(err)
	}
	i := bytes.Index(data, []byte(`"text":"`))
	if i < 0 {
		b.Fatal("the first segment has no text")
	}
	data[i+8] ^= 0x01
	if err := os.WriteFile(segs[0], data, 0o600); err != nil {
		b.Fatal(err)
	}
	measure("forged")
}
