package continuity

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/memvault/memvault/vault/codec"
	"github.com/memvault/memvault/vault/heads"
	"github.com/memvault/memvault/vault/scope"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/memory"
	"github.com/memvault/memvault/vault/testvault"
)

// derivedView is one derived file under the contract: what a reader gets
// through it, and what the full fold of the ledger gives, both in a form
// reflect.DeepEqual compares. The per-segment files (corrections) are not
// Derived views, so they say nothing about continuing.
type derivedView struct {
	name   string
	file   func(v *vault.Vault) string
	cached func(t *testing.T, v *vault.Vault) (any, error)
	full   func(t *testing.T, v *vault.Vault) (any, error)
	// continues reports whether the file can be brought up to date
	// without a rebuild; nil for files kept per segment.
	continues func(v *vault.Vault) bool
}

func continues[T any](d *vault.Derived[T]) func(v *vault.Vault) bool {
	return func(v *vault.Vault) bool {
		segs, stamps, err := v.SegmentStamps()
		if err != nil {
			return false
		}
		_, _, _, ok := d.LoadStamped(v, segs, stamps)
		return ok
	}
}

// rowsOf is what a fold of rows says: every event with its marks, without
// the source and harness, which the heads never read and the cached rows
// leave out.
type foldedRow struct {
	vault.Event
	RetractedBy, SupersededBy, ClosedBy string
}

func rowsOf(st *vault.State) []foldedRow {
	out := make([]foldedRow, 0, len(st.Rows))
	for _, r := range st.Rows {
		ev := *r.Event
		ev.Source, ev.Harness = "", ""
		if len(ev.Data) == 0 {
			ev.Data = nil
		}
		out = append(out, foldedRow{ev, r.RetractedBy, r.SupersededBy, r.ClosedBy})
	}
	return out
}

// scopeOf is what a scope says: the sessions' threads, the linked pairs
// (a set) and the known threads.
func scopeOf(sc *scope.Scope, tip string) any {
	pairs := map[string]bool{}
	for _, p := range sc.Pairs {
		pairs[p[0]+" "+p[1]] = true
	}
	return []any{sc.Sessions(), vault.SortedKeys(pairs), sc.Threads(), tip}
}

// marksOf is the marks of the rows of one thread, by id.
func marksOf(st *vault.State, thread string) map[string][3]string {
	out := map[string][3]string{}
	for _, r := range st.Rows {
		if r.Thread == thread {
			out[r.ID] = [3]string{r.RetractedBy, r.SupersededBy, r.ClosedBy}
		}
	}
	return out
}

// viewOf is what heads are rendered from: MEMORY.md and every thread head
// as rendered, the heads' bookkeeping, which threads each session wrote to,
// and when each thread last changed.
func viewOf(t *testing.T, vw *heads.HeadView) any {
	var out []string
	for _, tg := range append([]heads.HeadTarget{heads.MemoryTarget()}, func() (ts []heads.HeadTarget) {
		for _, k := range vw.Threads {
			ts = append(ts, heads.HeadTarget{Thread: k})
		}
		return ts
	}()...) {
		doc, err := heads.RenderHead(vw, tg)
		if err != nil {
			t.Fatalf("render %q: %v", tg.Thread, err)
		}
		out = append(out, tg.Thread+"\n"+string(doc.Bytes))
		for s := range 5 {
			out = append(out, fmt.Sprint(tg.Thread, " s", s, " ", vw.SessionWrote(fmt.Sprint("s", s), tg.Thread)))
		}
	}
	heads, _ := json.Marshal(vw.Heads)
	return []any{out, string(heads), vw.Threads, vw.ThreadLast, vw.LastMemory}
}

