package recall

// Semantic search in recall (docs/RETRIEVAL.md, "Semantic search"): with
// [embed], each tier's lexical ranking (the index's, lifted) is fused
// with a ranking by cosine similarity to the query's vector, by reciprocal
// rank fusion. Without [embed], or when the endpoint fails, the lexical
// ranking is returned as it is: the output is byte-identical, and a note
// on stderr says why the vectors were left out.

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/memvault/memvault/index"
	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/continuity"
	"github.com/memvault/memvault/vault/embed"
	"github.com/memvault/memvault/vault/redact"
)

const (
	// rrfK is reciprocal rank fusion's constant: a document's fused score
	// is the sum over the rankings that hold it of 1/(rrfK + rank).
	rrfK = 60
	// recallEmbedBudget bounds the semantic work of one recall: the
	// query's vector and the vectors still missing (a catch-up). Past it
	// the recall fuses what the cache holds.
	recallEmbedBudget = 3 * time.Second
)

// FuseWhy says which rankings a hit came from (recall --explain).
type FuseWhy struct {
	Rankings   []string `json:"rankings"`              // "text", "vector"
	TextRank   int      `json:"text_rank,omitempty"`   // 1-based
	VectorRank int      `json:"vector_rank,omitempty"` // 1-based
	Similarity float64  `json:"similarity,omitempty"`  // cosine to the query
}

// fusion is one recall's semantic side, found beside the lexical search:
// the query's vector asked of the endpoint, the cache caught up and
// searched for each tier, while the index is searched on the other core.
// ready is closed when near, notes and st are set; nothing else writes
// them after.
type fusion struct {
	ready  chan struct{}
	cancel context.CancelFunc
	near   map[string][]embed.Scored // per tier, the nearest vectors
	st     *embed.Store
	notes  []string // for stderr: why the vectors were left out
	noted  bool     // notes were handed to the result
}

// startFusion starts r's semantic side when recall is not lexical (an
// [embed] table, and not a hook's recall: NoEmbed). An [embed] table that
// is wrong (an api_key in it) is the recall's error, before any search.
func (r *recallRun) startFusion() error {
	if r.opts.NoEmbed {
		return nil
	}
	cfg, ok, err := embed.ConfigOf(&r.v.Config)
	if err != nil || !ok {
		return err
	}
	var tiers []string
	for _, tier := range Tiers {
		if wantsTier(r.opts, tier) {
			tiers = append(tiers, tier)
		}
	}
	// What the search keeps is read here, on the recall's goroutine: the
	// other one touches nothing of the run but the vault's files.
	var agent, thread func(string) bool
	if agents := continuity.VisibleAgents(r.v, r.opts.Agent); agents != nil {
		agent = func(a string) bool { return slices.Contains(agents, a) }
	}
	if allowed := r.allowed; allowed != nil {
		thread = func(t string) bool { return allowed[t] }
	}
	query, limit := r.redactQuery(), max(r.opts.Limit*20, 200)
	ctx, cancel := context.WithTimeout(context.Background(), recallEmbedBudget)
	f := &fusion{ready: make(chan struct{}), cancel: cancel}
	r.fused = f
	go func() {
		defer close(f.ready)
		st, q, note := semanticStore(ctx, r.v, cfg, query)
		if note != "" {
			f.notes = append(f.notes, note)
		}
		if st == nil {
			return
		}
		f.st, f.near = st, map[string][]embed.Scored{}
		prefixes := make([]string, len(tiers))
		for i, tier := range tiers {
			prefixes[i] = map[string]string{TierStructured: "r|", TierHeads: "n|", TierTranscripts: "m|"}[tier]
		}
		for i, pos := range st.Split(prefixes, agent) {
			if thread != nil && tiers[i] != TierTranscripts {
				// Messages take their session's threads, known only to
				// the lexical side; rows and nodes carry theirs.
				pos = st.InThreads(pos, thread)
			}
			f.near[tiers[i]] = st.SearchAmong(q, pos, limit)
		}
	}()
	return nil
}

// semanticStore asks the endpoint for the query's vector, catches the
// cache up within what is left of ctx, and returns the cache and the
// vector, or nil and a note saying why vectors are left out (nil and no
// note: the cache is empty or of other dimensions).
func semanticStore(ctx context.Context, v *vault.Vault, cfg embed.Config, query string) (*embed.Store, []float32, string) {
	client, err := embed.NewClient(cfg, os.Getenv)
	var q [][]float32
	if err == nil {
		q, err = client.Embed(ctx, []string{embed.Clip(query)})
	}
	if err != nil {
		return nil, nil, "semantic search left out: " + oneLineErr(err)
	}
	note := ""
	_, st, err := catchUpEmbeddings(ctx, v, 0, false)
	if err != nil {
		note = "semantic search: vectors not caught up: " + oneLineErr(err)
	}
	if st == nil {
		st = embed.Open(v.Root, cfg.Model, cfg.Dimensions) // another process is catching up
	}
	if st.Len() == 0 || st.Dims != len(q[0]) {
		st.Close()
		return nil, nil, note
	}
	return st, q[0], note
}

// closeFusion stops the semantic side if it still runs and lets go of the
// vector cache's file, once the recall is done.
func (r *recallRun) closeFusion() {
	if f := r.fused; f != nil {
		f.cancel()
		<-f.ready
		if f.st != nil {
			f.st.Close()
		}
	}
}

func (r *recallRun) redactQuery() string {
	if rules := embedRules(r.v); rules != nil {
		q, _ := redact.Text(r.q, rules)
		return q
	}
	return r.q
}

// fuse is the tier's ranking with the vector ranking fused in, once the
// semantic side is done; hits as they are when recall is lexical.
func (r *recallRun) fuse(tier string, hits []rankedHit) []rankedHit {
	f := r.fused
	if f == nil {
		return hits
	}
	<-f.ready
	if !f.noted {
		r.res.Notes, f.noted = append(r.res.Notes, f.notes...), true
	}
	if f.st == nil {
		return hits
	}
	return fuseRanks(hits, f.near[tier], f.st)
}

// fuseRanks is reciprocal rank fusion of the lexical hits, in their order,
// and the nearest vectors: each document scores 1/(rrfK+rank) in each
// ranking that holds it, ties broken by id.
func fuseRanks(hits []rankedHit, near []embed.Scored, st *embed.Store) []rankedHit {
	byID := make(map[string]int, len(hits)+len(near))
	out := make([]rankedHit, 0, len(hits)+len(near))
	for i, h := range hits {
		h.fused = &FuseWhy{Rankings: []string{"text"}, TextRank: i + 1}
		h.Score = 1 / float64(rrfK+i+1)
		byID[h.ID] = len(out)
		out = append(out, h)
	}
	for i, n := range near {
		id, score := st.ID(n.Index), 1/float64(rrfK+i+1)
		j, ok := byID[id]
		if !ok {
			j = len(out)
			out = append(out, rankedHit{Hit: index.Hit{ID: id}, fused: &FuseWhy{}})
		}
		h := &out[j]
		h.Score += score
		h.fused.Rankings = append(h.fused.Rankings, "vector")
		h.fused.VectorRank, h.fused.Similarity = i+1, float64(n.Sim)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if a, b := out[i].Score, out[j].Score; a != b {
			return a > b
		}
		return out[i].ID < out[j].ID
	})
	return out
}

func oneLineErr(err error) string {
	return strings.Join(strings.Fields(fmt.Sprint(err)), " ")
}
