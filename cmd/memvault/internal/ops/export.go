package ops

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"time"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/fault"
	"github.com/memvault/memvault/vault/node"
	"github.com/memvault/memvault/vault/transcript"
)

// ExportFormat names the JSON form of an export; ExportVersion is its
// version. docs/EXPORT.md describes both.
const (
	ExportFormat  = "memvault-export"
	ExportVersion = 1
	// DefaultExportMessages is how many of each session's last messages
	// an export carries when --messages is not given.
	DefaultExportMessages = 200
)

// ExportQuery says what to export: the events of Thread, or of Session
// (one of them), at or after Since when it is set; at most Messages of
// each session's last messages (0: all).
type ExportQuery struct {
	Thread   string
	Session  string
	Since    time.Time
	Messages int
}

// Export is a self-contained export of a thread or a session: its heads,
// its events as the ledger holds them, its nodes, its sessions' messages,
// and a manifest of their SHA-256 hashes (docs/EXPORT.md).
type Export struct {
	Format      string             `json:"format"`
	Version     int                `json:"version"`
	Scope       ExportScope        `json:"scope"`
	Tip         string             `json:"tip"` // the hash of the source ledger's last event when exported
	Heads       []ExportHead       `json:"heads"`
	Events      []string           `json:"events"` // ledger lines, verbatim, without their newline
	Nodes       []ExportFile       `json:"nodes"`
	Transcripts []ExportTranscript `json:"transcripts"`
	Manifest    []ManifestEntry    `json:"manifest"`
	// ManifestSHA256 is the SHA-256 of the manifest's lines, each
	// "<sha256>  <name>\n" in order, as sha256sum writes them.
	ManifestSHA256 string `json:"manifest_sha256"`
}

// ExportScope is what the export was asked for.
type ExportScope struct {
	Thread   string `json:"thread,omitempty"`
	Session  string `json:"session,omitempty"`
	Since    string `json:"since,omitempty"`
	Messages int    `json:"messages"`
}

// ExportHead is a head as it stood (the file, or rendered when never
// written).
type ExportHead struct {
	Path     string `json:"path"`
	Thread   string `json:"thread"`
	Rendered bool   `json:"rendered_on_the_fly,omitempty"`
	Text     string `json:"text"`
}

// ExportFile is one file of the vault, verbatim.
type ExportFile struct {
	Path string `json:"path"`
	Text string `json:"text"`
}

// ExportTranscript is one session's transcript: all of it (Complete), or
// its last messages, From to To of Total. Parts hold the lines as the
// vault's transcript parts hold them.
type ExportTranscript struct {
	Agent    string       `json:"agent"`
	Session  string       `json:"session"`
	From     int          `json:"from"`
	To       int          `json:"to"`
	Total    int          `json:"total"`
	Complete bool         `json:"complete"`
	Parts    []ExportFile `json:"parts"`
}

// ManifestEntry is one item of an export and the SHA-256 of its bytes.
type ManifestEntry struct {
	Name   string `json:"name"`
	SHA256 string `json:"sha256"`
}

// Kinds an export leaves out: the heads' bookkeeping describes files of
// the source vault (a blob it rendered, a conflict in its work tree), and
// a join names the source's tips, which no other chain has.
func exportable(kind string) bool {
	switch kind {
	case vault.KindJoin, vault.KindPolicy, vault.KindViolation:
		// A vault's policy and the refusals it made are its own: an
		// import must not change who may write the target, nor charge it
		// with another vault's violations.
		return false
	}
	return !strings.HasPrefix(kind, "head.")
}

