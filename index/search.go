package index

// Searching: the query a recall asks, how its words are weighed (the
// common-words rule, speaker and day boosts), and the explanation of each
// hit's score. The mapping and the index files are in index.go.

import (
	"context"
	"slices"
	"sort"
	"strings"
	"unicode"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/query"
)

// contextBoost weighs a match in the surrounding text against a match in
// the document's own text.
const contextBoost = 0.4

// Query is a search: the text is matched as plain words (no query syntax:
// "+", "-", ":", quotes and wildcards are just text), restricted to one tier
// when Tier is set and, when given, to agents.
type Query struct {
	Text string
	// Tier keeps documents of one tier; "" keeps all, for an index that
	// holds one tier only.
	Tier   string
	Agents []string
	// Threads, when set, keeps documents of these threads ("" for global
	// ones); nil keeps all.
	Threads []string
	Limit   int
	// Enough is how many hits make a narrowed match good enough (see
	// matchQuery); 0 means Limit.
	Enough int
	// Days lifts the documents of these days (2006-01-02): the dates a
	// question names. Like a speaker named in the text, a day never
	// matches on its own.
	Days []string
	// Explain fills each hit's Why.
	Explain bool
}

// speakerBoost and dayBoost weigh a match of a speaker's name or of a day
// against a match of a word of the text; both only add to a document the
// text already matched.
const (
	speakerBoost = 0.5
	dayBoost     = 1.0
)

// AnyAgent is the agent of documents that belong to every agent (the
// heads): a search keeps them whatever agents it asks for.
const AnyAgent = "*"

// globalThread is how a document without a thread is indexed.
const globalThread = "-"

// Search runs q over the given indexes together, best first. A document
// found in more than one of them (the persistent index and the in-memory
// tail overlap for a moment while the index catches up) is returned once.
func Search(indexes []*Index, q Query) ([]Hit, error) {
	if len(indexes) == 0 {
		return nil, nil
	}
	names := queryNames(indexes, q.Text)
	match := matchQuery(indexes, withoutNames(q.Text, names))
	parts := []query.Query{withBoosts(indexes, q, names, match)}
	// Each filter below is a conjunction that walks its postings list
	// beside the match: a filter that keeps every document is left out.
	if q.Tier != "" {
		parts = append(parts, term("tier", q.Tier))
	}
	if agents := append(slices.Clone(q.Agents), AnyAgent); len(q.Agents) > 0 && !holdOnly(indexes, agents) {
		var or []query.Query
		for _, a := range agents {
			or = append(or, term("agent", a))
		}
		parts = append(parts, bleve.NewDisjunctionQuery(or...))
	}
	if q.Threads != nil {
		var or []query.Query
		for _, t := range q.Threads {
			if t == "" {
				t = globalThread
			}
			or = append(or, term("thread", t))
		}
		parts = append(parts, bleve.NewDisjunctionQuery(or...))
	}
	top := parts[0]
	if len(parts) > 1 {
		top = bleve.NewConjunctionQuery(parts...)
	}
	res, err := run(indexes, top, q.Limit, q.Explain)
	if err != nil {
		return nil, err
	}
	enough := q.Enough
	if enough <= 0 || enough > q.Limit {
		enough = q.Limit
	}
	if all, ok := match.(*allOf); ok && len(res.Hits) < enough {
		parts[0] = withBoosts(indexes, q, names, anyOf(all.terms))
		top = parts[0]
		if len(parts) > 1 {
			top = bleve.NewConjunctionQuery(parts...)
		}
		if res, err = run(indexes, top, q.Limit, q.Explain); err != nil {
			return nil, err
		}
	}
	hits := make([]Hit, 0, len(res.Hits))
	seen := make(map[string]bool, len(res.Hits))
	for _, h := range res.Hits {
		if !seen[h.ID] {
			seen[h.ID] = true
			hit := Hit{ID: h.ID, Score: h.Score}
			if q.Explain && h.Expl != nil {
				hit.Why = weights(h.Expl)
			}
			hits = append(hits, hit)
		}
	}
	// Equal scores come back in an order that depends on segment layout;
	// order ties by id so the same vault always gives the same answer.
	sort.SliceStable(hits, func(i, j int) bool {
		if hits[i].Score != hits[j].Score {
			return hits[i].Score > hits[j].Score
		}
		return hits[i].ID < hits[j].ID
	})
	return hits, nil
}

// run searches for the limit best documents. Documents of equal score
// come out of Bleve in an order that depends on its segments and, over
// several indexes, on which answers first, so when a tie straddles the cut
// (the document after the last one asked for scores the same) the search
// asks for more until the whole tie is in, and the caller orders by id:
// which documents make the cut must not depend on how the index happens to
// be laid out. A search without such a tie costs one document more.
func run(indexes []*Index, q query.Query, limit int, explain bool) (*bleve.SearchResult, error) {
	search := func(n int) (*bleve.SearchResult, error) {
		req := bleve.NewSearchRequestOptions(q, n, 0, explain)
		if len(indexes) == 1 {
			return indexes[0].b.Search(req)
		}
		alias := bleve.NewIndexAlias()
		for _, ix := range indexes {
			alias.Add(ix.b)
		}
		return alias.Search(req)
	}
	for n := limit; ; n *= 4 {
		res, err := search(n + 1)
		if err != nil || len(res.Hits) <= n || res.Hits[n].Score != res.Hits[limit-1].Score {
			if err == nil && len(res.Hits) > limit {
				hits := res.Hits
				sort.SliceStable(hits, func(i, j int) bool {
					if hits[i].Score != hits[j].Score {
						return hits[i].Score > hits[j].Score
					}
					return hits[i].ID < hits[j].ID
				})
				res.Hits = hits[:limit]
			}
			return res, err
		}
	}
}

