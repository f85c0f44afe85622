// Package index is memvault's full-text index: a Bleve index under .index/
// that is only ever a cache of the vault's files. Its documents are
// transcript messages, ledger rows and node bodies; each document's id says
// where its text lives, and nothing but the id is stored, so the index stays
// small and the files stay the only truth.
//
// The mapping is lean on purpose: the text and its context (the turn
// before) are analysed (English, with stemming, no positions: no search is
// a phrase); tier, agent and thread are single keywords for filtering;
// a message's speaker and day are keywords
// that only lift a score; nothing is stored but the id.
// A change of mapping bumps mappingVersion, and an index built with another
// version is rebuilt rather than queried.
package index

import (
	"bytes"
	"context"
	"encoding/gob"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/analysis/lang/en"
	"github.com/blevesearch/bleve/v2/index/scorch"
	"github.com/blevesearch/bleve/v2/index/scorch/mergeplan"
	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/memvault/memvault/vault/fileio"
)

// mappingVersion identifies the mapping below; bump it with any change.
const mappingVersion = 5

// Doc is one searchable unit.
type Doc struct {
	ID      string
	Text    string
	Context string // text around the document, matched with less weight
	Tier    string // structured, heads, transcripts
	Agent   string
	Thread  string
	Session string
	// Speaker names who wrote a transcript message, a person's name or
	// the agent's; "" for tool output and for rows. It only ever adds to
	// the score of a document whose text matches (see Query).
	Speaker string
	// Day is the day (UTC, 2006-01-02) a transcript message was written,
	// "" when unknown: a query about a date lifts the messages of it.
	Day string
}

// Hit is one search result: which document, and how well it matched.
type Hit struct {
	ID    string
	Score float64
	// Why is what the score is made of, with Query.Explain: each matched
	// term of each field and its share of the score.
	Why []Weight
}

// Weight is one term's share of a hit's score.
type Weight struct {
	Field string  `json:"field"` // text, context, speaker or day
	Term  string  `json:"term"`  // as indexed: stemmed for text and context
	Score float64 `json:"score"`
}

// errUnusable means the index cannot be used as it is (missing, corrupt, or
// built with another mapping) and must be rebuilt.
var errUnusable = errors.New("index unusable")

// ErrBusy means a writer holds the index and a reader gave up waiting.
var ErrBusy = errors.New("index busy")

// Mapping returns the index mapping.
func Mapping() mapping.IndexMapping {
	m := bleve.NewIndexMapping()
	m.DefaultAnalyzer = en.AnalyzerName
	doc := bleve.NewDocumentStaticMapping()
	text := bleve.NewTextFieldMapping()
	text.Analyzer = en.AnalyzerName
	text.Store = false
	text.IncludeInAll = false
	// No term vectors: a search is a set of term queries, never a phrase,
	// so positions would be stored for nothing (they were most of the
	// index's size).
	text.IncludeTermVectors = false
	text.DocValues = false
	doc.AddFieldMappingsAt("text", text)
	// context holds the text around a document (for a transcript message,
	// the message before it): a reply is often the answer to a question
	// whose words it does not repeat. It is searched with a lower weight.
	ctx := bleve.NewTextFieldMapping()
	ctx.Analyzer = en.AnalyzerName
	ctx.Store = false
	ctx.IncludeInAll = false
	ctx.IncludeTermVectors = false
	ctx.DocValues = false
	doc.AddFieldMappingsAt("context", ctx)
	// tier, agent and thread filter, speaker and day add to a score. All
	// keep frequencies and norms: a filter's term is scored too, and
	// without them its score is not a number. The session is not indexed:
	// nothing searches by it.
	for _, f := range []string{"tier", "agent", "thread", "speaker", "day"} {
		kw := bleve.NewKeywordFieldMapping()
		kw.Store = false
		kw.IncludeInAll = false
		kw.IncludeTermVectors = false
		kw.DocValues = false
		doc.AddFieldMappingsAt(f, kw)
	}
	m.DefaultMapping = doc
	m.StoreDynamic = false
	m.IndexDynamic = false
	m.DocValuesDynamic = false
	return m
}