// BuildExport reads what q selects from v: the matching events and every
// event they need to fold the same way elsewhere (the events they link,
// the node.created events of the nodes they link, the corrections of any
// of these), in ledger order.
func BuildExport(v *vault.Vault, q ExportQuery) (*Export, error) {
	if (q.Thread == "") == (q.Session == "") {
		return nil, fault.New(vault.ErrInvalid, "export: want --thread T or --session S (one of them)")
	}
	if q.Messages < 0 {
		return nil, fault.New(vault.ErrInvalid, "export: --messages must be 0 (all) or more")
	}
	st, err := v.LoadState()
	if err != nil {
		return nil, err
	}
	ex := &Export{Format: ExportFormat, Version: ExportVersion,
		Scope: ExportScope{Thread: q.Thread, Session: q.Session, Messages: q.Messages}}
	if !q.Since.IsZero() {
		ex.Scope.Since = vault.FormatTS(q.Since)
	}
	if n := len(st.Rows); n > 0 {
		ex.Tip = st.Rows[n-1].Hash
	}
	rows := exportRows(st, q)
	if len(rows) == 0 {
		what := "thread " + q.Thread
		if q.Session != "" {
			what = "session " + q.Session
		}
		return nil, fault.New(vault.ErrNotFound, "export: %s: no event to export", what)
	}
	segs := map[string][][]byte{}
	threads := map[string]bool{}
	sessions := map[transcript.Ref]bool{}
	for _, r := range rows {
		lines, ok := segs[r.File]
		if !ok {
			data, err := vault.ReadComplete(v.Root, r.File)
			if err != nil {
				return nil, err
			}
			lines = bytes.Split(data, []byte("\n"))
			segs[r.File] = lines
		}
		if r.Line < 1 || r.Line > len(lines) {
			return nil, fault.New(vault.ErrCorrupt, "export: %s:%d: the line moved while it was read", r.File, r.Line)
		}
		ex.Events = append(ex.Events, string(lines[r.Line-1]))
		if r.Thread != "" {
			threads[r.Thread] = true
		}
		if r.Kind == vault.KindNodeCreated && len(r.Links) > 0 {
			path := dataString(r.Data, "path", "")
			data, err := v.ReadFile(path)
			if err != nil {
				return nil, fault.IO("export: read node "+path, err)
			}
			ex.Nodes = append(ex.Nodes, ExportFile{Path: path, Text: string(data)})
			if n, err := node.Parse(data, true); err == nil && n.Span != nil {
				sessions[transcript.Ref{Agent: n.Agent, Session: n.Session}] = true
			}
		}
	}
	if q.Session != "" {
		// The session's own transcript, under every agent that has one.
		infos, err := transcript.Sessions(v.Files())
		if err != nil {
			return nil, err
		}
		for _, s := range infos {
			if s.Session == q.Session {
				sessions[transcript.Ref{Agent: s.Agent, Session: s.Session}] = true
			}
		}
	}
	if err := ex.addHeads(v, threads); err != nil {
		return nil, err
	}
	refs := make([]transcript.Ref, 0, len(sessions))
	for t := range sessions {
		refs = append(refs, t)
	}
	slices.SortFunc(refs, func(a, b transcript.Ref) int { return strings.Compare(a.Path(), b.Path()) })
	for _, t := range refs {
		tr, err := readTranscript(v, t, q.Messages)
		if err != nil {
			return nil, err
		}
		if tr != nil {
			ex.Transcripts = append(ex.Transcripts, *tr)
		}
	}
	ex.Seal()
	return ex, nil
}

// exportRows selects the rows of the export, in ledger order.
func exportRows(st *vault.State, q ExportQuery) []*vault.Row {
	in := map[string]bool{}
	var queue []*vault.Row
	add := func(r *vault.Row) {
		if r != nil && !in[r.ID] {
			in[r.ID] = true
			queue = append(queue, r)
		}
	}
	nodeEvent := map[string]*vault.Row{}
	corrections := map[string][]*vault.Row{}
	for _, r := range st.Rows {
		if r.Kind == vault.KindNodeCreated && len(r.Links) > 0 {
			nodeEvent[r.Links[0]] = r
		}
		if vault.CorrectionKinds[vault.CanonicalKind(r.Kind)] && len(r.Links) > 0 {
			corrections[r.Links[0]] = append(corrections[r.Links[0]], r)
		}
		if !exportable(r.Kind) || !q.Since.IsZero() && r.Time().Before(q.Since) {
			continue
		}
		if q.Thread != "" && r.Thread == q.Thread || q.Session != "" && r.Session == q.Session {
			add(r)
		}
	}
	for len(queue) > 0 {
		r := queue[0]
		queue = queue[1:]
		for _, l := range r.Links {
			if strings.HasPrefix(l, "n_") {
				add(nodeEvent[l])
			} else {
				add(st.Get(l))
			}
		}
		for _, c := range corrections[r.ID] {
			add(c)
		}
	}
	var out []*vault.Row
	for _, r := range st.Rows {
		if in[r.ID] {
			out = append(out, r)
		}
	}
	return out
}

