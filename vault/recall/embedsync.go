package recall

// Semantic search's vectors (docs/RETRIEVAL.md, "Semantic search"): the
// ledger's rows, the nodes and the transcript messages, the same
// documents the index holds, embedded through the [embed] endpoint and
// kept in vault/embed's cache. They are computed off the hook path: by the
// background worker, by `memvault reindex`, or by a recall that finds them
// behind, within its budget. A hook never asks the endpoint.

import (
	"context"
	"os"
	"strings"
	"time"

	"github.com/memvault/memvault/index"
	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/codec"
	"github.com/memvault/memvault/vault/embed"
	"github.com/memvault/memvault/vault/fault"
	"github.com/memvault/memvault/vault/redact"
)

// EmbedReport says what a catch-up of the vectors did.
type EmbedReport struct {
	Configured bool          `json:"configured"`
	Embedded   int           `json:"embedded"` // vectors asked for
	Reused     int           `json:"reused"`   // vectors kept from the old cache by their text's hash (a rebuild)
	Requests   int           `json:"requests"` // requests sent
	Vectors    int           `json:"vectors"`  // vectors in the cache after
	Done       bool          `json:"done"`     // every document has its vector
	Full       bool          `json:"full"`     // the cache reached its bound
	Bytes      int64         `json:"bytes"`    // the cache's size, about
	Elapsed    time.Duration `json:"elapsed_ns"`
}

// embedLockName is the vector cache's own lock, .locks/embed.lock: one
// catch-up at a time, apart from the vault's lock and the index's.
const embedLockName = "embed"

// CatchUpEmbeddings embeds what the cache does not hold yet, for at most
// budget (0: no bound), and saves the cache. With rebuild, the cache is
// made anew (reindex): vectors of texts it held are reused, the rest
// asked for. Without [embed] it does nothing and sends nothing. It does
// not wait for another catch-up: a busy cache is reported done=false.
func CatchUpEmbeddings(ctx context.Context, v *vault.Vault, budget time.Duration, rebuild bool) (EmbedReport, error) {
	rep, st, err := catchUpEmbeddings(ctx, v, budget, rebuild)
	if st != nil {
		st.Close()
	}
	return rep, err
}

func catchUpEmbeddings(ctx context.Context, v *vault.Vault, budget time.Duration, rebuild bool) (EmbedReport, *embed.Store, error) {
	start := time.Now()
	cfg, ok, err := embed.ConfigOf(&v.Config)
	if err != nil || !ok {
		return EmbedReport{}, nil, err
	}
	rep := EmbedReport{Configured: true}
	client, err := embed.NewClient(cfg, os.Getenv)
	if err != nil {
		return rep, nil, err
	}
	release, locked, err := v.LockFile(embedLockName, 0)
	if err != nil || !locked {
		return rep, nil, err
	}
	defer release()
	if budget > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, budget)
		defer cancel()
	}
	// Opened for search first: a catch-up with nothing to do (a recall's,
	// most often) reads neither the vectors nor writes the cache again.
	st := embed.Open(v.Root, cfg.Model, cfg.Dimensions)
	p, err := pendingSources(v, st)
	if err != nil || !rebuild && len(p.sources) == 0 {
		if err == nil && (st.Old() || p.mark(st) != st.Journal) {
			// A cache of an earlier version, or a journal mark to move
			// (after a listing): saved, so that the next catch-up need
			// not list again.
			st.Close()
			st = embed.Load(v.Root, cfg.Model, cfg.Dimensions)
			st.Journal = p.mark(st)
			st.Save(v.Root)
		}
		rep.Done = err == nil
		rep.Vectors, rep.Full, rep.Bytes, rep.Elapsed = st.Len(), st.Full(), st.Bytes(), time.Since(start)
		return rep, st, err
	}
	st.Close()
	st = embed.Load(v.Root, cfg.Model, cfg.Dimensions)
	var reuse map[uint64][]float32
	if rebuild {
		reuse = make(map[uint64][]float32, st.Len())
		for i := range st.Len() {
			reuse[st.TextHash(i)] = st.Vector(i)
		}
		st = embed.NewStore(cfg.Model, cfg.Dimensions)
		p, err = pendingSources(v, st)
		if err != nil {
			return rep, nil, err
		}
	}
	c := &embedCatchUp{v: v, ctx: ctx, client: client, st: st, reuse: reuse, rep: &rep, rules: embedRules(v),
		have: make(map[string]bool, st.Len())}
	for i := range st.Len() {
		c.have[st.ID(i)] = true
	}
	err = c.run(p.sources)
	if err != nil && budget > 0 && ctx.Err() != nil {
		err = nil // the budget ran out: the rest is for the next catch-up
	}
	if m := p.mark(st); m != st.Journal {
		st.Journal, c.changed = m, true
	}
	if rebuild || c.changed {
		st.Save(v.Root)
	}
	rep.Vectors, rep.Full, rep.Bytes, rep.Elapsed = st.Len(), st.Full(), st.Bytes(), time.Since(start)
	return rep, st, err
}

// embedRules are the redaction rules a text goes through before it
// leaves the machine: the vault's, or the default rules when the vault's
// redaction is off (a vault that keeps its secrets does not send them).
func embedRules(v *vault.Vault) *redact.Rules {
	if v.Rules != nil {
		return v.Rules
	}
	r, _ := redact.NewRules(redact.Config{})
	return r
}

// embedCatchUp is one catch-up: the documents waiting for a vector, sent
// a batch at a time.
type embedCatchUp struct {
	v      *vault.Vault
	ctx    context.Context
	client *embed.Client
	st     *embed.Store
	reuse  map[uint64][]float32
	rules  *redact.Rules
	rep    *EmbedReport
	have   map[string]bool
	batch  []pendingDoc
	// changed is set when the cache gained a vector or a mark moved: only
	// then is it saved.
	changed bool
}