// commonFraction is the share of documents above which a query term counts
// as common (see matchQuery), in an index large enough for the rule to pay:
// a term counts as common only when it is in more than commonMinDocs
// documents too.
const commonFraction = 0.02

// commonMinDocs is the number of documents a term must be in before it can
// count as common. The rule is there for speed: walking a term in a few
// thousand documents costs little, while in a vault of a few hundred turns
// 2 % is a handful of turns, and ordinary topic words ("backup", "cutover")
// would count as common and never score the right turn.
const commonMinDocs = 2000

// matchQuery matches the words of text in the text field, and with less
// weight in the context field. A word found in more than commonFraction of
// the documents (in a question: "file", "change", "can") scores every
// document it is in, which at a million messages is most of a search's
// time, and alone it says little about relevance. So, like a common-terms
// query: when the text has rarer words, a document must hold one of them
// (in its text or its context), and the common words only add to its score;
// when every word is common, a document's own text must hold all of them (a
// leapfrog over the postings; the context field is left out, which halves
// the lists walked), unless that finds fewer than Query.Enough documents,
// in which case Search falls back to any of them.
func matchQuery(indexes []*Index, text string) query.Query {
	terms, joined := queryTerms(text)
	docs, df := termStats(indexes, append(slices.Clone(terms), joined...))
	for _, t := range joined {
		if df[t] > 0 {
			terms = append(terms, t)
		}
	}
	var rare, common []string
	if docs > 0 {
		for _, t := range terms {
			switch {
			case df[t] == 0:
				// In no document: it can neither match nor narrow.
			case isCommon(df[t], docs):
				common = append(common, t)
			default:
				rare = append(rare, t)
			}
		}
	}
	if len(common) == 0 || len(rare) == 0 && len(common) < 2 {
		return anyOf(terms)
	}
	if len(rare) == 0 {
		return &allOf{Query: bleve.NewConjunctionQuery(termsIn("text", common, 1)...), terms: terms}
	}
	b := bleve.NewBooleanQuery()
	b.AddMust(anyOf(rare))
	b.AddShould(anyOf(common))
	return b
}

// common reports whether a term in df of docs documents counts as common.
func isCommon(df, docs uint64) bool {
	return df > commonMinDocs && float64(df) > commonFraction*float64(docs)
}

// allOf marks a match that requires every term, so that Search can fall
// back to anyOf(terms) when it finds too little.
type allOf struct {
	query.Query
	terms []string
}

// anyOf matches documents holding any of terms, in text or (weighted
// less) in context.
func anyOf(terms []string) query.Query {
	return bleve.NewDisjunctionQuery(
		bleve.NewDisjunctionQuery(termsIn("text", terms, 1)...),
		bleve.NewDisjunctionQuery(termsIn("context", terms, contextBoost)...))
}

func termsIn(field string, terms []string, boost float64) []query.Query {
	out := make([]query.Query, 0, len(terms))
	for _, t := range terms {
		q := bleve.NewTermQuery(t)
		q.SetField(field)
		q.SetBoost(boost)
		out = append(out, q)
	}
	return out
}

