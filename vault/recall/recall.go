package recall

import (
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/memvault/memvault/vault/continuity"
	"github.com/memvault/memvault/vault/node"
	"github.com/memvault/memvault/vault/scope"

	"github.com/memvault/memvault/index"
	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/fault"
)

// Retrieval tiers, always in this order (DESIGN §7).
const (
	TierStructured  = "structured"
	TierHeads       = "heads"
	TierTranscripts = "transcripts"
)

// Tiers lists the tiers in retrieval order.
var Tiers = []string{TierStructured, TierHeads, TierTranscripts}

// MaxQueryBytes bounds a recall query: a question, not a document.
const MaxQueryBytes = 4096

// RecallOptions describe one recall.
type RecallOptions struct {
	Query   string
	Agent   string
	Thread  string // the current thread: --thread, MEMVAULT_THREAD, or the session's
	Session string // the current session, to find its thread when Thread is empty
	// Dir is the working directory: when neither Thread nor Session gives
	// a current thread, its thread is current if the vault knows it
	// (WorkThread). "" leaves the working directory out.
	Dir        string
	AllThreads bool
	Tier       string   // one tier, or "" for all
	Tiers      []string // several tiers; overrides Tier
	Since      time.Time
	Until      time.Time
	Limit      int // hits per tier
	// NoHeadFiles leaves MEMORY.md and the thread heads out of the heads
	// tier (nodes stay): a hook that injected them at session start need not
	// search them again on every prompt.
	NoHeadFiles bool
	// History includes rows that no longer hold (retracted, superseded,
	// closed, invalidated, archived), each marked with its status.
	History bool
	// Explain fills each hit's Why.
	Explain bool
	// NoEmbed keeps the recall lexical with [embed] set: a hook's, which
	// never waits on the embeddings endpoint (recallfuse.go).
	NoEmbed bool
	// Now is the time relative dates in the query ("yesterday", "last
	// week", "on Tuesday") count from; zero means the current time.
	Now time.Time
}

// HitSource locates a hit: the file and line, or the node or event.
type HitSource struct {
	File string `json:"file"`
	Line int    `json:"line,omitempty"`
}

// Hit is one recall result.
type Hit struct {
	Tier    string    `json:"tier"`
	ID      string    `json:"id"`
	Kind    string    `json:"kind,omitempty"`
	Thread  string    `json:"thread"`
	Agent   string    `json:"agent"`
	Session string    `json:"session,omitempty"`
	TS      string    `json:"ts,omitempty"`
	Source  HitSource `json:"source"`
	Text    string    `json:"text"`
	Score   float64   `json:"score"`
	// Status of a structured row: active, or (with History) retracted,
	// superseded, closed, invalidated or archived, and the event that
	// made it so.
	Status       string `json:"status,omitempty"`
	RetractedBy  string `json:"retracted_by,omitempty"`
	SupersededBy string `json:"superseded_by,omitempty"`
	ClosedBy     string `json:"closed_by,omitempty"`
	// Why is why the hit ranked where it did, with RecallOptions.Explain.
	Why *HitWhy `json:"why,omitempty"`
	// nodeRefs are the nodes a head section's matching lines point at
	// (pointerLines): it is not shown beside all of them.
	nodeRefs []string
}

// RecallResult is the hits, tiers in order, and what the user should know
// about how they were found.
type RecallResult struct {
	Hits     []Hit    `json:"hits"`
	Scope    []string `json:"scope"` // threads searched; "" is the global rows
	Notes    []string `json:"-"`     // for stderr
	Excluded int      `json:"-"`     // hits left out because of thread scope
	// DirThread is the current thread when it came from Dir, for the
	// command line to say so.
	DirThread string `json:"-"`
}