// Analyze returns the index's terms for text: what a query matches on.
func Analyze(text string) []string {
	a := analyzer()
	var out []string
	for _, tok := range a.Analyze([]byte(text)) {
		out = append(out, string(tok.Term))
	}
	return out
}

// analyzer is the mapping's English analyzer, built once on first use:
// getting it means building the whole mapping, which Analyze, called per
// query, should not repeat. sync.OnceValue also makes the first call safe
// from concurrent goroutines, which a nil check on a plain variable is not.
var analyzer = sync.OnceValue(func() analysis.Analyzer {
	return Mapping().AnalyzerNamed(en.AnalyzerName)
})

// Index is an open Bleve index.
type Index struct {
	b    bleve.Index
	dir  string
	Meta Meta
}

// Meta is kept beside the Bleve files: the mapping version and, per source
// file, how many bytes of it (or, for write-once files, whether it) are in
// the index. Anything past a watermark is not indexed yet.
type Meta struct {
	Version    int
	Watermarks map[string]int64
	// Agents are the agents with documents in the index. A search for
	// agents that include all of them needs no agent filter, and a filter
	// that keeps every document still costs a walk of its postings.
	Agents map[string]bool
	// Speakers are the words of the speakers' names in the index: a query
	// word that is one of them lifts that speaker's messages.
	Speakers map[string]bool
	// Journal is how far the index has read its change journal, when it
	// has one (the vault's transcript journal): see JournalMark.
	Journal JournalMark
}

// JournalMark is an index's place in an append-only change journal that
// writers extend while the index catches up. The journal names its
// generation in its first line; a journal rewritten by a compaction has a
// new one, and a mark of another generation counts for nothing, so the
// whole new journal is read.
type JournalMark struct {
	Gen string
	// Off is where the first line the index may not cover yet starts:
	// every line before it is covered by the watermarks.
	Off int64
	// Seen is the end of the lines the index has looked at. A line past it
	// is news; one before it was weighed already.
	Seen int64
}

const (
	bleveDir = "bleve"
	// metaFile is gob, not JSON: it is read on every recall and holds one
	// watermark per transcript part, thousands of them.
	metaFile = "meta.gob"
)

// ReadMeta reads the meta of the index in dir without opening the index.
func ReadMeta(dir string) (Meta, error) {
	data, err := os.ReadFile(filepath.Join(dir, metaFile))
	if err != nil {
		return Meta{}, err
	}
	var meta Meta
	if err := gob.NewDecoder(bytes.NewReader(data)).Decode(&meta); err != nil {
		return Meta{}, fmt.Errorf("%s: %v", metaFile, err)
	}
	return meta, nil
}

// Open opens the index in dir. A reader (readOnly) waits at most timeout
// for a writer to finish. An index that is missing, damaged or of another
// mapping version gives errUnusable.
func Open(dir string, readOnly bool, timeout time.Duration) (*Index, error) {
	data, err := os.ReadFile(filepath.Join(dir, metaFile))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errUnusable, err)
	}
	var meta Meta
	if err := gob.NewDecoder(bytes.NewReader(data)).Decode(&meta); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", errUnusable, metaFile, err)
	}
	if meta.Version != mappingVersion {
		return nil, fmt.Errorf("%w: built with mapping version %d, this is %d", errUnusable, meta.Version, mappingVersion)
	}
	if meta.Watermarks == nil {
		meta.Watermarks = map[string]int64{}
	}
	if meta.Agents == nil {
		meta.Agents = map[string]bool{}
	}
	if meta.Speakers == nil {
		meta.Speakers = map[string]bool{}
	}
	cfg := map[string]interface{}{"bolt_timeout": timeout.String()}
	if readOnly {
		cfg["read_only"] = true
	}
	b, err := bleve.OpenUsing(filepath.Join(dir, bleveDir), cfg)
	if err != nil {
		if isTimeout(err) {
			return nil, fmt.Errorf("%w: %v", ErrBusy, err)
		}
		return nil, fmt.Errorf("%w: %v", errUnusable, err)
	}
	return &Index{b: b, dir: dir, Meta: meta}, nil
}