// uniqueTerms analyses text as the index does, each term once.
func uniqueTerms(text string) []string {
	var out []string
	for _, t := range Analyze(text) {
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}

// termStats returns the number of documents in the indexes and, per term,
// how many hold it in their text field.
func termStats(indexes []*Index, terms []string) (uint64, map[string]uint64) {
	df := map[string]uint64{}
	var docs uint64
	for _, ix := range indexes {
		n, err := ix.b.DocCount()
		if err != nil {
			continue
		}
		adv, err := ix.b.Advanced()
		if err != nil {
			continue
		}
		r, err := adv.Reader()
		if err != nil {
			continue
		}
		docs += n
		for _, t := range terms {
			if tfr, err := r.TermFieldReader(context.Background(), []byte(t), "text", false, false, false); err == nil {
				df[t] += tfr.Count()
				tfr.Close()
			}
		}
		r.Close()
	}
	return docs, df
}

// HoldOnly reports whether every document of the indexes belongs to one of
// agents (AnyAgent counts as one).
func HoldOnly(indexes []*Index, agents []string) bool {
	return holdOnly(indexes, append(slices.Clone(agents), AnyAgent))
}

// holdOnly reports whether every document of the indexes belongs to one of
// agents, so that filtering by them would keep everything.
func holdOnly(indexes []*Index, agents []string) bool {
	for _, ix := range indexes {
		for a := range ix.Meta.Agents {
			if !slices.Contains(agents, a) {
				return false
			}
		}
	}
	return true
}

func term(field, value string) query.Query {
	t := bleve.NewTermQuery(value)
	t.SetField(field)
	return t
}

// queryTerms are the terms a query searches for: its words analysed as the
// index's text is, with their other forms (wordForms); and joined, each
// pair of adjacent words joined, to search for when the index holds the
// joined word ("back up" finds "backup").
func queryTerms(text string) (terms, joined []string) {
	terms = uniqueTerms(withForms(text))
	words := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	for i := 0; i+1 < len(words); i++ {
		for _, t := range Analyze(words[i] + words[i+1]) {
			if !slices.Contains(terms, t) && !slices.Contains(joined, t) {
				joined = append(joined, t)
			}
		}
	}
	return terms, joined
}

// SpeakerWords are the words of a speaker's name a query word can name.
func SpeakerWords(name string) []string { return speakerWords(name) }

// speakerWords are the words of a speaker's name that the index keeps:
// lower-cased, without the role names every harness uses ("user",
// "assistant"), which would lift half of all messages.
func speakerWords(name string) []string {
	var out []string
	for _, w := range strings.FieldsFunc(strings.ToLower(name), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		if len(w) < 2 || roleWords[w] || slices.Contains(out, w) {
			continue
		}
		out = append(out, w)
	}
	return out
}

var roleWords = map[string]bool{"user": true, "assistant": true, "system": true, "tool": true, "human": true, "model": true}

// QueryNames are the words of text that name a speaker of the indexes'
// messages (lower-cased, each once): the people a question is about.
func QueryNames(indexes []*Index, text string) []string { return queryNames(indexes, text) }

// queryNames are the words of text that are words of a speaker's name in
// the indexes.
func queryNames(indexes []*Index, text string) []string {
	known := map[string]bool{}
	for _, ix := range indexes {
		for w := range ix.Meta.Speakers {
			known[w] = true
		}
	}
	var names []string
	for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		if known[w] && !slices.Contains(names, w) {
			names = append(names, w)
		}
	}
	return names
}

// withoutNames is text without the speakers' names it holds, when other
// words with terms remain: a question about what a person said or did
// ("what did Nora adopt") is about the person's own turns, which seldom
// hold the name, while the turns that do are the others addressing them
// ("Hey Nora!"). The name lifts the person's turns instead (withBoosts).
// Measured on fixtures/recall, issue 36: recall@5/@10 on the tuning split
// 0.590/0.718 with the name matched as a word of the text, see
// docs/RETRIEVAL.md for the figures after.
func withoutNames(text string, names []string) string {
	if len(names) == 0 {
		return text
	}
	var kept []string
	for _, w := range strings.FieldsFunc(text, func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && !strings.ContainsRune("._-/", r)
	}) {
		if !slices.Contains(names, strings.ToLower(w)) {
			kept = append(kept, w)
		}
	}
	rest := strings.Join(kept, " ")
	if len(Analyze(rest)) == 0 {
		return text
	}
	return rest
}

// withBoosts adds to match the lifts of speakers the query names and of
// the days it asks about. They are optional clauses beside a required
// match: a document the text does not match is never found through them.
func withBoosts(indexes []*Index, q Query, speakers []string, match query.Query) query.Query {
	var should []query.Query
	for _, w := range speakers {
		t := bleve.NewTermQuery(w)
		t.SetField("speaker")
		t.SetBoost(speakerBoost)
		should = append(should, t)
	}
	for _, d := range q.Days {
		t := bleve.NewTermQuery(d)
		t.SetField("day")
		t.SetBoost(dayBoost)
		should = append(should, t)
	}
	if len(should) == 0 {
		return match
	}
	b := bleve.NewBooleanQuery()
	b.AddMust(match)
	b.AddShould(should...)
	return b
}

// weights flattens a Bleve explanation into the share of each matched term
// in the score: a term's weight, times the coordination factors of the
// disjunctions above it.
func weights(e *search.Explanation) []Weight {
	var out []Weight
	var walk func(e *search.Explanation, factor float64)
	walk = func(e *search.Explanation, factor float64) {
		if e == nil {
			return
		}
		for _, prefix := range []string{"weight(", "fieldWeight("} {
			if rest, ok := strings.CutPrefix(e.Message, prefix); ok {
				end := strings.IndexAny(rest, "^ ")
				if end < 0 {
					end = len(rest)
				}
				field, term, _ := strings.Cut(rest[:end], ":")
				switch field {
				case "tier", "agent", "thread":
					// A filter: the same for every document it keeps.
				default:
					out = append(out, Weight{Field: field, Term: term, Score: e.Value * factor})
				}
				return
			}
		}
		for _, c := range e.Children {
			if strings.HasPrefix(c.Message, "coord(") {
				factor *= c.Value
			}
		}
		for _, c := range e.Children {
			if !strings.HasPrefix(c.Message, "coord(") {
				walk(c, factor)
			}
		}
	}
	walk(e, 1)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Score > out[j].Score })
	return out
}