var derivedViews = []derivedView{
	{
		name:      "heads-state",
		file:      func(v *vault.Vault) string { return heads.StateView.Path(v.Root) },
		continues: continues(heads.StateView),
		cached: func(t *testing.T, v *vault.Vault) (any, error) {
			st, tip, err := heads.FoldedState(v)
			if err != nil {
				return nil, err
			}
			return []any{rowsOf(st), tip}, nil
		},
		full: func(t *testing.T, v *vault.Vault) (any, error) {
			segs, _, err := vault.ListSegments(v.Root)
			if err != nil {
				return nil, err
			}
			st, tip, _, err := v.FoldAll(segs)
			if err != nil {
				return nil, err
			}
			return []any{rowsOf(st), tip}, nil
		},
	},
	{
		name:      "scope",
		file:      func(v *vault.Vault) string { return scope.View.Path(v.Root) },
		continues: continues(scope.View),
		cached: func(t *testing.T, v *vault.Vault) (any, error) {
			sc, key, err := scope.View.Load(v)
			if err != nil {
				return nil, err
			}
			return scopeOf(sc, key.Tip), nil
		},
		full: func(t *testing.T, v *vault.Vault) (any, error) {
			// From every segment's lines: the per-segment facts are set
			// aside for the fold and put back after.
			facts := codec.FilePath(v.Root, scope.FactsFile)
			if kept, err := os.ReadFile(facts); err == nil {
				os.Remove(facts)
				defer os.WriteFile(facts, kept, 0o644)
			}
			segs, stamps, err := v.SegmentStamps()
			if err != nil {
				return nil, err
			}
			sc, tip, _, err := scope.FromFacts(v, segs, stamps)
			if err != nil {
				return nil, err
			}
			return scopeOf(sc, tip), nil
		},
	},
	{
		// The policy (docs/POLICY.md): its rules, where each came from,
		// the events it ignored.
		name:      "policy",
		file:      func(v *vault.Vault) string { return vault.PolicyView.Path(v.Root) },
		continues: continues(vault.PolicyView),
		cached: func(t *testing.T, v *vault.Vault) (any, error) {
			p, key, err := vault.PolicyView.Load(v)
			if err != nil {
				return nil, err
			}
			return []any{p.RulesSorted(), p.Ignored, p.Events, key.Tip}, nil
		},
		full: func(t *testing.T, v *vault.Vault) (any, error) {
			segs, _, err := vault.ListSegments(v.Root)
			if err != nil {
				return nil, err
			}
			st, tip, _, err := v.FoldAll(segs)
			if err != nil {
				return nil, err
			}
			var evs []*vault.Event
			for _, r := range st.Rows {
				evs = append(evs, r.Event)
			}
			p := vault.FoldPolicy(evs)
			return []any{p.RulesSorted(), p.Ignored, p.Events, tip}, nil
		},
	},
	{
		// The protocol's state: what status reads (the summary, audit and
		// head bookkeeping) and the whole fold, decoded when asked for.
		name:      "continuity",
		file:      func(v *vault.Vault) string { return contView.Path(v.Root) },
		continues: continues(contView),
		cached: func(t *testing.T, v *vault.Vault) (any, error) {
			cfg, st, err := continuityConfigState(v)
			if err != nil {
				return nil, err
			}
			sum, err := st.summary(cfg)
			if err != nil {
				return nil, err
			}
			c, err := st.full()
			if err != nil {
				return nil, err
			}
			st.saveIfDirty(cfg)
			return []any{sum, st.lastAudit, bookJSON(st.head), contFingerprint(t, c), st.key.Tip}, nil
		},
		full: func(t *testing.T, v *vault.Vault) (any, error) {
			cfg, err := loadContinuityConfig(v)
			if err != nil {
				return nil, err
			}
			segs, _, err := vault.ListSegments(v.Root)
			if err != nil {
				return nil, err
			}
			st, tip, _, err := v.FoldAll(segs)
			if err != nil {
				return nil, err
			}
			c := foldContinuity(st.Rows, nil)
			return []any{summarize(c, cfg, today(v)), c.LastAudit, bookJSON(c.head), contFingerprint(t, c), tip}, nil
		},
	},
	{
		name: "heads-view",
		file: func(v *vault.Vault) string { return heads.HeadViewFor(heads.HeadsConfig{}).Path(v.Root) },
		continues: func(v *vault.Vault) bool {
			cfg, _ := heads.LoadHeadsConfig(v)
			return continues(heads.HeadViewFor(cfg))(v)
		},
		cached: func(t *testing.T, v *vault.Vault) (any, error) {
			cfg, err := heads.LoadHeadsConfig(v)
			if err != nil {
				return nil, err
			}
			vc, err := heads.PreparedView(v, cfg)
			if err != nil {
				return nil, err
			}
			return viewOf(t, vc.View(cfg)), nil
		},
		full: func(t *testing.T, v *vault.Vault) (any, error) {
			cfg, err := heads.LoadHeadsConfig(v)
			if err != nil {
				return nil, err
			}
			segs, _, err := vault.ListSegments(v.Root)
			if err != nil {
				return nil, err
			}
			st, _, _, err := v.FoldAll(segs)
			if err != nil {
				return nil, err
			}
			return viewOf(t, heads.BuildView(st, cfg)), nil
		},
	},
	{
		name: "corrections",
		file: func(v *vault.Vault) string { return codec.FilePath(v.Root, vault.AllCorrectionsFile) },
		cached: func(t *testing.T, v *vault.Vault) (any, error) {
			all, err := v.CorrectionRows()
			if err != nil {
				return nil, err
			}
			var rows []vault.Correction
			for _, sr := range all {
				rows = append(rows, sr.Rows...)
			}
			return rows, nil
		},
		full: func(t *testing.T, v *vault.Vault) (any, error) {
			segs, _, err := vault.ListSegments(v.Root)
			if err != nil {
				return nil, err
			}
			var rows []vault.Correction
			for _, s := range segs {
				data, err := vault.ReadComplete(v.Root, s.String())
				if err != nil {
					return nil, err
				}
				_, _, r := vault.CorrectionsIn(data)
				rows = append(rows, r...)
			}
			return rows, nil
		},
	},
	{
		// A filtered load reads only the corrections its rows need,
		// through the per-segment corrections file.
		name: "filtered load",
		file: func(v *vault.Vault) string { return codec.FilePath(v.Root, vault.CorrectionFile) },
		cached: func(t *testing.T, v *vault.Vault) (any, error) {
			st, err := v.LoadStateWith([][]byte{[]byte(`"thread":"project:p1"`)})
			if err != nil {
				return nil, err
			}
			return marksOf(st, "project:p1"), nil
		},
		full: func(t *testing.T, v *vault.Vault) (any, error) {
			segs, _, err := vault.ListSegments(v.Root)
			if err != nil {
				return nil, err
			}
			st, _, _, err := v.FoldAll(segs)
			if err != nil {
				return nil, err
			}
			return marksOf(st, "project:p1"), nil
		},
	},
}