// addHeads adds the head of every thread the export's events are filed
// under, by path.
func (ex *Export) addHeads(v *vault.Vault, threads map[string]bool) error {
	keys := make([]string, 0, len(threads))
	for k := range threads {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		th, err := vault.ParseThread(k)
		if err != nil {
			continue // a malformed key in the ledger has no head
		}
		rel := th.HeadPath().String()
		text, rendered, err := HeadText(v, rel, th)
		if err != nil {
			return err
		}
		ex.Heads = append(ex.Heads, ExportHead{Path: rel, Thread: k, Rendered: rendered, Text: string(text)})
	}
	return nil
}

// readTranscript reads t's parts, keeping the last max messages (0: all);
// nil when t has no transcript.
func readTranscript(v *vault.Vault, t transcript.Ref, max int) (*ExportTranscript, error) {
	var parts []ExportFile
	var lines [][]int // per part, the line count
	total := 0
	for n := 0; ; n++ {
		rel := t.Part(n)
		data, err := v.ReadFile(rel)
		if errors.Is(err, fs.ErrNotExist) {
			break
		}
		if err != nil {
			return nil, fault.IO("export: read "+rel, err)
		}
		end := bytes.LastIndexByte(data, '\n') // a torn last line is not a message yet
		data = data[:end+1]
		c := bytes.Count(data, []byte("\n"))
		total += c
		parts = append(parts, ExportFile{Path: rel, Text: string(data)})
		lines = append(lines, []int{c})
	}
	if len(parts) == 0 {
		return nil, nil
	}
	tr := &ExportTranscript{Agent: t.Agent, Session: t.Session, From: 1, To: total, Total: total, Complete: true}
	if max > 0 && total > max {
		// Drop whole lines from the front, part by part.
		drop := total - max
		tr.From, tr.Complete = drop+1, false
		for i := range parts {
			if drop == 0 {
				break
			}
			c := lines[i][0]
			if drop >= c {
				parts[i].Text, drop = "", drop-c
				continue
			}
			text := parts[i].Text
			for ; drop > 0; drop-- {
				text = text[strings.IndexByte(text, '\n')+1:]
			}
			parts[i].Text = text
		}
		parts = slices.DeleteFunc(parts, func(p ExportFile) bool { return p.Text == "" })
	}
	tr.Parts = parts
	return tr, nil
}

// Seal computes the manifest: a name and the SHA-256 of every item, and
// the SHA-256 of the manifest itself.
func (ex *Export) Seal() {
	ex.Manifest = ex.manifest()
	ex.ManifestSHA256 = manifestSum(ex.Manifest)
}

func (ex *Export) manifest() []ManifestEntry {
	var m []ManifestEntry
	add := func(name, data string) {
		sum := sha256.Sum256([]byte(data))
		m = append(m, ManifestEntry{Name: name, SHA256: hex.EncodeToString(sum[:])})
	}
	add("scope", fmt.Sprintf("thread=%s session=%s since=%s messages=%d tip=%s",
		ex.Scope.Thread, ex.Scope.Session, ex.Scope.Since, ex.Scope.Messages, ex.Tip))
	for _, h := range ex.Heads {
		add("heads/"+h.Path, h.Text)
	}
	for i, e := range ex.Events {
		add(fmt.Sprintf("events/%d", i+1), e)
	}
	for _, n := range ex.Nodes {
		add(n.Path, n.Text)
	}
	for _, t := range ex.Transcripts {
		add("transcripts/"+t.Agent+"/"+t.Session, fmt.Sprintf("from=%d to=%d total=%d complete=%v", t.From, t.To, t.Total, t.Complete))
		for _, p := range t.Parts {
			add(p.Path, p.Text)
		}
	}
	return m
}

func manifestSum(m []ManifestEntry) string {
	h := sha256.New()
	for _, e := range m {
		fmt.Fprintf(h, "%s  %s\n", e.SHA256, e.Name)
	}
	return hex.EncodeToString(h.Sum(nil))
}
