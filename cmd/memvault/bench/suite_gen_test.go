package bench

// The suite's vaults: small, large and week, generated through memvault's
// own library (and, for the week, the git CLI for a person's hand edits),
// seeded, and cached under MEMVAULT_BENCH_CACHE. The text is deterministic;
// event ids, commit hashes and event times are not, because transactions
// stamp the wall clock and the vault's clock cannot be set from outside its
// package.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/memvault/memvault/vault/continuity"
	"github.com/memvault/memvault/vault/node"
	"github.com/memvault/memvault/vault/scope"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/heads"
	"github.com/memvault/memvault/vault/lineage"
	"github.com/memvault/memvault/vault/memory"
	"github.com/memvault/memvault/vault/recall"
	"github.com/memvault/memvault/vault/transcript"
)

// suiteSpec is one size of vault.
type suiteSpec struct {
	Name     string
	Sessions int // sessions with a transcript and a session-summary node
	Messages int // messages per session (the week draws 40 to 200)
	Threads  int
	Events   int // ledger events wanted in all, lineage events included
	Week     bool
}

// suiteSpecs are the sizes of issue #8. The week is a busy person's week:
// 7 days of 8 sessions, two running at once, their prompts written as the
// hooks write them (durable, committed at session end), one memvault
// command per structured event (one commit each), heads refreshed at each
// session end, learnings and decisions in CONTINUITY.md, and hand edits to
// heads committed with git.
var suiteSpecs = map[string]suiteSpec{
	"small": {Name: "small", Sessions: 100, Messages: 10, Threads: 20, Events: 1000},
	"week":  {Name: "week", Sessions: 56, Messages: 120, Threads: 40, Week: true},
	"large": {Name: "large", Sessions: 10000, Messages: 100, Threads: 200, Events: 100000},
}

// suiteVault describes a generated vault; it is saved as done.json beside
// the cached vault.
type suiteVault struct {
	Spec       string  `json:"spec"`
	Events     int     `json:"events"`
	Sessions   int     `json:"sessions"`
	Messages   int     `json:"messages"`
	Nodes      int     `json:"nodes"`
	Threads    int     `json:"threads"`
	HandEdits  int     `json:"hand_edits"`
	TextBytes  int64   `json:"text_bytes"` // message and event text, the raw content
	Node       string  `json:"node"`       // a node in the middle of history, for expand
	Thread     string  `json:"thread"`     // a busy thread, for render
	GenSeconds float64 `json:"gen_seconds"`

	root, corpus string
}

// suiteThread is the i-th thread key: mostly projects, some people and topics.
func suiteThread(i int) string {
	switch i % 10 {
	case 7:
		return fmt.Sprintf("person:u%03d", i)
	case 9:
		return fmt.Sprintf("topic:t%03d", i)
	}
	return fmt.Sprintf("project:p%03d", i)
}

var suiteKinds = []string{"fact", "decision", "learning", "next", "fact", "reflection", "blocker", "fact", "decision", "next"}

// suiteEvent records one structured event through tx: the kinds the heads
// show, a commitment now and then, closed later.
func suiteEvent(tx *vault.Tx, g *scaleGen, r *rand.Rand, thread string, open *[]string) error {
	text := g.message(true, "")
	switch x := r.IntN(100); {
	case x < 4:
		ev, err := memory.OpenCommitment(tx, memory.Input{Thread: thread, Text: text})
		if err == nil {
			*open = append(*open, ev.ID)
		}
		return err
	case x < 7 && len(*open) > 8:
		id := (*open)[0]
		*open = (*open)[1:]
		_, err := memory.CloseCommitment(tx, id, "done")
		return err
	case x == 7:
		_, err := memory.Remember(tx, memory.Input{Kind: "constraint", Thread: thread, Text: text})
		return err
	}
	if r.IntN(10) == 0 {
		thread = "" // global rows
	}
	_, err := memory.Remember(tx, memory.Input{Kind: suiteKinds[r.IntN(len(suiteKinds))], Thread: thread, Text: text})
	return err
}

