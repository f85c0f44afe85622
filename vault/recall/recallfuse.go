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

// fusion is one recall's semantic side: the query's vector and the cache,
// found once for every tier.
type fusion struct {
	query []float32
	st    *embed.Store
}

// fusionFor is r's fusion, empty when recall is lexical: no [embed], a
// hook's recall (NoEmbed), or an endpoint that failed (noted). An [embed]
// table that is wrong (an api_key in it) is the recall's error.
func (r *recallRun) fusionFor() (*fusion, error) {
	if r.fused != nil || r.opts.NoEmbed {
		return r.fused, nil
	}
	cfg, ok, err := embed.ConfigOf(&r.v.Config)
	if err != nil {
		return nil, err
	}
	r.fused = &fusion{}
	if !ok {
		return r.fused, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), recallEmbedBudget)
	defer cancel()
	client, err := embed.NewClient(cfg, os.Getenv)
	var q [][]float32
	if err == nil {
		q, err = client.Embed(ctx, []string{embed.Clip(r.redactQuery())})
	}
	if err != nil {
		r.res.Notes = append(r.res.Notes, "semantic search left out: "+oneLineErr(err))
		return r.fused, nil
	}
	_, st, err := catchUpEmbeddings(ctx, r.v, 0, false)
	if err != nil {
		r.res.Notes = append(r.res.Notes, "semantic search: vectors not caught up: "+oneLineErr(err))
	}
	if st == nil {
		st = embed.Open(r.v.Root, cfg.Model, cfg.Dimensions) // another process is catching up
	}
	if st.Len() == 0 || st.Dims != len(q[0]) {
		st.Close()
		return r.fused, nil
	}
	r.fused.query, r.fused.st = q[0], st
	return r.fused, nil
}

// closeFusion lets go of the vector cache's file, once the recall is done.
func (r *recallRun) closeFusion() {
	if r.fused != nil && r.fused.st != nil {
		r.fused.st.Close()
	}
}

func (r *recallRun) redactQuery() string {
	if rules := embedRules(r.v); rules != nil {
		q, _ := redact.Text(r.q, rules)
		return q
	}
	return r.q
}

// fuse is the tier's ranking with the vector ranking fused in; hits as
// they are when recall is lexical.
func (r *recallRun) fuse(tier string, hits []rankedHit) ([]rankedHit, error) {
	f, err := r.fusionFor()
	if err != nil || f == nil || f.st == nil {
		return hits, err
	}
	prefix := map[string]string{TierStructured: "r|", TierHeads: "n|", TierTranscripts: "m|"}[tier]
	var agent, thread func(string) bool
	if agents := continuity.VisibleAgents(r.v, r.opts.Agent); agents != nil {
		agent = func(a string) bool { return slices.Contains(agents, a) }
	}
	if r.allowed != nil && tier != TierTranscripts {
		thread = func(t string) bool { return r.allowed[t] }
	}
	keep := f.st.Keep(prefix, agent, thread)
	near := f.st.Search(f.query, keep, max(r.opts.Limit*20, 200))
	return fuseRanks(hits, near, f.st), nil
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