type pendingDoc struct {
	doc  index.Doc
	text string
	hash uint64
}

func (c *embedCatchUp) run(pending []indexSource) error {
	for _, s := range pending {
		from := c.st.Marks[s.Rel]
		docs, mark, err := docsOf(c.v, s, from)
		if err != nil {
			return err
		}
		for _, d := range docs {
			if c.have[d.ID] {
				continue
			}
			if err := c.add(d); err != nil {
				return err
			}
		}
		if err := c.flush(); err != nil {
			return err
		}
		if c.st.Full() {
			return nil
		}
		if c.st.Marks[s.Rel] != mark {
			c.st.Marks[s.Rel], c.changed = mark, true
		}
	}
	c.rep.Done = true
	return nil
}

// add queues a document, its text as sent: the speaker named, redacted,
// cut to embed.MaxTextBytes; a reused vector is added at once.
func (c *embedCatchUp) add(d index.Doc) error {
	text := d.Text
	if d.Speaker != "" {
		text = d.Speaker + ": " + text
	}
	if c.rules != nil {
		text, _ = redact.Text(text, c.rules)
	}
	text = embed.Clip(strings.TrimSpace(text))
	if text == "" {
		return nil
	}
	h := embed.Hash(c.st.Model, text)
	if vec, ok := c.reuse[h]; ok {
		c.st.Add(d.ID, d.Agent, d.Thread, h, vec)
		c.rep.Reused++
		c.changed = true
		return nil
	}
	c.batch = append(c.batch, pendingDoc{doc: d, text: text, hash: h})
	if len(c.batch) >= c.client.Config().Batch {
		return c.flush()
	}
	return nil
}

// flush sends the queued texts and stores their vectors.
func (c *embedCatchUp) flush() error {
	if len(c.batch) == 0 {
		return nil
	}
	if err := c.ctx.Err(); err != nil {
		return err
	}
	texts := make([]string, len(c.batch))
	for i, p := range c.batch {
		texts[i] = p.text
	}
	c.rep.Requests++
	vecs, err := c.client.Embed(c.ctx, texts)
	if err != nil {
		return err
	}
	for i, p := range c.batch {
		if !c.st.Add(p.doc.ID, p.doc.Agent, p.doc.Thread, p.hash, vecs[i]) {
			if c.st.Full() {
				break
			}
			return errDims(c.st.Dims, len(vecs[i]))
		}
		c.have[p.doc.ID] = true
		c.rep.Embedded++
		c.changed = true
	}
	c.batch = c.batch[:0]
	return nil
}

func errDims(want, got int) error {
	return fault.New(vault.ErrInvalid, "embed: the endpoint answered %d dimensions where the cache holds %d; set [embed] dimensions, or `memvault reindex` after a model change", got, want)
}

// EmbedStatus is what doctor says of semantic search.
type EmbedStatus struct {
	URL        string        `json:"url"`
	Model      string        `json:"model"`
	Dimensions int           `json:"dimensions"` // what the model answered
	Latency    time.Duration `json:"latency_ns"`
	Vectors    int           `json:"vectors"` // in the cache, for this model
	CacheBytes int64         `json:"cache_bytes"`
}

// CheckEmbedEndpoint asks the endpoint for one vector (of a fixed text,
// nothing of the vault's) and reports what it answered and what the cache
// holds; ok false without [embed]. A failure is the endpoint's error:
// unreachable, a model that does not answer, other dimensions than the
// table or the cache says.
func CheckEmbedEndpoint(ctx context.Context, v *vault.Vault) (st EmbedStatus, ok bool, err error) {
	cfg, ok, err := embed.ConfigOf(&v.Config)
	if !ok || err != nil {
		return st, ok || err != nil, err
	}
	st = EmbedStatus{URL: cfg.URL, Model: cfg.Model}
	client, err := embed.NewClient(cfg, os.Getenv)
	if err != nil {
		return st, true, err
	}
	start := time.Now()
	vecs, err := client.Embed(ctx, []string{"memvault doctor: is this endpoint answering?"})
	st.Latency = time.Since(start)
	if err != nil {
		return st, true, err
	}
	st.Dimensions = len(vecs[0])
	cache := embed.Open(v.Root, cfg.Model, cfg.Dimensions)
	cache.Close()
	st.Vectors, st.CacheBytes = cache.Len(), cache.Bytes()
	if cache.Len() > 0 && cache.Dims != st.Dimensions {
		return st, true, errDims(cache.Dims, st.Dimensions)
	}
	return st, true, nil
}

// embedEvery is how often the hooks start the background worker for the
// vectors alone (EmbedDue): the cache's age past which they do.
const embedEvery = 5 * time.Minute

// EmbedDue reports, at the cost of a stat, whether the background worker
// should catch the vectors up: [embed] is set and the cache was not saved
// for embedEvery (every catch-up saves it).
func EmbedDue(v *vault.Vault) bool {
	if _, ok, _ := embed.ConfigOf(&v.Config); !ok {
		return false
	}
	info, err := v.Files().Stat(codec.FilePath(v.Root, embed.StoreName))
	return err != nil || time.Since(info.ModTime()) > embedEvery
}

// EmbedInBackground is the background worker's catch-up of the vectors,
// with no bound but the endpoint's timeouts; its failure goes to logf.
func EmbedInBackground(ctx context.Context, v *vault.Vault, logf func(format string, args ...any)) {
	if rep, err := CatchUpEmbeddings(ctx, v, 0, false); err != nil {
		logf("embed: %v (%d vectors added)", err, rep.Embedded)
	}
}