// suiteMessages makes one session's messages; assistants now and then end
// with the control lines distillation turns into events.
func suiteMessages(g *scaleGen, r *rand.Rand, session string, n int, start time.Time) []transcript.Message {
	msgs := make([]transcript.Message, 0, n)
	for i := 0; i < n; i++ {
		role := transcript.RoleUser
		if i%2 == 1 {
			role = transcript.RoleAssistant
		}
		text := g.message(role == transcript.RoleUser, "")
		if role == transcript.RoleAssistant && r.IntN(25) == 0 {
			text += "\nDECISION: " + g.message(true, "")
		}
		msgs = append(msgs, transcript.Message{ID: fmt.Sprintf("%s-m%03d", session, i), TS: start.Add(time.Duration(i) * 40 * time.Second),
			Role: role, Text: text, Source: transcript.Source{Format: transcript.Generic, Line: i + 1}})
	}
	return msgs
}

// corpusWriter writes {"id","text"} lines for the FTS5 anchor.
type corpusWriter struct {
	f   *os.File
	w   *bufio.Writer
	enc *json.Encoder
}

func newCorpus(tb testing.TB, path string) *corpusWriter {
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	return &corpusWriter{f: f, w: w, enc: json.NewEncoder(w)}
}

func (c *corpusWriter) add(msgs []transcript.Message) int64 {
	var n int64
	for _, m := range msgs {
		c.enc.Encode(struct {
			ID   string `json:"id"`
			Text string `json:"text"`
		}{m.ID, m.Text})
		n += int64(len(m.Text))
	}
	return n
}

func (c *corpusWriter) close(tb testing.TB) {
	if err := c.w.Flush(); err != nil {
		tb.Fatal(err)
	}
	if err := c.f.Close(); err != nil {
		tb.Fatal(err)
	}
}

// suiteGenerate builds the vault of spec at root and its corpus.
func suiteGenerate(tb testing.TB, spec suiteSpec, root, corpus string) suiteVault {
	tb.Helper()
	start := time.Now()
	v, _, err := vault.Init(root)
	if err != nil {
		tb.Fatal(err)
	}
	cw := newCorpus(tb, corpus)
	var d suiteVault
	if spec.Week {
		d = suiteGenerateWeek(tb, v, spec, cw)
	} else {
		d = suiteGenerateBatched(tb, v, spec, cw)
	}
	cw.close(tb)
	d.Spec, d.Threads = spec.Name, spec.Threads
	// Derived state a vault in use has: the index, the heads, the caches.
	if _, err := recall.Reindex(v, nil); err != nil {
		tb.Fatal(err)
	}
	if _, err := heads.Refresh(v, heads.RefreshOptions{Trigger: "render", Memory: true, AllThreads: true}); err != nil {
		tb.Fatal(err)
	}
	// A write past gc.auto's loose objects started a pack that may still
	// run: the vault is measured and copied once it is done.
	if err := v.WaitAutoPack(10 * time.Minute); err != nil {
		tb.Fatal(err)
	}
	d.GenSeconds = time.Since(start).Seconds()
	return d
}