func isTimeout(err error) bool {
	for e := err; e != nil; e = errors.Unwrap(e) {
		if e.Error() == "timeout" {
			return true
		}
	}
	return false
}

// Create makes a new, empty index in dir, replacing whatever is there.
func Create(dir string) (*Index, error) {
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	b, err := bleve.New(filepath.Join(dir, bleveDir), Mapping())
	if err != nil {
		return nil, err
	}
	ix := &Index{b: b, dir: dir, Meta: newMeta()}
	if err := ix.SaveMeta(); err != nil {
		b.Close()
		return nil, err
	}
	return ix, nil
}

// NewMemory makes an index in memory, for text not in the persistent index
// yet; searching it alongside gives the same analysis and scoring. It is a
// scorch index without a path (bleve's NewMemOnly builds about three times
// slower).
func NewMemory() (*Index, error) {
	b, err := bleve.NewUsing("", Mapping(), scorch.Name, scorch.Name, nil)
	if err != nil {
		return nil, err
	}
	return &Index{b: b, Meta: newMeta()}, nil
}

func newMeta() Meta {
	return Meta{Version: mappingVersion, Watermarks: map[string]int64{}, Agents: map[string]bool{}, Speakers: map[string]bool{}}
}

// SaveMeta writes the watermarks. Call it only after the documents they
// cover are in the index (Add returns after its batch is applied).
func (ix *Index) SaveMeta() error {
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(ix.Meta); err != nil {
		return err
	}
	// Without fsync, as Bleve writes the index itself: a meta file lost or
	// torn by a crash of the machine makes the index unusable, and it is
	// rebuilt from the vault.
	return fileio.WriteCache(filepath.Join(ix.dir, metaFile), buf.Bytes())
}

// Add indexes docs in one batch.
func (ix *Index) Add(docs []Doc) error {
	batch := ix.b.NewBatch()
	for _, d := range docs {
		thread := d.Thread
		if thread == "" {
			thread = globalThread // an empty keyword is not indexed, and global rows must be findable
		}
		fields := map[string]interface{}{
			"text": withForms(d.Text), "context": withForms(d.Context), "tier": d.Tier, "agent": d.Agent, "thread": thread,
		}
		if words := speakerWords(d.Speaker); len(words) > 0 {
			fields["speaker"] = words
			for _, w := range words {
				ix.Meta.Speakers[w] = true
			}
		}
		if d.Day != "" {
			fields["day"] = d.Day
		}
		if err := batch.Index(d.ID, fields); err != nil {
			return err
		}
		ix.Meta.Agents[d.Agent] = true
	}
	return ix.b.Batch(batch)
}

// Compact merges the index's segments into one, so that a query walks one
// segment instead of the dozens a large build leaves behind.
func (ix *Index) Compact() error {
	adv, err := ix.b.Advanced()
	if err != nil {
		return err
	}
	s, ok := adv.(*scorch.Scorch)
	if !ok {
		return nil
	}
	if err := s.ForceMerge(context.Background(), &mergeplan.SingleSegmentMergePlanOptions); err != nil {
		return err
	}
	// The segments merged away are deleted by scorch's persister in its own
	// time, and a Close before then leaves them on disk, doubling the
	// index's size. Give it a moment to do so.
	files := func() uint64 { n, _ := s.StatsMap()["num_files_on_disk"].(uint64); return n }
	last, steady := files(), 0
	for deadline := time.Now().Add(cleanupWait); time.Now().Before(deadline) && steady < 5; {
		time.Sleep(20 * time.Millisecond)
		if n := files(); n != last {
			last, steady = n, 0
		} else {
			steady++
		}
	}
	return nil
}

// cleanupWait bounds how long Compact waits for merged-away segment files
// to be deleted.
const cleanupWait = 5 * time.Second

// Count returns the number of documents.
func (ix *Index) Count() (uint64, error) { return ix.b.DocCount() }

// Close releases the index.
func (ix *Index) Close() error { return ix.b.Close() }
