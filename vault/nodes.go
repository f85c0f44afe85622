package vault

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/memvault/memvault/vault/fault"
)

// Node kinds (DESIGN §5).
const (
	NodeSessionSummary = "session-summary"
	NodeCompaction     = "compaction"
	NodeCondensed      = "condensed"
)

// NodeKinds lists the node kinds in a stable order.
var NodeKinds = []string{NodeSessionSummary, NodeCompaction, NodeCondensed}

// Span is the part of a transcript a node covers: messages From to To
// (sequence numbers, inclusive) of the transcript at Path.
type Span struct {
	Path string `json:"path"`
	From int    `json:"from"`
	To   int    `json:"to"`
}

// Node is a temporal node: front matter plus a markdown body, written once
// to nodes/<agent>/<yyyy>/<mm>/<id>.md.
type Node struct {
	ID       string   `json:"id"`
	Kind     string   `json:"kind"`
	Agent    string   `json:"agent"`
	Session  string   `json:"session,omitempty"`
	Harness  string   `json:"harness,omitempty"`
	Threads  []string `json:"threads"`
	Children []string `json:"children"`
	Span     *Span    `json:"span,omitempty"`
	Created  string   `json:"created"`
	Title    string   `json:"title"`
	Path     string   `json:"path"`
	// Summary says who wrote the node's summary when memvault.toml names
	// a summariser ([summarise], docs/EXECUTORS.md): "model" (the
	// executor SummaryBy, its result's SHA-256 SummaryChecksum) or
	// "deterministic" (SummaryFallback: why the model's was not used).
	// All four are empty, and left out of the file, otherwise.
	Summary         string `json:"summary,omitempty"`
	SummaryBy       string `json:"summary_by,omitempty"`
	SummaryChecksum string `json:"summary_checksum,omitempty"`
	SummaryFallback string `json:"summary_fallback,omitempty"`
	Body            string `json:"body,omitempty"`
}

// Who wrote a node's summary (Node.Summary).
const (
	SummaryModel         = "model"
	SummaryDeterministic = "deterministic"
)

// frontMatter lists the front-matter fields in their fixed order (so the
// same node always has the same bytes) with where each lives in the Node;
// writing and reading both go through it.
func (n *Node) frontMatter() []struct {
	key string
	ptr any
} {
	return []struct {
		key string
		ptr any
	}{
		{"id", &n.ID}, {"kind", &n.Kind}, {"agent", &n.Agent}, {"session", &n.Session},
		{"harness", &n.Harness}, {"threads", &n.Threads}, {"children", &n.Children},
		{"span", &n.Span}, {"created", &n.Created}, {"title", &n.Title},
		{"summary", &n.Summary}, {"summary_by", &n.SummaryBy}, {"summary_checksum", &n.SummaryChecksum},
		{"summary_fallback", &n.SummaryFallback},
	}
}

// optionalField reports whether the front-matter field key is written
// only when it is set: the summariser's, so that a node made without one
// has the bytes (and so the id) it always had.
func optionalField(key string) bool { return strings.HasPrefix(key, "summary") }

