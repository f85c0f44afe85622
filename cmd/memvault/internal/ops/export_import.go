package ops

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/fault"
	"github.com/memvault/memvault/vault/fileio"
	"github.com/memvault/memvault/vault/node"
	"github.com/memvault/memvault/vault/transcript"
)

// ImportResult says what an import wrote and what it found already there.
type ImportResult struct {
	Events      int    `json:"events"`      // events appended
	Nodes       int    `json:"nodes"`       // node files written
	Transcripts int    `json:"transcripts"` // transcript parts written
	Skipped     int    `json:"skipped"`     // items the vault held already, byte for byte
	Manifest    string `json:"manifest_sha256"`
}

var nodePathRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^nodes/([^/]+)/([0-9]{4})/([0-9]{2})/(n_[0-9a-z]{26})\.md$`)
})

// ParseExport decodes an export and checks every hash it carries before
// anything is written: each item against the manifest, the manifest
// against its own hash, each event line against the hash the ledger
// sealed it with, and the shape of every path. A failure is ErrCorrupt
// (a changed export) or ErrInvalid (not an export, or not one this
// version reads).
func ParseExport(name string, data []byte) (*Export, error) {
	var ex Export
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&ex); err != nil || ex.Format != ExportFormat {
		return nil, fault.New(vault.ErrInvalid, "import: %s: not a memvault export (want the JSON of memvault export --format json)", name).
			WithHint("a harness's transcript is imported with memvault transcript import")
	}
	if ex.Version != ExportVersion {
		return nil, fault.New(vault.ErrInvalid, "import: %s: export version %d; this memvault reads version %d", name, ex.Version, ExportVersion)
	}
	corrupt := func(format string, args ...any) error {
		return fault.New(vault.ErrCorrupt, "import: %s: %s; nothing was imported", name, fmt.Sprintf(format, args...)).
			WithHint("the export was changed after it was written: export it again from the source vault")
	}
	want := ex.manifest()
	if len(want) != len(ex.Manifest) {
		return nil, corrupt("the manifest lists %d items, the export holds %d", len(ex.Manifest), len(want))
	}
	for i, w := range want {
		if got := ex.Manifest[i]; got != w {
			return nil, corrupt("%s: sha256 mismatch (manifest %s, content %s)", w.Name, short(got.SHA256), short(w.SHA256))
		}
	}
	if sum := manifestSum(ex.Manifest); sum != ex.ManifestSHA256 {
		return nil, corrupt("the manifest's sha256 is %s, the export says %s", short(sum), short(ex.ManifestSHA256))
	}
	for i, line := range ex.Events {
		ev, ok, err := vault.ParseLine([]byte(line))
		switch {
		case err != nil || ev.ID == "" || ev.Kind == "":
			return nil, corrupt("events/%d: not a ledger event", i+1)
		case !ok:
			return nil, corrupt("events/%d (%s): hash mismatch: the line was changed after the ledger sealed it", i+1, ev.ID)
		case !exportable(ev.Kind):
			return nil, fault.New(vault.ErrInvalid, "import: %s: events/%d (%s): kind %s is not imported (docs/EXPORT.md)", name, i+1, ev.ID, ev.Kind)
		}
	}
	for _, n := range ex.Nodes {
		m := nodePathRE().FindStringSubmatch(n.Path)
		if m == nil || fileio.CheckName("agent", m[1]) != nil {
			return nil, fault.New(vault.ErrInvalid, "import: %s: node path %q is not nodes/<agent>/<yyyy>/<mm>/<id>.md", name, n.Path)
		}
		hdr, err := node.Parse([]byte(n.Text), true)
		if err != nil || hdr.ID != m[4] || hdr.Agent != m[1] {
			return nil, fault.New(vault.ErrInvalid, "import: %s: %s is not the node its path names", name, n.Path)
		}
	}
	for _, t := range ex.Transcripts {
		ref := transcript.Ref{Agent: t.Agent, Session: t.Session}
		if err := ref.Check(); err != nil {
			return nil, fault.New(vault.ErrInvalid, "import: %s: transcript %s/%s: %v", name, t.Agent, t.Session, err)
		}
		for _, p := range t.Parts {
			if partNumber(ref, p.Path) < 0 {
				return nil, fault.New(vault.ErrInvalid, "import: %s: %s is not a part of session %s's transcript", name, p.Path, t.Session)
			}
		}
	}
	return &ex, nil
}

// partNumber is the number of the part of t's transcript at path, or -1.
func partNumber(t transcript.Ref, path string) int {
	for n := 0; n < 10000; n++ {
		if t.Part(n) == path {
			return n
		}
	}
	return -1
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

// Import writes a checked export (ParseExport) into tx's vault: each
// event the vault does not hold is appended with its id, time, agent,
// session, kind, thread, text, data, links and source as they were, and
// sealed onto this vault's chain (a new prev and hash: the source's hash
// stays in the export and in the vault.KindExportImported event's manifest
// hash); node files and whole transcripts the vault does not hold are
// written. An item the vault holds already, the same, is skipped; one it
// holds different is ErrConflict, and nothing is written. A link no event
// or node of the export or the vault answers is ErrInvalid: the vault
// would no longer verify.
func Import(tx *vault.Tx, ex *Export) (*ImportResult, error) {
	st, err := tx.State()
	if err != nil {
		return nil, err
	}
	res := &ImportResult{Manifest: ex.ManifestSHA256}
	nodes := map[string]bool{}
	for _, n := range ex.Nodes {
		nodes[nodePathRE().FindStringSubmatch(n.Path)[4]] = true
	}
	have := map[string]bool{}
	events := make([]*vault.Event, 0, len(ex.Events))
	for _, line := range ex.Events {
		ev, _, _ := vault.ParseLine([]byte(line))
		events = append(events, ev)
		have[ev.ID] = true
	}
	for _, ev := range events {
		for _, l := range ev.Links {
			if !have[l] && !nodes[l] && st.Get(l) == nil && !nodeOnDisk(tx.Vault(), l) {
				return nil, fault.New(vault.ErrInvalid, "import: event %s links %s, which neither the export nor the vault holds", ev.ID, l)
			}
		}
		if old := st.Get(ev.ID); old != nil {
			if !sameEvent(old.Event, ev) {
				return nil, fault.New(vault.ErrConflict, "import: event %s: the vault holds a different event with this id; nothing was imported", ev.ID)
			}
			res.Skipped++
			continue
		}
		ev.Prev, ev.Hash = "", ""
		tx.Append(ev)
		res.Events++
	}
	for _, n := range ex.Nodes {
		m := nodePathRE().FindStringSubmatch(n.Path)
		wrote, err := writeNew(tx, vault.MustRel("nodes", m[1], m[2], m[3], m[4]+".md"), n.Text)
		if err != nil {
			return nil, err
		}
		res.count(wrote, &res.Nodes)
	}
	if err := checkSpans(tx.Vault(), ex); err != nil {
		return nil, err
	}
	for _, t := range ex.Transcripts {
		if !t.Complete {
			continue // an excerpt is for reading; checkSpans made sure no node needs it
		}
		ref := transcript.Ref{Agent: t.Agent, Session: t.Session}
		for _, p := range t.Parts {
			wrote, err := writeNew(tx, vault.TranscriptRel(ref, partNumber(ref, p.Path)), p.Text)
			if err != nil {
				return nil, err
			}
			res.count(wrote, &res.Transcripts)
		}
	}
	if res.Events+res.Nodes+res.Transcripts > 0 {
		data, _ := json.Marshal(map[string]any{"manifest_sha256": ex.ManifestSHA256, "tip": ex.Tip,
			"events": res.Events, "nodes": res.Nodes, "transcripts": res.Transcripts, "skipped": res.Skipped,
			"thread": ex.Scope.Thread, "session": ex.Scope.Session})
		tx.Append(&vault.Event{Kind: vault.KindExportImported, Source: "import", Data: data,
			Text: fmt.Sprintf("imported %d events, %d nodes, %d transcript parts from export %s", res.Events, res.Nodes, res.Transcripts, short(ex.ManifestSHA256))})
		tx.Subject(fmt.Sprintf("import: %d events from export %s", res.Events, short(ex.ManifestSHA256)))
	}
	return res, nil
}

func (res *ImportResult) count(wrote bool, n *int) {
	if wrote {
		*n++
	} else {
		res.Skipped++
	}
}

// writeNew queues text at rel unless the vault holds it already: the
// same bytes are skipped (false), different ones are ErrConflict.
func writeNew(tx *vault.Tx, rel vault.RelPath, text string) (bool, error) {
	old, err := tx.Vault().ReadFile(rel.String())
	if err == nil {
		if string(old) == text {
			return false, nil
		}
		return false, fault.New(vault.ErrConflict, "import: %s: the vault holds a different file there; nothing was imported", rel)
	}
	tx.WriteFile(rel, []byte(text))
	return true, nil
}

// checkSpans refuses an export whose nodes cite messages of a transcript
// that neither the export holds whole nor the vault holds: verify checks
// that a node's span is there.
func checkSpans(v *vault.Vault, ex *Export) error {
	whole := map[string]int{}
	for _, t := range ex.Transcripts {
		if t.Complete {
			whole[transcript.Ref{Agent: t.Agent, Session: t.Session}.Path()] = t.Total
		}
	}
	for _, n := range ex.Nodes {
		hdr, _ := node.Parse([]byte(n.Text), true)
		if hdr.Span == nil {
			continue
		}
		if total, ok := whole[hdr.Span.Path]; ok && total >= hdr.Span.To {
			continue
		}
		if _, err := v.ReadFile(hdr.Span.Path); err == nil {
			continue // the vault's own transcript: verify says whether it has the messages
		}
		return fault.New(vault.ErrInvalid, "import: node %s cites messages %d-%d of %s, which the export does not hold whole; nothing was imported",
			hdr.ID, hdr.Span.From, hdr.Span.To, hdr.Span.Path).
			WithHint("export again with --messages 0 to carry whole transcripts")
	}
	return nil
}

// nodeOnDisk reports whether the vault holds the node id (nodes/ is
// walked only for a link the export does not answer).
func nodeOnDisk(v *vault.Vault, id string) bool {
	if !strings.HasPrefix(id, "n_") {
		return false
	}
	ix, err := node.Load(v.Files())
	if err != nil {
		return false
	}
	return ix.Nodes[id] != nil
}

// sameEvent reports whether two events say the same, wherever each sits
// in its chain (prev and hash aside).
func sameEvent(a, b *vault.Event) bool {
	x, y := *a, *b
	x.Prev, x.Hash, y.Prev, y.Hash = "", "", "", ""
	ja, _ := json.Marshal(&x)
	jb, _ := json.Marshal(&y)
	return bytes.Equal(ja, jb)
}
