package cli

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/memvault/memvault/cmd/memvault/internal/ops"
	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/heads"
	"github.com/memvault/memvault/vault/vaulttest"
)

// TestReplayAndMetricsAreAFoldOfTheLedger is the property test: a
// random sequence of writes (every kind, corrections of corrections,
// sessions, summaries, renders, hostile text), then the ledger folded
// twice, with the caches cold and warm, and in a real `git clone` of the
// vault, gives the same state, the same `metrics --json` and the same
// `replay --json` and replay table, byte for byte. It fails if either
// command reads the clock, a map in its iteration order, a cache that
// disagrees with the full fold, or anything but the ledger.
func TestReplayAndMetricsAreAFoldOfTheLedger(t *testing.T) {
	if !vaulttest.HasGit() {
		t.Skip("needs the git binary for the clone")
	}
	isolate(t)
	for _, seed := range []uint64{1, 2, 3} {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), ".memory")
			randomLedger(t, dir, seed, 60)
			outputs := func(root string) []string {
				var out []string
				for _, args := range [][]string{
					{"metrics", "--json"}, {"replay", "--json", "--last", "0"}, {"replay", "--last", "0"},
					{"metrics"}, {"replay", "--thread", "project:shop", "--kind", "commitment.open", "--json"},
				} {
					code, stdout, errOut := runCLI(t, append([]string{"--vault", root}, args...)...)
					if code != 0 {
						t.Fatalf("memvault %v: exit %d: %s", args, code, errOut)
					}
					out = append(out, stdout)
				}
				return append(out, foldedRows(t, root))
			}
			first := outputs(dir)
			second := outputs(dir) // the caches written by the first pass
			compareOutputs(t, "folded again", first, second)

			clone := filepath.Join(t.TempDir(), "clone")
			home := t.TempDir()
			empty := filepath.Join(home, "gitconfig")
			if err := os.WriteFile(empty, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			env := append(vaulttest.Sandbox(home), "GIT_CONFIG_GLOBAL="+empty)
			vaulttest.Git{Dir: filepath.Dir(dir), Env: env}.Run(t, "clone", "-q", dir, clone)
			if _, err := os.Stat(filepath.Join(clone, ".state")); err == nil {
				t.Fatal("the clone has the derived caches: it would not fold afresh")
			}
			compareOutputs(t, "in a clone", first, outputs(clone))

			// The numbers are the ledger's: a check that they are not all zero.
			var m ops.Metrics
			if err := json.Unmarshal([]byte(first[0]), &m); err != nil {
				t.Fatal(err)
			}
			if m.Events < 60 || m.Commitments.Open+m.Commitments.Closed == 0 || len(m.Heads) < 2 {
				t.Errorf("metrics of a random ledger look empty: %+v", m)
			}
		})
	}
}

func compareOutputs(t *testing.T, how string, want, got []string) {
	t.Helper()
	for i := range want {
		if want[i] != got[i] {
			t.Errorf("output %d differs %s:\nfirst:\n%s\nthen:\n%s", i, how, want[i], got[i])
		}
	}
}

// foldedRows is the vault's full fold and its cached fold (the heads'
// view), as JSON: both must be the same rows, with the same corrections.
func foldedRows(t *testing.T, root string) string {
	t.Helper()
	v, err := vault.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	full, err := v.LoadState()
	if err != nil {
		t.Fatal(err)
	}
	cached, _, err := heads.FoldedState(v)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := rowsJSON(full, true), rowsJSON(cached, true); a != b {
		t.Errorf("the cached fold differs from the full fold:\nfull:\n%s\ncached:\n%s", a, b)
	}
	return rowsJSON(full, false)
}