// Encode renders the node file. Every front-matter value is written as JSON,
// which is also valid YAML, so the file reads well, parses with any YAML
// library, and round-trips exactly.
func (n *Node) Encode() []byte {
	n.Threads, n.Children = nonNil(n.Threads), nonNil(n.Children)
	var b bytes.Buffer
	b.WriteString("---\n")
	for _, f := range n.frontMatter() {
		if p, ok := f.ptr.(*string); ok && *p == "" && optionalField(f.key) {
			continue
		}
		var v bytes.Buffer
		enc := json.NewEncoder(&v)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(f.ptr)
		fmt.Fprintf(&b, "%s: %s\n", f.key, strings.TrimSuffix(v.String(), "\n"))
	}
	b.WriteString("---\n\n")
	b.WriteString(strings.TrimRight(n.Body, "\n"))
	b.WriteString("\n")
	return b.Bytes()
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// ParseNode reads a node file. With headerOnly, the body is not kept.
func ParseNode(data []byte, headerOnly bool) (*Node, error) {
	if !bytes.HasPrefix(data, []byte("---\n")) {
		return nil, fmt.Errorf("no front matter")
	}
	rest := data[4:]
	end := bytes.Index(rest, []byte("\n---\n"))
	if end < 0 {
		return nil, fmt.Errorf("front matter not closed")
	}
	n := new(Node)
	fields := map[string]any{}
	for _, f := range n.frontMatter() {
		fields[f.key] = f.ptr
	}
	for line := range bytes.Lines(rest[:end+1]) {
		k, v, ok := strings.Cut(string(bytes.TrimSuffix(line, []byte("\n"))), ": ")
		dst, known := fields[k]
		if !ok || !known {
			continue
		}
		if err := json.Unmarshal([]byte(v), dst); err != nil {
			return nil, fmt.Errorf("front matter %s: %v", k, err)
		}
	}
	if n.ID == "" || n.Kind == "" || n.Agent == "" {
		return nil, fmt.Errorf("front matter lacks id, kind or agent")
	}
	if !headerOnly {
		n.Body = strings.TrimPrefix(string(rest[end+5:]), "\n")
	}
	return n, nil
}

// nodePath is where a node lives: nodes/<agent>/<yyyy>/<mm>/<id>.md.
func nodePath(agent, id string, created time.Time) (RelPath, error) {
	created = created.UTC()
	return relPath("node", "nodes", agent, fmt.Sprintf("%04d", created.Year()),
		fmt.Sprintf("%02d", int(created.Month())), id+".md")
}

// CreateNode finalises n (id, path) and queues it: the file, a node.created
// event linking to it, and a Memvault-Node trailer. The id is derived from
// the node's content, so making the same node twice gives the same id; if
// that node exists already, CreateNode returns it and writes nothing.
func (tx *Tx) CreateNode(n *Node) (node *Node, created bool, err error) {
	if err := CheckName("agent", n.Agent); err != nil {
		return nil, false, err
	}
	t, err := time.Parse(time.RFC3339Nano, n.Created)
	if err != nil {
		return nil, false, fmt.Errorf("node: created %q: %w", n.Created, err)
	}
	n.Created = FormatTS(t)
	n.ID = ""
	n.Path = ""
	digest := sha256.Sum256(n.Encode())
	n.ID = derivedID("n_", t, digest[:])
	rel, err := nodePath(n.Agent, n.ID, t)
	if err != nil {
		return nil, false, err
	}
	n.Path = rel.String()
	if _, err := tx.v.Files().Stat(tx.v.Abs(rel)); err == nil {
		recorded, err := tx.nodeRecorded(n.ID)
		if err != nil || recorded {
			return n, false, err
		}
		// The file reached the disk but its event did not (the writer was
		// killed in between: the ledger is written last). Record it now,
		// with the file as it is.
		tx.CommitFile(rel)
	} else {
		tx.WriteFile(rel, n.Encode())
	}
	data, _ := json.Marshal(map[string]any{"kind": n.Kind, "path": n.Path, "span": n.Span, "children": nonNil(n.Children)})
	thread := ""
	if len(n.Threads) > 0 {
		thread = n.Threads[0]
	}
	tx.Append(&Event{Kind: "node.created", Thread: thread, Text: n.Title, Links: []string{n.ID},
		Session: n.Session, Data: data, Source: "distill"})
	tx.nodes = append(tx.nodes, n.ID)
	if tx.subject == "" {
		tx.Subject(n.Kind + ": " + nodeSubject(n))
	}
	if tx.nodeIndex != nil {
		tx.nodeIndex.add(n)
	}
	return n, true, nil
}

// nodeSubject is a node's title for a commit subject, without the session
// key titles start with ("session <key>: <first prompt>", "compaction of
// <key>: <summary>"): the key is in the Memvault-Session trailer.
func nodeSubject(n *Node) string {
	if n.Session != "" {
		if i := strings.Index(n.Title, n.Session+": "); i >= 0 {
			return n.Title[i+len(n.Session)+2:]
		}
	}
	return withoutWord(n.Title, n.Session)
}

// nodeRecorded reports whether the ledger (or this transaction) holds the
// node.created event of node id. Only lines naming the id are decoded.
func (tx *Tx) nodeRecorded(id string) (bool, error) {
	for _, ev := range tx.events {
		if ev.Kind == "node.created" && len(ev.Links) > 0 && ev.Links[0] == id {
			return true, nil
		}
	}
	st, err := tx.v.LoadStateWith([][]byte{[]byte(`"` + id + `"`)})
	if err != nil {
		return false, err
	}
	for _, r := range st.Rows {
		if r.Kind == "node.created" && len(r.Links) > 0 && r.Links[0] == id {
			return true, nil
		}
	}
	return false, nil
}

// NodeIndex is every node's front matter, with parents derived from the
// children lists of condensed nodes.
type NodeIndex struct {
	Nodes   map[string]*Node
	Parents map[string][]string
}

func (ix *NodeIndex) add(n *Node) {
	ix.Nodes[n.ID] = n
	for _, c := range n.Children {
		ix.Parents[c] = appendUnique(ix.Parents[c], n.ID)
	}
}

func appendUnique(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

// nodeCache is the derived list of node headers in .state/, one node per
// line of tab-separated fields (decoding 10k JSON objects would cost more
// than the whole of an expand). Nodes are written once, so a cached header
// stays true for as long as its file exists; loading re-reads only files the
// cache does not know.
const nodeCache = ".state/nodes.tsv"

var (
	TsvEscape   = strings.NewReplacer("\\", "\\\\", "\t", "\\t", "\n", "\\n")
	tsvUnescape = strings.NewReplacer("\\\\", "\\", "\\t", "\t", "\\n", "\n")
)

func (n *Node) cacheLine() string {
	span := "\t\t"
	if n.Span != nil {
		span = fmt.Sprintf("%s\t%d\t%d", n.Span.Path, n.Span.From, n.Span.To)
	}
	f := []string{n.Path, n.ID, n.Kind, n.Agent, n.Session, n.Harness, strings.Join(n.Threads, ","),
		strings.Join(n.Children, ","), n.Created, span, n.Title}
	for i, x := range f {
		if i != 9 {
			f[i] = TsvEscape.Replace(x)
		}
	}
	return strings.Join(f, "\t")
}

func parseCacheLine(line string) (*Node, bool) {
	f := strings.Split(line, "\t")
	if len(f) != 13 {
		return nil, false
	}
	for i := range f {
		if strings.IndexByte(f[i], '\\') >= 0 {
			f[i] = tsvUnescape.Replace(f[i])
		}
	}
	split := func(s string) []string {
		if s == "" {
			return []string{}
		}
		return strings.Split(s, ",")
	}
	n := &Node{Path: f[0], ID: f[1], Kind: f[2], Agent: f[3], Session: f[4], Harness: f[5],
		Threads: split(f[6]), Children: split(f[7]), Created: f[8], Title: f[12]}
	if f[9] != "" {
		n.Span = &Span{Path: f[9]}
		n.Span.From, _ = strconv.Atoi(f[10])
		n.Span.To, _ = strconv.Atoi(f[11])
	}
	return n, n.ID != "" && n.Path != ""
}

// Nodes loads the node index. The cache records each month folder's mtime
// next to the headers of its nodes; a folder whose mtime is unchanged has
// had no file added or removed, so its headers are taken from the cache
// without listing it. Only changed folders are listed, and only files the
// cache does not know are read. Nodes are written once; a hand edit of a
// node's front matter is not picked up until its folder changes (or the
// cache under .state/ is deleted).
func (v *Vault) Nodes() (*NodeIndex, error) {
	return v.nodes(nil)
}

// nodes is Nodes, keeping only the nodes whose cache line contains one of
// needles (nil keeps all). When the cache is fresh, the other lines are
// never decoded: a lookup around one node costs a byte search of the cache.
func (v *Vault) nodes(needles []string) (*NodeIndex, error) {
	return v.NodesThen(needles, nil)
}

// NodesThen is nodes followed, when then is not nil, by a second search of
// the same cache for needles and the needles then returns from the first
// result: a node's neighbours for one read of the cache.
func (v *Vault) NodesThen(needles []string, then func(*NodeIndex) []string) (*NodeIndex, error) {
	pick, err := v.nodePicker()
	if err != nil {
		return nil, err
	}
	ix := pick(needles)
	if then != nil {
		if more := then(ix); len(more) > 0 {
			ix = pick(append(needles, more...))
		}
	}
	return ix, nil
}

// nodePicker reads the node cache, rebuilding it first if a month folder
// changed, and returns what selects from it the nodes whose cache line
// holds one of needles (nil: every node).
func (v *Vault) nodePicker() (func(needles []string) *NodeIndex, error) {
	// Kept as bytes: a copy of the cache into a string cost more than the
	// search of it.
	data, _ := v.Files().ReadFile(filepath.Join(v.Root, nodeCache))
	// The folder lines ("#dir\t<folder>\t<mtime>") sort first.
	cachedDirs := map[string]int64{}
	for rest := data; bytes.HasPrefix(rest, []byte("#dir\t")); {
		line, next, _ := bytes.Cut(rest, []byte("\n"))
		dir, mt, _ := strings.Cut(strings.TrimPrefix(string(line), "#dir\t"), "\t")
		m, _ := strconv.ParseInt(mt, 10, 64)
		cachedDirs[dir] = m
		rest = next
	}
	months, err := v.NodeMonthDirs()
	if err != nil {
		return nil, err
	}
	dirs := map[string]int64{}
	fresh := len(months) == len(cachedDirs)
	for _, dir := range months {
		info, err := v.Files().Stat(filepath.Join(v.Root, filepath.FromSlash(dir)))
		if err != nil {
			return nil, fault.IO("read "+dir, err)
		}
		dirs[dir] = info.ModTime().UnixNano()
		if old, ok := cachedDirs[dir]; !ok || old != dirs[dir] {
			fresh = false
		}
	}
	if fresh {
		return func(needles []string) *NodeIndex {
			ix := &NodeIndex{Nodes: map[string]*Node{}, Parents: map[string][]string{}}
			for _, line := range cacheLinesWith(data, needles) {
				if n, ok := parseCacheLine(line); ok {
					ix.add(n)
				}
			}
			return ix
		}, nil
	}
	// Some folder changed: rebuild, reusing the headers the cache has.
	known := map[string]*Node{}
	for _, line := range strings.Split(string(data), "\n") {
		if n, ok := parseCacheLine(line); ok {
			known[n.Path] = n
		}
	}
	all := &NodeIndex{Nodes: map[string]*Node{}, Parents: map[string][]string{}}
	for _, dir := range months {
		entries, err := v.Files().ReadDir(filepath.Join(v.Root, filepath.FromSlash(dir)))
		if err != nil {
			return nil, fault.IO("read "+dir, err)
		}
		for _, e := range entries {
			name := e.Name()
			if e.IsDir() || !strings.HasSuffix(name, ".md") || strings.HasPrefix(name, ".") {
				continue
			}
			rel := dir + "/" + name
			if n, ok := known[rel]; ok {
				all.add(n)
				continue
			}
			data, err := v.Files().ReadFile(filepath.Join(v.Root, filepath.FromSlash(rel)))
			if err != nil {
				return nil, fault.IO("read "+rel, err)
			}
			n, err := ParseNode(data, true)
			if err != nil || n.ID != strings.TrimSuffix(name, ".md") {
				continue // not a node memvault can use; verify reports it
			}
			n.Path = rel
			all.add(n)
		}
	}
	v.saveNodeCache(all, dirs)
	return func(needles []string) *NodeIndex {
		if needles == nil {
			return all
		}
		ix := &NodeIndex{Nodes: map[string]*Node{}, Parents: map[string][]string{}}
		for _, n := range all.Nodes {
			line := n.cacheLine()
			if slices.ContainsFunc(needles, func(nd string) bool { return strings.Contains(line, nd) }) {
				ix.add(n)
			}
		}
		return ix
	}, nil
}

// cacheLinesWith returns the node lines of the cache that hold one of
// needles (all of them for nil), in the cache's order. Each needle is
// searched in the whole text at once, so a lookup around one node costs a
// few passes of a byte search, not a look at each of 10,000 lines.
func cacheLinesWith(data []byte, needles []string) []string {
	if needles == nil {
		var out []string
		for _, line := range strings.Split(string(data), "\n") {
			if line != "" && line[0] != '#' {
				out = append(out, line)
			}
		}
		return out
	}
	starts := map[int]bool{}
	for _, nd := range needles {
		if nd == "" {
			continue
		}
		for _, at := range findAll(data, []byte(nd)) {
			starts[bytes.LastIndexByte(data[:at], '\n')+1] = true
		}
	}
	order := make([]int, 0, len(starts))
	for st := range starts {
		order = append(order, st)
	}
	sort.Ints(order)
	out := make([]string, 0, len(order))
	for _, st := range order {
		line := data[st:]
		if i := bytes.IndexByte(line, '\n'); i >= 0 {
			line = line[:i]
		}
		if len(line) > 0 && line[0] != '#' {
			out = append(out, string(line))
		}
	}
	return out
}

// NodeMonthDirs lists nodes/<agent>/<yyyy>/<mm> folders.
func (v *Vault) NodeMonthDirs() ([]string, error) {
	var out []string
	list := func(rel string) ([]string, error) {
		entries, err := v.Files().ReadDir(filepath.Join(v.Root, filepath.FromSlash(rel)))
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		if err != nil {
			return nil, fault.IO("read "+rel, err)
		}
		var names []string
		for _, e := range entries {
			if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
				names = append(names, e.Name())
			}
		}
		return names, nil
	}
	agents, err := list("nodes")
	if err != nil {
		return nil, err
	}
	for _, a := range agents {
		years, err := list("nodes/" + a)
		if err != nil {
			return nil, err
		}
		for _, y := range years {
			ms, err := list("nodes/" + a + "/" + y)
			if err != nil {
				return nil, err
			}
			for _, m := range ms {
				out = append(out, "nodes/"+a+"/"+y+"/"+m)
			}
		}
	}
	return out, nil
}

func (v *Vault) saveNodeCache(ix *NodeIndex, dirs map[string]int64) {
	lines := make([]string, 0, len(ix.Nodes)+len(dirs))
	for d, mt := range dirs {
		lines = append(lines, fmt.Sprintf("#dir\t%s\t%d", d, mt))
	}
	for _, n := range ix.Nodes {
		lines = append(lines, n.cacheLine())
	}
	sort.Strings(lines)
	_ = v.Files().WriteAtomic(filepath.Join(v.Root, nodeCache), []byte(strings.Join(lines, "\n")+"\n"))
}

// ReadNode returns the full node with its body.
func (v *Vault) ReadNode(n *Node) (*Node, error) {
	data, err := v.Files().ReadFile(filepath.Join(v.Root, filepath.FromSlash(n.Path)))
	if err != nil {
		return nil, fault.IO("read "+n.Path, err)
	}
	full, err := ParseNode(data, false)
	if err != nil {
		return nil, &Error{Class: ErrCorrupt, Msg: n.Path + ": " + err.Error()}
	}
	full.Path = n.Path
	return full, nil
}

// NodeFilter selects nodes for `memvault nodes`.
type NodeFilter struct {
	Agent   string
	Session string
	Kind    string
	Thread  string
}

// Select returns the matching nodes, oldest first.
func (ix *NodeIndex) Select(f NodeFilter) []*Node {
	var out []*Node
	for _, n := range ix.Nodes {
		switch {
		case f.Agent != "" && n.Agent != f.Agent,
			f.Session != "" && n.Session != f.Session,
			f.Kind != "" && n.Kind != f.Kind,
			f.Thread != "" && !slices.Contains(n.Threads, f.Thread):
			continue
		}
		out = append(out, n)
	}
	SortNodes(out)
	return out
}

func SortNodes(ns []*Node) {
	sort.Slice(ns, func(i, j int) bool {
		if ns[i].Created != ns[j].Created {
			return ns[i].Created < ns[j].Created
		}
		if ns[i].Kind != ns[j].Kind {
			return ns[i].Kind < ns[j].Kind
		}
		return ns[i].ID < ns[j].ID
	})
}
