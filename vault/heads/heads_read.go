package heads

// Reading the heads without writing them: a dry render (of the ledger as
// it is or at a past commit), the list of threads and heads, and the
// resolution of a command's head argument.

import (
	"errors"
	"io/fs"
	"path"
	"slices"
	"sort"
	"strings"

	"github.com/memvault/memvault/render"
	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/fault"
	"github.com/memvault/memvault/vault/gitrepo"

	"github.com/go-git/go-git/v5/plumbing/object"
)

// RenderOptions select heads for a dry render.
type RenderOptions struct {
	Memory     bool
	Threads    []vault.Thread
	AllThreads bool
	// At renders the vault as it was at this commit: its ledger and its
	// memvault.toml, read from git.
	At string
	// Explain lists every row the budget left out in the reports.
	Explain bool
	// Keep, when set, renders from the rows it keeps only: the heads as a
	// reader who may not see the others is shown them (an agent's view,
	// continuity.AgentHeads), the hand edits of the files left out.
	Keep func(r *vault.Row) bool
}

// RenderHeads renders the selected heads without writing anything.
func RenderHeads(v *vault.Vault, opts RenderOptions) ([]*render.Doc, error) {
	var vw *HeadView
	var cfg HeadsConfig
	var err error
	if opts.At != "" || opts.Keep != nil {
		var st *vault.State
		if opts.At != "" {
			st, cfg, err = stateAt(v, opts.At)
		} else if cfg, err = LoadHeadsConfig(v); err == nil {
			st, _, err = FoldedState(v)
		}
		if err == nil {
			if opts.Keep != nil {
				st = &vault.State{Rows: slices.DeleteFunc(slices.Clone(st.Rows), func(r *vault.Row) bool { return !opts.Keep(r) })}
			}
			vw = BuildView(st, cfg)
			vw.input.Explain = opts.Explain
		}
	} else if cfg, err = LoadHeadsConfig(v); err == nil {
		vw, err = HeadViewOf(v, cfg, opts.Explain)
	}
	if err != nil {
		return nil, err
	}
	var targets []HeadTarget
	if opts.Memory {
		targets = append(targets, MemoryTarget())
	}
	for _, t := range opts.Threads {
		if !vw.HasThread(t.String()) {
			e := fault.New(vault.ErrNotFound, "thread %s: no such thread", t)
			if opts.At != "" {
				e.Msg += " at " + opts.At
			}
			return nil, e.WithHint("list threads with: memvault threads")
		}
		targets = append(targets, threadTarget(t))
	}
	if opts.AllThreads {
		keys := append([]string(nil), vw.Threads...)
		for _, t := range cfg.Threads {
			keys = append(keys, t.Key)
		}
		seen := map[string]bool{}
		for _, k := range keys {
			if t, err := vault.ParseThread(k); err == nil && !seen[k] {
				seen[k] = true
				targets = append(targets, threadTarget(t))
			}
		}
	}
	var docs []*render.Doc
	for _, t := range targets {
		d, err := RenderHead(vw, t)
		if err != nil {
			return nil, err
		}
		docs = append(docs, d)
	}
	return docs, nil
}