// suiteGenerateBatched writes spec.Sessions sessions a hundred (or a tenth
// of them) per transaction, each summarised into a node, and fills the
// ledger with structured events up to spec.Events, a thousand per
// transaction at most.
func suiteGenerateBatched(tb testing.TB, v *vault.Vault, spec suiteSpec, cw *corpusWriter) suiteVault {
	g := newScaleGen(spec.Sessions*spec.Messages, 11)
	r := rand.New(rand.NewPCG(scaleSeed, 12))
	base := time.Date(2025, 1, 6, 9, 0, 0, 0, time.UTC)
	batch := min(100, max(1, spec.Sessions/10))
	batches := (spec.Sessions + batch - 1) / batch
	d := suiteVault{Sessions: spec.Sessions, Thread: suiteThread(7 % spec.Threads)}
	var open []string
	t0 := time.Now()
	for b := 0; b < batches; b++ {
		s0, s1 := b*batch, min(spec.Sessions, (b+1)*batch)
		res, err := v.Update(vault.TxOptions{Command: "bench", LockTimeout: benchLockWait}, func(tx *vault.Tx) error {
			for s := s0; s < s1; s++ {
				t := transcript.Ref{Agent: v.Config.Agent, Session: fmt.Sprintf("s%06d", s)}
				msgs := suiteMessages(g, r, t.Session, spec.Messages, base.Add(time.Duration(s)*37*time.Minute))
				d.TextBytes += cw.add(msgs)
				d.Messages += len(msgs)
				if _, _, err := tx.AppendMessages(t, msgs); err != nil {
					return err
				}
				if err := scope.BindSession(tx, t, suiteThread(s%spec.Threads)); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			tb.Fatal(err)
		}
		d.Events += len(res.Events)
		res, err = v.Update(vault.TxOptions{Command: "bench", LockTimeout: benchLockWait}, func(tx *vault.Tx) error {
			for s := s0; s < s1; s++ {
				t := transcript.Ref{Agent: v.Config.Agent, Session: fmt.Sprintf("s%06d", s)}
				n, _, err := lineage.Summarize(tx, t, lineage.SummaryOptions{Thread: suiteThread(s % spec.Threads)})
				if err != nil {
					return err
				}
				d.Nodes++
				if s == spec.Sessions/2 {
					d.Node = n.ID
				}
			}
			return nil
		})
		if err != nil {
			tb.Fatal(err)
		}
		d.Events += len(res.Events)
		// Structured events: what is left of the target, spread over the
		// batches still to come.
		fill := (spec.Events - d.Events) / (batches - b)
		for fill > 0 {
			n := min(fill, 1000)
			fill -= n
			res, err = v.Update(vault.TxOptions{Command: "bench", LockTimeout: benchLockWait, Session: fmt.Sprintf("s%06d", s1-1)}, func(tx *vault.Tx) error {
				for i := 0; i < n; i++ {
					if err := suiteEvent(tx, g, r, suiteThread(r.IntN(spec.Threads)), &open); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				tb.Fatal(err)
			}
			d.Events += len(res.Events)
			for _, ev := range res.Events {
				d.TextBytes += int64(len(ev.Text))
			}
		}
		if b > 0 && b%10 == 0 {
			fmt.Fprintf(os.Stderr, "generate %s: %d/%d sessions, %d events, %s\n", spec.Name, s1, spec.Sessions, d.Events, time.Since(t0).Round(time.Second))
		}
	}
	return d
}

// suiteGenerateWeek writes a week of one busy person.
func suiteGenerateWeek(tb testing.TB, v *vault.Vault, spec suiteSpec, cw *corpusWriter) suiteVault {
	g := newScaleGen(spec.Sessions*spec.Messages, 21)
	r := rand.New(rand.NewPCG(scaleSeed, 22))
	base := time.Date(2026, 11, 16, 8, 30, 0, 0, time.UTC) // a Monday
	d := suiteVault{Thread: suiteThread(7 % spec.Threads)}
	var open []string
	perDay := spec.Sessions / 7
	agent := v.Config.Agent
	update := func(opts vault.TxOptions, fn func(*vault.Tx) error) *vault.Result {
		opts.Command = "bench"
		res, err := v.Update(opts, fn)
		if err != nil {
			tb.Fatal(err)
		}
		d.Events += len(res.Events)
		for _, ev := range res.Events {
			d.TextBytes += int64(len(ev.Text))
		}
		return res
	}
	type live struct {
		t      transcript.Ref
		thread string
		msgs   []transcript.Message
		next   int
	}
	for day := 0; day < 7; day++ {
		// Two sessions run at once: their prompts interleave, each writes
		// its structured events as it goes, and each ends with a summary
		// and a refresh of the heads it touched.
		for pair := 0; pair < perDay; pair += 2 {
			var sessions []*live
			for k := 0; k < 2 && pair+k < perDay; k++ {
				s := day*perDay + pair + k
				t := transcript.Ref{Agent: agent, Session: fmt.Sprintf("w%d-%03d", day, s)}
				n := 40 + 2*r.IntN(81)
				start := base.Add(time.Duration(day)*24*time.Hour + time.Duration(pair)*75*time.Minute + time.Duration(k)*7*time.Minute)
				l := &live{t: t, thread: suiteThread(r.IntN(spec.Threads)), msgs: suiteMessages(g, r, t.Session, n, start)}
				d.TextBytes += cw.add(l.msgs)
				d.Messages += n
				d.Sessions++
				sessions = append(sessions, l)
				update(vault.TxOptions{Session: t.Session}, func(tx *vault.Tx) error { return scope.BindSession(tx, t, l.thread) })
			}
			for active := len(sessions); active > 0; {
				active = 0
				for _, l := range sessions {
					if l.next >= len(l.msgs) {
						continue
					}
					active++
					turn := l.msgs[l.next:min(len(l.msgs), l.next+2)] // a prompt and its reply
					l.next += len(turn)
					update(vault.TxOptions{Session: l.t.Session, NoCommit: true}, func(tx *vault.Tx) error {
						_, _, err := tx.AppendMessages(l.t, turn)
						return err
					})
					if r.IntN(4) == 0 {
						update(vault.TxOptions{Session: l.t.Session}, func(tx *vault.Tx) error {
							return suiteEvent(tx, g, r, l.thread, &open)
						})
					}
					if l.next >= len(l.msgs) {
						var made *node.Node
						update(vault.TxOptions{Session: l.t.Session}, func(tx *vault.Tx) error {
							if err := tx.CommitTranscript(l.t); err != nil {
								return err
							}
							n, _, err := lineage.Summarize(tx, l.t, lineage.SummaryOptions{Thread: l.thread})
							made = n
							return err
						})
						d.Nodes++
						if day == 3 && d.Node == "" {
							d.Node = made.ID
						}
						if _, err := heads.Refresh(v, heads.RefreshOptions{TxOptions: vault.TxOptions{Session: l.t.Session},
							Trigger: "session-end", Memory: true, Affected: true}); err != nil {
							tb.Fatal(err)
						}
					}
				}
			}
		}
		// The day's learnings and decisions.
		_, err := continuity.UpdateContinuity(v, continuity.ContinuityOptions{}, func(ct *continuity.ContinuityTx) error {
			for i := 0; i < 6; i++ {
				if _, err := ct.Learn(continuity.LearnInput{Error: g.message(true, ""), Cause: g.message(true, ""),
					Prevention: g.message(true, ""), Scope: fmt.Sprintf("module:m%02d", r.IntN(12))}); err != nil {
					return err
				}
			}
			_, err := ct.Decide(continuity.DecideInput{Decision: g.message(true, ""), Rationale: g.message(true, ""), Scope: fmt.Sprintf("module:m%02d", r.IntN(12))})
			return err
		})
		if err != nil {
			tb.Fatal(err)
		}
		// Hand edits, committed with git as a person would.
		d.HandEdits += suiteHandEdits(tb, v.Root, day, r, spec.Threads)
	}
	return d
}

// suiteHandEdits appends a line to MEMORY.md and to two thread heads and
// commits them with the git CLI. It returns the number of files edited.
func suiteHandEdits(tb testing.TB, root string, day int, r *rand.Rand, threads int) int {
	if _, err := exec.LookPath("git"); err != nil {
		return 0
	}
	files := []string{"MEMORY.md"}
	for k := 0; k < 2; k++ {
		kind, slug, _ := strings.Cut(suiteThread(r.IntN(threads)), ":")
		files = append(files, filepath.Join("threads", kind, slug+".md"))
	}
	var edited []string
	for _, f := range files {
		p := filepath.Join(root, f)
		data, err := os.ReadFile(p)
		if err != nil {
			continue // not rendered yet
		}
		data = append(data, []byte("\nNote by hand, day "+strconv.Itoa(day)+": check this with the team.\n")...)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			tb.Fatal(err)
		}
		edited = append(edited, f)
	}
	if len(edited) == 0 {
		return 0
	}
	for _, args := range [][]string{append([]string{"add", "--"}, edited...), {"commit", "-q", "-m", fmt.Sprintf("person: notes of day %d", day)}} {
		cmd := exec.Command("git", append([]string{"-C", root}, args...)...)
		cmd.Env = benchEnv()
		if out, err := cmd.CombinedOutput(); err != nil {
			tb.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return len(edited)
}

// suiteEnsure generates the vault of spec into MEMVAULT_BENCH_CACHE (or
// a temporary folder) unless it is there already, and returns its folder
// and description.
func suiteEnsure(tb testing.TB, spec suiteSpec) (string, suiteVault) {
	tb.Helper()
	cache := os.Getenv("MEMVAULT_BENCH_CACHE")
	if cache == "" {
		cache = tb.TempDir()
	}
	src := filepath.Join(cache, "suite-"+spec.Name+"-v2") // v2: compact transcripts, packed as written (issue 22)
	var d suiteVault
	if data, err := os.ReadFile(filepath.Join(src, "done.json")); err == nil && json.Unmarshal(data, &d) == nil {
		fmt.Fprintf(os.Stderr, "suite: using the %s vault generated in %s (%.0f s to generate)\n", spec.Name, src, d.GenSeconds)
		return src, d
	}
	fmt.Fprintf(os.Stderr, "suite: generating the %s vault in %s\n", spec.Name, src)
	if err := os.RemoveAll(src); err != nil {
		tb.Fatal(err)
	}
	if err := os.MkdirAll(src, 0o755); err != nil {
		tb.Fatal(err)
	}
	d = suiteGenerate(tb, spec, filepath.Join(src, ".memory"), filepath.Join(src, "corpus.jsonl"))
	data, _ := json.Marshal(d)
	if err := os.WriteFile(filepath.Join(src, "done.json"), data, 0o644); err != nil {
		tb.Fatal(err)
	}
	fmt.Fprintf(os.Stderr, "suite: %s vault generated in %.0f s\n", spec.Name, d.GenSeconds)
	return src, d
}

// suiteCached returns a private copy of the cached vault of spec (see
// suiteEnsure), since the timed commands write to it.
func suiteCached(tb testing.TB, spec suiteSpec) suiteVault {
	tb.Helper()
	src, d := suiteEnsure(tb, spec)
	d.root, d.corpus = suiteCopy(tb, src)
	return d
}

// suiteCopy copies a cached vault and its corpus into a temporary folder.
func suiteCopy(tb testing.TB, src string) (root, corpus string) {
	dir := tb.TempDir()
	if out, err := exec.Command("cp", "-a", filepath.Join(src, ".memory"), filepath.Join(src, "corpus.jsonl"), dir).CombinedOutput(); err != nil {
		tb.Fatalf("cp: %v\n%s", err, out)
	}
	return filepath.Join(dir, ".memory"), filepath.Join(dir, "corpus.jsonl")
}

// TestSuiteGenerate only generates the cached vaults MEMVAULT_SUITE names
// (skipped without it), so that a slow generation can run on its own.
func TestSuiteGenerate(t *testing.T) {
	sel := os.Getenv("MEMVAULT_SUITE")
	if sel == "" || os.Getenv("MEMVAULT_BENCH_CACHE") == "" {
		t.Skip("set MEMVAULT_SUITE and MEMVAULT_BENCH_CACHE to generate the suite's vaults")
	}
	for _, name := range strings.Split(sel, ",") {
		spec, ok := suiteSpecs[strings.TrimSpace(name)]
		if !ok {
			t.Fatalf("MEMVAULT_SUITE: %q: want small, week or large", name)
		}
		suiteEnsure(t, spec)
	}
}
