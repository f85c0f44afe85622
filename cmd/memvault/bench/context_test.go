package bench

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

// BenchmarkStartContext measures what session start injects on the suite's
// week vault (cached in MEMVAULT_BENCH_CACHE like the suite's, generated
// once otherwise): `memvault hook claude-code session-start` for the
// vault's busiest thread, timed as whole processes, and the context it
// injects, reported as metrics: characters, rows (lines of memory: not
// the usage note, headings, placeholders or comments), repeats (rows whose
// id or text an earlier row had), noise (HTML comment lines, placeholders
// of empty sections, lines written for people) and cut (1 when the budget
// cut it). With MEMVAULT_BENCH_BASELINE set to another memvault binary,
// the same is measured with it, on the same vault in the same run.
//
//	MEMVAULT_BENCH_CACHE=/tmp/mvsuite MEMVAULT_BENCH_BASELINE=/tmp/memvault-before \
//	    go test -run '^$' -bench StartContext -benchtime 20x ./cmd/memvault/bench/
func BenchmarkStartContext(b *testing.B) {
	bin := memvaultBinary(b)
	d := suiteCached(b, suiteSpecs["week"])
	b.Setenv("MEMVAULT_THREAD", d.Thread)
	builds := [][2]string{{"this", bin}}
	if base := os.Getenv("MEMVAULT_BENCH_BASELINE"); base != "" {
		builds = append(builds, [2]string{"baseline", base})
	}
	for _, build := range builds {
		hook := func(i int) *exec.Cmd {
			cmd := exec.Command(build[1], "--vault", d.root, "hook", "claude-code", "SessionStart")
			cmd.Stdin = strings.NewReader(fmt.Sprintf(`{"session_id":"ctx-%s-%d","transcript_path":"","cwd":%q,"hook_event_name":"SessionStart","source":"startup"}`,
				build[0], i, filepath.Dir(d.root)))
			return cmd
		}
		b.Run(build[0], func(b *testing.B) {
			cmd := hook(-1)
			cmd.Env = benchEnv()
			out, err := cmd.Output()
			if err != nil {
				b.Fatalf("session-start: %v", err)
			}
			var res struct {
				Out struct {
					Context string `json:"additionalContext"`
				} `json:"hookSpecificOutput"`
			}
			if err := json.Unmarshal(out, &res); err != nil {
				b.Fatalf("session-start printed %q: %v", out, err)
			}
			m := measureContext(res.Out.Context)
			timeProcesses(b, hook)
			b.ReportMetric(float64(m.chars), "chars")
			b.ReportMetric(float64(m.rows), "rows")
			b.ReportMetric(float64(m.repeats), "repeats")
			b.ReportMetric(float64(m.noise), "noise")
			b.ReportMetric(float64(m.cut), "cut")
		})
	}
}

// contextSize is what BenchmarkStartContext reports of one context.
type contextSize struct{ chars, rows, repeats, noise, cut int }

var (
	ctxID      = regexp.MustCompile("`([en]_[0-9a-z]{10,})`\\)?$")
	ctxNodeID  = regexp.MustCompile("^- `([en]_[0-9a-z]{10,})`")
	ctxMarker  = regexp.MustCompile(`^(- |\* |\d+\. )?(\[ \] )?((blocker|learning|reflection|claim|fact|next|decision|constraint|commitment): )?`)
	ctxRef     = regexp.MustCompile("\\s*\\(([^()]*`[^`()]+`|(since )?\\d{4}-\\d{2}-\\d{2}[^()]*)\\)$")
	ctxMore    = regexp.MustCompile(`^- … \d+ more`)
	ctxNoise   = regexp.MustCompile("^(<!--.*|- none.*|\\(none\\)|- no rows yet|- details of a node: `memvault expand.*|- every row of this thread: `memvault ledger.*)$")
	ctxComment = regexp.MustCompile(`<!--.*?-->`)
)

// measureContext counts a start context's characters and rows, and the
// rows it repeats: a row repeats one before it when it names the same id
// (its closing `e_…`, a node line's `n_…`) or says the same once its list
// marker, kind label and closing reference are gone, case and spaces
// folded. The usage note (up to the first blank line) is not counted.
func measureContext(ctx string) contextSize {
	s := contextSize{chars: utf8.RuneCountInString(ctx)}
	body := ctx
	if i := strings.Index(ctx, "\n\n"); i >= 0 {
		body = ctx[i+2:]
	}
	ids, keys := map[string]bool{}, map[string]bool{}
	for _, line := range strings.Split(body, "\n") {
		t := strings.TrimSpace(line)
		switch {
		case t == "", strings.HasPrefix(t, "#"), ctxMore.MatchString(t):
			continue
		case strings.HasPrefix(t, "[memvault: "):
			s.cut = 1
			continue
		case ctxNoise.MatchString(t):
			s.noise++
			continue
		}
		if c := strings.TrimSpace(ctxComment.ReplaceAllString(t, "")); c != t {
			s.noise++
			if c == "" {
				continue
			}
			t = c
		}
		s.rows++
		id := ""
		if m := ctxID.FindStringSubmatch(t); m != nil {
			id = m[1]
		} else if m := ctxNodeID.FindStringSubmatch(t); m != nil {
			id = m[1]
		}
		key := ctxMarker.ReplaceAllString(t, "")
		for k := ""; k != key; {
			k, key = key, ctxRef.ReplaceAllString(key, "")
		}
		key = strings.ToLower(strings.Join(strings.Fields(key), " "))
		if (id != "" && ids[id]) || keys[key] {
			s.repeats++
		}
		if id != "" {
			ids[id] = true
		}
		keys[key] = true
	}
	return s
}

// TestMeasureContext checks the counting on the context of issue 14:
// one next action five times, one blocker three times.
func TestMeasureContext(t *testing.T) {
	ctx := "note line 1\nnote line 2\n\n# MEMORY\n\n<!-- memvault: the global head -->\n\n## Blockers\n\n- staging is down (project:shop, `e_01m855270b4wzdcgaspn0d45nv`)\n\n## Commitments\n\n- none\n\n" +
		"## Next actions\n\n- migrate the orders (project:shop, `e_01m8552jc4tp2v4wfks72sk09k`)\n\n## Threads\n\n- project:shop: blocked (1 blocker); next: migrate the orders → threads/project/shop.md\n\n" +
		"# project:shop\n\n## Open loops\n\n- blocker: staging is down (`e_01m855270b4wzdcgaspn0d45nv`)\n\n## Next action\n\n- migrate the orders (`e_01m8552jc4tp2v4wfks72sk09k`)\n\n" +
		"## Lineage\n\n- every row of this thread: `memvault ledger --thread project:shop`\n\n" +
		"# CONTINUITY (live sections)\n## Current Task\n\n- migrate the orders (since 2026-11-23)\n\n## Next Actions\n\n1. migrate the orders\n\n## Active Blockers\n\n- staging is down (`e_01m855270b4wzdcgaspn0d45nv`)"
	got := measureContext(ctx)
	want := contextSize{chars: utf8.RuneCountInString(ctx), rows: 8, repeats: 5, noise: 3}
	if got != want {
		t.Fatalf("measureContext = %+v, want %+v", got, want)
	}
}