// Recall searches the vault: structured rows first, then heads and nodes,
// then transcripts, each ranked by relevance, within the agent's scope. It
// never misses text written before it started: whatever the index has not
// caught up with is searched from the files directly.
func Recall(v *vault.Vault, opts RecallOptions) (*RecallResult, error) {
	q := strings.TrimSpace(opts.Query)
	if err := checkRecall(q, &opts); err != nil {
		return nil, err
	}
	if opts.Limit <= 0 {
		opts.Limit = 5
	}
	sc, err := scope.Load(v)
	if err != nil {
		return nil, err
	}
	allowed, scopeList, dirThread, err := recallScope(v, sc, q, &opts)
	if err != nil {
		return nil, err
	}
	res := &RecallResult{Scope: scopeList, DirThread: dirThread}
	// The semantic side (recallfuse.go) starts first, so that it runs
	// beside everything below: the indexes' open and every tier's text
	// search.
	r := &recallRun{v: v, opts: &opts, q: q, sc: sc, allowed: allowed, res: res}
	if err := r.startFusion(); err != nil {
		return nil, err
	}
	defer r.closeFusion()

	kinds := ""
	for tier, k := range map[string]string{TierStructured: "r", TierHeads: "n", TierTranscripts: "m"} {
		if wantsTier(&opts, tier) {
			kinds += k
		}
	}
	set, err := searchIndexes(v, kinds, !opts.NoHeadFiles && strings.Contains(kinds, "n"))
	if err != nil {
		return nil, err
	}
	defer set.close()
	res.Notes = append(res.Notes, set.notes...)

	gone, err := rowStatuses(v)
	if err != nil {
		return nil, err
	}
	// The head files are the vault's own agent's view, every agent's rows
	// in them: an agent that may not see some of those rows does not
	// search them (docs/HOOKS.md, "Identity").
	visible := continuity.VisibleAgents(v, opts.Agent)
	r.set, r.gone, r.othersRows = set, gone, visible != nil && !index.HoldOnly(set.lineage, visible)
	// Every tier's text search first, then each tier fused and shown:
	// the vector rankings are waited for only once the text is all
	// searched.
	var ranked []rankedTier
	for _, tier := range Tiers {
		if !wantsTier(&opts, tier) {
			continue
		}
		hits, msgIDs, err := r.rankTier(tier)
		if err != nil {
			return nil, err
		}
		ranked = append(ranked, rankedTier{tier, hits, msgIDs})
	}
	for _, t := range ranked {
		if err := r.showTier(t.tier, r.fuse(t.tier, t.hits), t.msgIDs); err != nil {
			return nil, err
		}
	}
	if res.Hits == nil {
		res.Hits = []Hit{}
	}
	r.noteLeftOut()
	return res, nil
}

// checkRecall refuses a query recall cannot answer (empty, over
// MaxQueryBytes, not utf-8, or only stop words) and an unknown tier.
func checkRecall(q string, opts *RecallOptions) error {
	switch {
	case q == "":
		return fault.New(vault.ErrInvalid, "recall: empty query")
	case len(q) > MaxQueryBytes:
		e := fault.New(vault.ErrInvalid, "recall: query of %d bytes is over the limit of %d", len(q), MaxQueryBytes)
		return e.WithHint("ask with a few words; recall is a search, not a comparison of documents")
	case !utf8.ValidString(q):
		return fault.New(vault.ErrInvalid, "recall: query is not valid utf-8")
	}
	if len(index.Analyze(q)) == 0 {
		e := fault.New(vault.ErrInvalid, "recall: the query has no searchable words, only stop words")
		return e.WithHint("name the thing you are looking for")
	}
	if opts.Tier != "" && !slices.Contains(Tiers, opts.Tier) {
		return fault.New(vault.ErrInvalid, "recall: tier %q: want one of %s", opts.Tier, strings.Join(Tiers, ", "))
	}
	return nil
}

// wantsTier tells whether the recall searches tier: the one Tier named,
// those Tiers lists, or all of them when neither is set.
func wantsTier(opts *RecallOptions, tier string) bool {
	return (opts.Tier == "" || opts.Tier == tier) && (len(opts.Tiers) == 0 || slices.Contains(opts.Tiers, tier))
}

// recallRun is one Recall once its scope is known and its indexes open:
// what it searches with, and what it has found and left out so far.
type recallRun struct {
	v          *vault.Vault
	opts       *RecallOptions
	q          string
	sc         *scope.Scope
	allowed    map[string]bool // threads in scope (recallScope); nil: all
	set        *searchSet
	gone       map[string]rowStatus // rows that no longer hold (rowStatuses)
	othersRows bool                 // the head files hold rows of agents the asker does not see
	skipped    int                  // head hits left out for othersRows
	stale      staleHeads
	res        *RecallResult
	// sessionNodes are the nodes of each session a summary hit came
	// from, looked up once (supersededBy).
	sessionNodes map[string]*node.Index
	pickNodes    func(needles []string) *node.Index // the node cache, read once (node.Picker)
	fused        *fusion                            // the semantic side, with [embed] (recallfuse.go)
}

// supersededBy returns the summary that replaces a session-summary hit,
// "" when it counts: the node cache is read once per recall, and each
// session's nodes looked up in it once.
func (r *recallRun) supersededBy(hit Hit) string {
	ix, ok := r.sessionNodes[hit.Session]
	if !ok {
		if r.sessionNodes == nil {
			r.sessionNodes = map[string]*node.Index{}
		}
		if r.pickNodes == nil {
			pick, err := node.Picker(r.v.Files())
			if err != nil { // the nodes do not read: every summary counts
				pick = func([]string) *node.Index { return nil }
			}
			r.pickNodes = pick
		}
		ix = r.pickNodes([]string{node.FieldNeedle(hit.Session)})
		r.sessionNodes[hit.Session] = ix
	}
	if ix == nil {
		return ""
	}
	return ix.SupersededBy(hit.ID)
}

// showTier adds the first Limit hits of one tier that hold up (keep), in
// ranked order.
func (r *recallRun) showTier(tier string, hits []rankedHit, msgIDs map[string]string) error {
	first, once := len(r.res.Hits), shownOnce{}
	for _, h := range hits {
		if len(r.res.Hits)-first == r.opts.Limit {
			break
		}
		hit, ok, err := r.keep(h, tier, msgIDs)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		show, drop := once.add(hit, r.res.Hits[first:])
		if drop >= 0 {
			r.res.Hits = slices.Delete(r.res.Hits, first+drop, first+drop+1)
		}
		if show {
			r.res.Hits = append(r.res.Hits, hit)
		}
	}
	return nil
}