// CurrentHeads returns, for each of heads (MEMORY.md or a thread head's
// path), the text the file holds once it is refreshed, without writing
// anything but the derived caches: the file as it is when no row reached
// the head since its last render, else the render of the ledger merged
// with the file's hand edits, as a refresh would merge them (a section in
// conflict keeps the person's text). A head never rendered that has no
// file gives nil. It is what a hook injects when the refresh itself must
// wait for a busy vault, a head someone else holds, or a spent budget; a
// current head costs a look at the derived view and a read of the file.
func CurrentHeads(v *vault.Vault, heads ...string) ([][]byte, error) {
	cfg, err := LoadHeadsConfig(v)
	if err != nil {
		return nil, err
	}
	vw, err := HeadViewOf(v, cfg, false)
	if err != nil {
		return nil, err
	}
	out := make([][]byte, len(heads))
	for i, head := range heads {
		if out[i], err = currentHead(v, vw, head); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func currentHead(v *vault.Vault, vw *HeadView, head string) ([]byte, error) {
	t, ok := TargetOf(head)
	if !ok || head == vault.ContinuityHead {
		return nil, fault.New(vault.ErrInvalid, "head %q: want MEMORY.md or threads/<kind>/<slug>.md", head)
	}
	ours, err := v.Files().ReadFile(v.Abs(t.Rel))
	exists := err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fault.IO("read "+head, err)
	}
	book := vw.Heads[head].book()
	switch {
	case exists && !vw.Stale(head, t.Thread) && len(book.Deferred) == 0:
		return ours, nil
	case !exists && !book.Rendered, t.Thread != "" && !vw.HasThread(t.Thread):
		return ours, nil
	}
	doc, err := RenderHead(vw, t)
	if err != nil {
		return nil, err
	}
	theirsBlob := gitrepo.BlobHash(doc.Bytes)
	f, err := mergeFile(v, HeadMerge{Rel: t.Rel, thread: t.Thread, Theirs: doc.Bytes, Book: book},
		vault.MustRel(vault.RenderedDir, head), theirsBlob)
	if err != nil {
		return nil, err
	}
	if f.status == "unchanged" {
		return f.ours, nil
	}
	return f.result, nil
}

// stateAt folds the ledger and reads memvault.toml as they were at rev.
func stateAt(v *vault.Vault, rev string) (*vault.State, HeadsConfig, error) {
	tree, err := v.Repo.TreeAt(rev)
	if err != nil {
		return nil, HeadsConfig{}, err
	}
	if tree == nil {
		return nil, HeadsConfig{}, fault.New(vault.ErrNotFound, "commit %q: the vault has no commits", rev)
	}
	var cfgData []byte
	if f, err := tree.File(vault.ConfigFile); err == nil {
		s, err := f.Contents()
		if err != nil {
			return nil, HeadsConfig{}, &vault.Error{Class: vault.ErrCorrupt, Msg: "git: read " + vault.ConfigFile + " at " + rev + ": " + err.Error(), Err: err}
		}
		cfgData = []byte(s)
	}
	vc, err := vault.DecodeConfig(cfgData)
	if err != nil {
		return nil, HeadsConfig{}, err
	}
	cfg, err := ConfigOf(&vc)
	if err != nil {
		return nil, HeadsConfig{}, err
	}
	type segData struct {
		seg  vault.Segment
		data []byte
	}
	var segs []segData
	if lt, err := tree.Tree("ledger"); err == nil {
		err := lt.Files().ForEach(func(f *object.File) error {
			parts := strings.Split(f.Name, "/")
			if len(parts) != 3 {
				return nil
			}
			s, ok := vault.SegmentFromPath(path.Join("ledger", f.Name))
			if !ok {
				return nil
			}
			c, err := f.Contents()
			if err != nil {
				return err
			}
			segs = append(segs, segData{s, []byte(c)})
			return nil
		})
		if err != nil {
			return nil, HeadsConfig{}, &vault.Error{Class: vault.ErrCorrupt, Msg: "git: read ledger at " + rev + ": " + err.Error(), Err: err}
		}
	}
	sort.Slice(segs, func(i, j int) bool { return segs[i].seg.Less(segs[j].seg) })
	st := &vault.State{ByID: map[string]*vault.Row{}}
	tip := ""
	for _, s := range segs {
		tip = vault.FoldLines(st, s.data, tip)
	}
	return st, cfg, nil
}

// Heads returns the view the commands print: the configuration, the
// bookkeeping of every head, and the rows of every thread.
func Heads(v *vault.Vault) (*HeadsInfo, error) {
	st, _, err := FoldedState(v)
	if err != nil {
		return nil, err
	}
	return HeadsOf(v, st)
}

// HeadsOf is Heads from st, v's folded state, which it only reads: a
// caller that has folded the ledger already (the web view's overview)
// shares it.
func HeadsOf(v *vault.Vault, st *vault.State) (*HeadsInfo, error) {
	cfg, err := LoadHeadsConfig(v)
	if err != nil {
		return nil, err
	}
	// The heads' bookkeeping and the threads from the prepared view (a
	// cache that TestDerivedMatchesFullFold holds to BuildView), the
	// counts from one pass over the rows: BuildView itself decodes every
	// node and head event, a tenth of a second on a vault of 100,000 rows,
	// which the web view's overview could not afford.
	vc, err := PreparedView(v, cfg)
	if err != nil {
		return nil, err
	}
	vw := vc.View(cfg)
	info := &HeadsInfo{Config: cfg, Threads: []ThreadInfo{}}
	keys := append([]string(nil), vw.Threads...)
	for _, t := range cfg.Threads {
		keys = append(keys, t.Key)
	}
	seen := map[string]bool{}
	open := map[string]int{}
	blockers := map[string]int{}
	rows := map[string]int{}
	lastTS := map[string]string{}
	for _, r := range st.Rows {
		// The rows BuildView renders: content that holds.
		kind := r.EffectiveKind()
		if !ContentKinds[kind] || !r.Holds() {
			continue
		}
		rows[r.Thread]++
		lastTS[r.Thread] = r.TS
		switch kind {
		case "commitment.open":
			open[r.Thread]++
		case "blocker":
			blockers[r.Thread]++
		}
	}
	for _, k := range keys {
		if seen[k] {
			continue
		}
		seen[k] = true
		th, err := vault.ParseThread(k)
		if err != nil {
			continue
		}
		ti := ThreadInfo{Key: k, Head: th.HeadPath().String(), Rows: rows[k], Open: open[k], Blockers: blockers[k], LastActivity: lastTS[k], Aliases: []string{}}
		for _, t := range cfg.Threads {
			if t.Key == k {
				ti.Aliases = t.Aliases
			}
		}
		h := vw.Heads[ti.Head]
		switch {
		case h != nil && len(h.Conflicts) > 0:
			ti.HeadState = "conflict"
		case h != nil && len(h.Deferred) > 0:
			ti.HeadState = "deferred"
		case h == nil || h.LastRendered == nil:
			ti.HeadState = "not rendered"
		case !exists(v, th.HeadPath()):
			ti.HeadState = "missing"
		case vw.Stale(ti.Head, k):
			ti.HeadState = "stale"
		default:
			ti.HeadState = "fresh"
		}
		info.Threads = append(info.Threads, ti)
	}
	sort.SliceStable(info.Threads, func(i, j int) bool { return info.Threads[i].Key < info.Threads[j].Key })
	return info, nil
}

// HeadsInfo is what `memvault threads` lists.
type HeadsInfo struct {
	Config  HeadsConfig  `json:"-"`
	Threads []ThreadInfo `json:"threads"`
}

// ThreadInfo describes one thread and its head.
type ThreadInfo struct {
	Key          string   `json:"key"`
	Aliases      []string `json:"aliases"`
	Head         string   `json:"head"`
	HeadState    string   `json:"head_state"` // fresh, stale, not rendered, missing, deferred, conflict
	Rows         int      `json:"rows"`       // rows that hold
	Open         int      `json:"open_commitments"`
	Blockers     int      `json:"blockers"`
	LastActivity string   `json:"last_activity,omitempty"`
}

// ResolveHeadArg turns a command argument into a head path: MEMORY.md,
// CONTINUITY.md, a thread key or alias, or a head's path.
func ResolveHeadArg(v *vault.Vault, arg string, allowContinuity bool) (vault.RelPath, string, error) {
	switch arg {
	case "", vault.MemoryHead:
		return vault.MustRel(vault.MemoryHead), "", nil
	case vault.ContinuityHead:
		if allowContinuity {
			return vault.MustRel(vault.ContinuityHead), "", nil
		}
	}
	if t, ok := TargetOf(arg); ok {
		arg = t.Thread
	}
	cfg, err := LoadHeadsConfig(v)
	if err != nil {
		return vault.RelPath{}, "", err
	}
	th, err := cfg.ResolveThread(arg)
	if err != nil {
		return vault.RelPath{}, "", err
	}
	st, _, err := FoldedState(v)
	if err != nil {
		return vault.RelPath{}, "", err
	}
	if !BuildView(st, cfg).HasThread(th.String()) {
		e := fault.New(vault.ErrNotFound, "thread %s: no such thread", th)
		return vault.RelPath{}, "", e.WithHint("list threads with: memvault threads")
	}
	return th.HeadPath(), th.String(), nil
}

// StaleHeads lists the heads a render has written whose rows changed since
// (`threads` says "stale" of them): MEMORY.md first, then the thread heads
// by path. It reads the prepared view, as `threads` does, never the files.
func StaleHeads(v *vault.Vault) ([]string, error) {
	cfg, err := LoadHeadsConfig(v)
	if err != nil {
		return nil, err
	}
	vc, err := PreparedView(v, cfg)
	if err != nil {
		return nil, err
	}
	vw := vc.View(cfg)
	stale := func(head, thread string) bool {
		h := vw.Heads[head]
		return h != nil && h.LastRendered != nil && vw.Stale(head, thread)
	}
	var out, threads []string
	if stale(vault.MemoryHead, "") {
		out = append(out, vault.MemoryHead)
	}
	for _, k := range vw.Threads {
		if t, err := vault.ParseThread(k); err == nil && stale(t.HeadPath().String(), k) {
			threads = append(threads, t.HeadPath().String())
		}
	}
	sort.Strings(threads)
	return append(out, threads...), nil
}