// TestDerivedMatchesFullFold is the contract of every Derived view: after
// any sequence of appends, corrections, torn lines, new segments, replaced
// or shrunk segments and damaged files, a load through the view's file
// equals the full fold, and so does the load after it (which reads what
// the first one saved).
func TestDerivedMatchesFullFold(t *testing.T) {
	t.Parallel()
	for seed := int64(1); seed <= 4; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewSource(seed))
			v := testvault.New(t)
			v.Config.Ledger.SegmentBytes = 1500
			var ids []string
			check := func(step string) {
				t.Helper()
				for _, dv := range derivedViews {
					want, err := dv.full(t, v)
					if err != nil {
						t.Fatalf("%s: %s: full fold: %v", step, dv.name, err)
					}
					for _, pass := range []string{"first", "second"} {
						got, err := dv.cached(t, v)
						if err != nil {
							t.Fatalf("%s: %s: %s load: %v", step, dv.name, pass, err)
						}
						if !reflect.DeepEqual(got, want) {
							t.Fatalf("%s: %s: %s load differs from the full fold:\n got %+v\nwant %+v", step, dv.name, pass, got, want)
						}
					}
				}
			}
			write := func(opts vault.TxOptions, fn func(tx *vault.Tx) error) {
				t.Helper()
				if _, err := v.Update(opts, fn); err != nil {
					t.Fatal(err)
				}
			}
			lastSeg := func() string {
				segs, _, _ := vault.ListSegments(v.Root)
				return v.SegPath(segs[len(segs)-1])
			}
			plain := false // the last step appended plain events only
			for step := 0; step < 60; step++ {
				op := rng.Intn(11)
				name := ""
				wasPlain := plain
				plain = false
				switch {
				case op < 1 && len(ids) >= 3:
					name = fmt.Sprintf("%d: continuity", step)
					plain = true
					if _, err := UpdateContinuity(v, ContinuityOptions{}, func(ct *ContinuityTx) error {
						if rng.Intn(2) == 0 {
							return ct.Next(fmt.Sprintf("next step %d", step), step%3 == 0) // some on top of the queue
						}
						_, err := ct.Learn(LearnInput{Error: fmt.Sprintf("error %d", step), Prevention: "check first"})
						return err
					}); err != nil {
						t.Fatal(err)
					}
				case op < 5 || len(ids) < 3:
					plain = true
					n := 1 + rng.Intn(4)
					name = fmt.Sprintf("%d: remember %d", step, n)
					opts := vault.TxOptions{Agent: fmt.Sprintf("a%d", rng.Intn(2)), Session: fmt.Sprintf("s%d", rng.Intn(5))}
					write(opts, func(tx *vault.Tx) error {
						for range n {
							in := memory.Input{Text: fmt.Sprintf("fact %d at step %d", rng.Int(), step)}
							if rng.Intn(6) == 0 {
								in.Kind = "blocker" // folded by the protocol too
							}
							if rng.Intn(2) == 0 {
								in.Thread = fmt.Sprintf("project:p%d", rng.Intn(3))
							}
							if len(ids) > 0 && rng.Intn(4) == 0 {
								in.Links = []string{ids[rng.Intn(len(ids))]}
								plain = false // a link may join threads: the scope rebuilds
							}
							ev, err := memory.Remember(tx, in)
							if err != nil {
								return err
							}
							ids = append(ids, ev.ID)
						}
						if rng.Intn(8) == 0 { // a rule of the policy's view, for a kind nothing here writes
							_, err := tx.SetPolicy(map[string][]string{fmt.Sprintf("kind%d", rng.Intn(3)): {"cli"}})
							return err
						}
						return nil
					})
				case op == 5:
					target := ids[rng.Intn(len(ids))]
					name = fmt.Sprintf("%d: retract %s", step, target)
					if _, err := v.Update(vault.TxOptions{}, func(tx *vault.Tx) error { _, err := memory.Retract(tx, target, "wrong"); return err }); err != nil {
						continue // already corrected, or itself a correction
					}
				case op == 6:
					target := ids[rng.Intn(len(ids))]
					name = fmt.Sprintf("%d: supersede %s", step, target)
					var sup *vault.Event
					if _, err := v.Update(vault.TxOptions{}, func(tx *vault.Tx) error {
						var err error
						sup, err = memory.Supersede(tx, target, fmt.Sprintf("corrected at step %d", step))
						return err
					}); err != nil {
						continue
					}
					ids = append(ids, sup.ID)
				case op == 7:
					name = fmt.Sprintf("%d: torn last line", step)
					f, err := os.OpenFile(lastSeg(), os.O_APPEND|os.O_WRONLY, 0)
					if err != nil {
						t.Fatal(err)
					}
					f.WriteString(`{"id":"e_torn","kind":"fa`)
					f.Close()
				case op == 8:
					// The same bytes under a new inode: an editor that
					// replaces the file. Or a shrunk one: its last lines cut.
					path := lastSeg()
					data, err := os.ReadFile(path)
					if err != nil {
						t.Fatal(err)
					}
					if rng.Intn(2) == 0 {
						name = fmt.Sprintf("%d: replaced segment", step)
						os.Remove(path)
					} else {
						name = fmt.Sprintf("%d: shrunk segment", step)
						data = bytes.TrimRight(data, "\n")
						if i := bytes.LastIndexByte(data, '\n'); i >= 0 {
							data = data[:i+1]
						} else {
							data = nil
						}
						ids = ids[:0] // a cut event may be gone: pick targets afresh
					}
					if err := os.WriteFile(path, data, 0o644); err != nil {
						t.Fatal(err)
					}
					// Committed as it now is, as a person overriding
					// the pre-commit hook would: a writer refuses a
					// segment that lost committed lines.
					testvault.CommitAsIs(t, v, path)
					// The cut is a rewrite of committed history, which
					// every writer now refuses; taken as the vault's
					// own, as memvault repair takes what it mends.
					if err := v.TrustRepair(); err != nil {
						t.Fatal(err)
					}
					if len(ids) == 0 {
						ids = append(ids, testvault.Remember(t, v, "after the cut").ID)
					}
				case op == 9:
					// A line rewritten in place: the stamps show only a new
					// mtime. Checked, then put back, since writers refuse a
					// ledger whose hashes do not match.
					path := lastSeg()
					data, err := os.ReadFile(path)
					if err != nil {
						t.Fatal(err)
					}
					i := bytes.Index(data, []byte(`"text":"`))
					if i < 0 {
						continue
					}
					edited := bytes.Clone(data)
					edited[i+len(`"text":"`)] ^= 0x20
					if err := os.WriteFile(path, edited, 0o644); err != nil {
						t.Fatal(err)
					}
					check(fmt.Sprintf("%d: line edited in place", step))
					name = fmt.Sprintf("%d: edit undone", step)
					if err := os.WriteFile(path, data, 0o644); err != nil {
						t.Fatal(err)
					}
				default:
					// Garbage, a truncated file, or another view's file.
					dv := derivedViews[rng.Intn(len(derivedViews))]
					path := dv.file(v)
					data, _ := os.ReadFile(path)
					switch rng.Intn(3) {
					case 0:
						name = fmt.Sprintf("%d: garbage %s", step, dv.name)
						data = []byte("garbage")
					case 1:
						name = fmt.Sprintf("%d: truncated %s", step, dv.name)
						data = data[:len(data)/2]
					default:
						name = fmt.Sprintf("%d: flipped byte in %s", step, dv.name)
						if len(data) > 0 {
							data[rng.Intn(len(data))] ^= 0x20
						}
					}
					os.MkdirAll(filepath.Dir(path), 0o755)
					os.WriteFile(path, data, 0o644)
				}
				if plain && wasPlain {
					// Two appends in a row: the file the last check saved
					// must carry over, or the contract above would only
					// ever test rebuilds.
					for _, dv := range derivedViews {
						if dv.continues != nil && !dv.continues(v) {
							t.Fatalf("%s: %s: rebuilt after plain appends", name, dv.name)
						}
					}
				}
				check(name)
			}
			if segs, _, _ := vault.ListSegments(v.Root); len(segs) < 3 {
				t.Fatalf("want several segments, got %d", len(segs))
			}
		})
	}
}

// A file written by another view, valid in every other way, is rebuilt.
func TestDerivedRejectsAnotherViewsFile(t *testing.T) {
	v := testvault.New(t)
	testvault.Remember(t, v, "one fact")
	if _, _, err := heads.FoldedState(v); err != nil {
		t.Fatal(err)
	}
	other := *heads.StateView
	other.Name = "other-view"
	data, err := os.ReadFile(heads.StateView.Path(v.Root))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(other.Path(v.Root), data, 0o644); err != nil {
		t.Fatal(err)
	}
	segs, stamps, _ := v.SegmentStamps()
	if _, _, _, ok := other.LoadStamped(v, segs, stamps); ok {
		t.Fatal("another view's file was accepted")
	}
	if _, _, _, ok := heads.StateView.LoadStamped(v, segs, stamps); !ok {
		t.Fatal("the view's own file was refused")
	}
}