// rankTier searches the indexes of one tier, many more hits than are
// shown since some will not hold up, and ranks them; transcript hits are
// lifted by their neighbours and session (liftTranscriptHits). With
// Explain, it also returns the message ids the explanations name. The
// vector ranking is fused in after (fuse).
func (r *recallRun) rankTier(tier string) ([]rankedHit, map[string]string, error) {
	want := max(r.opts.Limit*20, 200)
	indexes, filter := r.set.forTier(tier)
	iq := index.Query{Text: r.q, Tier: filter, Agents: continuity.VisibleAgents(r.v, r.opts.Agent), Limit: want, Enough: r.opts.Limit * 2,
		Explain: r.opts.Explain}
	if tier == TierTranscripts {
		iq.Days = queryDays(r.q, r.opts.Now)
	}
	if r.allowed != nil && tier != TierTranscripts {
		// Rows, heads and nodes carry their thread in the index: the
		// scope is applied in the search, so the top hits are in scope.
		// Messages take their session's threads, known only here.
		iq.Threads = vault.SortedKeys(r.allowed)
	}
	found, err := index.Search(indexes, iq)
	if err != nil {
		return nil, nil, fmt.Errorf("recall: search: %w", err)
	}
	var msgIDs map[string]string // for explanations only: it costs a decode per hit
	if r.opts.Explain {
		msgIDs = map[string]string{}
	}
	var hits []rankedHit
	if tier == TierTranscripts {
		hits = liftTranscriptHits(r.v, found, index.QueryNames(indexes, r.q), msgIDs)
	} else {
		for _, h := range found {
			hits = append(hits, rankedHit{Hit: h, text: h.Score})
		}
	}
	return hits, msgIDs, nil
}

// rankedTier is a tier's hits as its text search ranked them.
type rankedTier struct {
	tier   string
	hits   []rankedHit
	msgIDs map[string]string
}

// keep resolves a ranked hit and tells whether it is shown: it must still
// exist, fall in the time range, still hold (unless History), be in the
// thread scope, and, for a head, come from a file the asker may search that
// is not behind the ledger. The hit's text is cut to a snippet.
func (r *recallRun) keep(h rankedHit, tier string, msgIDs map[string]string) (Hit, bool, error) {
	hit, ok, err := resolveHit(r.v, h.Hit, tier, r.gone)
	if err != nil {
		return hit, false, err
	}
	if !ok || !inTime(hit.TS, r.opts.Since, r.opts.Until) || hit.Status != "" && hit.Status != vault.StatusActive && !r.opts.History {
		return hit, false, nil
	}
	if hit.Kind == node.SessionSummary {
		// A session has one summary that counts: the others are history.
		if by := r.supersededBy(hit); by != "" {
			if !r.opts.History {
				return hit, false, nil
			}
			hit.Status, hit.SupersededBy = vault.StatusSuperseded, by
		}
	}
	if hit.Tier == TierTranscripts && hit.Thread == "" {
		if ts := r.sc.SessionThreads(hit.Agent, hit.Session); len(ts) > 0 {
			hit.Thread = ts[0]
		}
	}
	if !inScope(r.v, r.sc, hit, r.allowed) {
		r.res.Excluded++
		return hit, false, nil
	}
	if hit.Kind == "head" && r.othersRows {
		r.skipped++
		return hit, false, nil
	}
	if hit.Kind == "head" && r.stale.behind(r.v, hit.Source.File) {
		return hit, false, nil
	}
	if hit.Kind == "head" {
		hit.nodeRefs = pointerLines(hit.Text, r.q)
	}
	hit.Text = snippet(hit.Text, r.q)
	if r.opts.Explain {
		hit.Why = &HitWhy{Text: h.text, Terms: h.Why, Neighbour: h.neighbour, Session: h.session, Held: h.held, Asks: h.asks, Fusion: h.fused}
		if hit.Why.Terms == nil {
			hit.Why.Terms = []index.Weight{}
		}
		if h.neighbourOf != "" {
			hit.Why.NeighbourOf, hit.Why.Named = msgIDs[h.neighbourOf], h.named
		}
	}
	return hit, true, nil
}

// noteLeftOut tells the user which head files were not searched: those
// behind the ledger, then how many hits were left out because the files
// hold rows of agents the asker does not see.
func (r *recallRun) noteLeftOut() {
	for _, h := range r.stale.left {
		r.res.Notes = append(r.res.Notes, h+" is behind the ledger and was not searched; memvault render brings it up to date")
	}
	if r.skipped > 0 {
		r.res.Notes = append(r.res.Notes, fmt.Sprintf("%d hits in head files left out: they hold rows of agents %s does not see", r.skipped, r.opts.Agent))
	}
}