// rowsJSON is what a fold holds: each row's event and what later events
// did to it. cacheKeeps leaves out what the heads' cache does not keep
// (the chain's hashes, the source and the harness: no head shows them).
func rowsJSON(st *vault.State, cacheKeeps bool) string {
	var b strings.Builder
	for _, r := range st.Rows {
		e := *r.Event
		if cacheKeeps {
			e.Prev, e.Hash, e.Source, e.Harness = "", "", "", ""
		}
		ev, _ := json.Marshal(&e)
		fmt.Fprintf(&b, "%s retracted_by=%s superseded_by=%s closed_by=%s\n", ev, r.RetractedBy, r.SupersededBy, r.ClosedBy)
	}
	return b.String()
}

// randomLedger writes n random commands into a new vault at dir, from the
// seed: every kind remember takes, commitments opened, closed and
// reopened by retracting the close, supersedes and retracts of any row,
// messages and summaries of sessions, heads rendered, and text with
// newlines, terminal escapes, right-to-left overrides and great length.
func randomLedger(t *testing.T, dir string, seed uint64, n int) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, seed*7919))
	run := func(args ...string) string {
		t.Helper()
		code, out, errOut := runCLI(t, append([]string{"--vault", dir}, args...)...)
		if code != 0 {
			t.Fatalf("memvault %q: exit %d: %s", args, code, errOut)
		}
		return out
	}
	idRE := regexp.MustCompile(`e_[0-9a-z]{26}`)
	run("init")
	threads := []string{"project:shop", "project:api", "person:alice", "--global"}
	texts := []string{"use WAL", "ship the installer", "line one\nline two", "red \x1b[31malert\x1b[0m",
		"abc \u202eevil\u202c def", strings.Repeat("long words ", 60), "naïve café 日本語"}
	var ids, opens, closes []string
	threadArgs := func() []string {
		th := threads[rng.IntN(len(threads))]
		if th == "--global" {
			return []string{th}
		}
		return []string{"--thread", th}
	}
	for i := 0; i < n; i++ {
		text := fmt.Sprintf("%s #%d", texts[rng.IntN(len(texts))], i)
		switch op := rng.IntN(10); {
		case op < 4:
			kind := vault.RememberKinds[rng.IntN(len(vault.RememberKinds))]
			args := append([]string{"remember", "--kind", kind}, threadArgs()...)
			if kind == "claim" && rng.IntN(2) == 0 {
				// a checked claim the state contradicts: rejected, with its reason
				args = append(append([]string{"claim"}, threadArgs()...), "event.exists", `{"id":"e_00000000000000000000000000"}`)
				ids = append(ids, idRE.FindString(run(args...)))
				continue
			}
			ids = append(ids, idRE.FindString(run(append(args, text)...)))
		case op < 6:
			id := idRE.FindString(run(append(append([]string{"commitment", "open"}, threadArgs()...), text)...))
			ids, opens = append(ids, id), append(opens, id)
		case op == 6 && len(opens) > 0:
			k := rng.IntN(len(opens))
			if code, out, _ := runCLI(t, "--vault", dir, "commitment", "close", opens[k], "--note", text); code == 0 {
				closes = append(closes, idRE.FindString(out)) // refused when the commitment was retracted
			}
			opens = append(opens[:k], opens[k+1:]...)
		case op == 7 && len(ids) > 0:
			k := rng.IntN(len(ids))
			if code, out, _ := runCLI(t, "--vault", dir, "supersede", ids[k], text); code == 0 {
				ids[k] = idRE.FindString(out)
			}
		case op == 8 && len(ids)+len(closes) > 0:
			all := append(append([]string{}, ids...), closes...)
			runCLI(t, "--vault", dir, "retract", all[rng.IntN(len(all))], "--why", text) // may be refused: already retracted
		default:
			session := fmt.Sprintf("s%d", rng.IntN(3))
			run("transcript", "append", "--session", session, "--role", "user", "--thread", threads[rng.IntN(3)], text)
			if rng.IntN(2) == 0 {
				run("summarize", "--session", session)
			}
			run("render", "--all-threads")
		}
	}
}
