package recall

// What an index hit resolves to: the row, head section, node or
// message it names, whether it still holds, and the snippet shown.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/memvault/memvault/vault/node"
	"github.com/memvault/memvault/vault/scope"
	"github.com/memvault/memvault/vault/transcript"

	"github.com/memvault/memvault/index"
	"github.com/memvault/memvault/vault"
)

// rowStatus is where a row stands that no longer holds, and the event
// that made it so.
type rowStatus struct {
	status, by string
}

// rowStatuses returns the rows that no longer hold, as State.Status would
// say: retracted, superseded, or closed by a done, a commitment's close,
// an invalidation or an archiving. A retracted correction does not count.
// Only correction events are read, from the derived list of corrections.
func rowStatuses(v *vault.Vault) (map[string]rowStatus, error) {
	segs, err := v.CorrectionRows()
	if err != nil {
		return nil, err
	}
	var rows []vault.Correction
	for _, sr := range segs {
		rows = append(rows, sr.Rows...)
	}
	retracted := map[string]string{}
	for _, c := range rows {
		if vault.CanonicalKind(c.Kind) == "retract" && c.Link != "" {
			retracted[c.Link] = c.ID
		}
	}
	gone := map[string]rowStatus{}
	for _, c := range rows { // in ledger order: a later correction wins, as in State.add
		k := vault.CanonicalKind(c.Kind)
		switch {
		case c.Link == "" || k == "retract" || retracted[c.ID] != "":
		case k == "supersede" || k == vault.KindDecisionSuperseed:
			gone[c.Link] = rowStatus{vault.StatusSuperseded, c.ID}
		case vault.CloserKinds[k] != "":
			if s := gone[c.Link]; s.status != vault.StatusSuperseded {
				gone[c.Link] = rowStatus{vault.CloserKinds[k], c.ID}
			}
		}
	}
	for id, by := range retracted {
		gone[id] = rowStatus{vault.StatusRetracted, by}
	}
	return gone, nil
}

// rowKinds are the ledger kinds recall returns as structured rows: memory a
// person or agent recorded, not the vault's own bookkeeping.
func recallableKind(kind string) bool {
	switch {
	case kind == "retract", kind == "commitment.close", kind == vault.KindDone, strings.HasPrefix(kind, "node."),
		strings.HasPrefix(kind, "learning."), strings.HasPrefix(kind, "decision."), strings.HasPrefix(kind, "continuity."),
		strings.HasPrefix(kind, "transcript."), strings.HasPrefix(kind, "head."), strings.HasPrefix(kind, "session."):
		return false
	}
	return true
}

// resolveHit turns an index document id back into what it points at,
// reading the one line or file it names.
func resolveHit(v *vault.Vault, h index.Hit, tier string, gone map[string]rowStatus) (Hit, bool, error) {
	kind, rest, _ := strings.Cut(h.ID, "|")
	hit := Hit{Tier: tier, Score: h.Score}
	switch kind {
	case "r":
		file, off := splitOffset(rest)
		line, n, err := lineAt(v, file, off)
		if err != nil || line == nil {
			return hit, false, err
		}
		var ev vault.Event
		if json.Unmarshal(line, &ev) != nil || !recallableKind(vault.CanonicalKind(ev.Kind)) {
			return hit, false, nil
		}
		r := &vault.Row{Event: &ev}
		hit.ID, hit.Kind, hit.Thread, hit.Agent, hit.Session, hit.TS = ev.ID, r.EffectiveKind(), ev.Thread, ev.Agent, ev.Session, ev.TS
		hit.Status = vault.StatusActive
		if g, ok := gone[ev.ID]; ok {
			hit.Status = g.status
			switch g.status {
			case vault.StatusRetracted:
				hit.RetractedBy = g.by
			case vault.StatusSuperseded:
				hit.SupersededBy = g.by
			default:
				hit.ClosedBy = g.by
			}
		}
		hit.Source, hit.Text = HitSource{File: file, Line: n}, ev.Text
	case "m":
		file, off, ok := messageDoc(h.ID)
		if !ok {
			return hit, false, nil
		}
		line, _, err := lineAt(v, file, off)
		if err != nil || line == nil {
			return hit, false, err
		}
		m, err := transcript.DecodeLine(line)
		if err != nil {
			return hit, false, nil
		}
		agent, session := transcriptOfPart(file)
		hit.ID, hit.Kind, hit.Agent, hit.Session = m.ID, string(m.Role), agent, session
		if !m.TS.IsZero() {
			hit.TS = vault.FormatTS(m.TS)
		}
		hit.Source, hit.Text = HitSource{File: file, Line: m.N}, m.Text
	case "n":
		data, err := v.Files().ReadFile(filepath.Join(v.Root, filepath.FromSlash(rest)))
		if err != nil {
			return hit, false, nil // gone since indexed
		}
		n, err := node.Parse(data, false)
		if err != nil {
			return hit, false, nil
		}
		hit.ID, hit.Kind, hit.Agent, hit.Session, hit.TS = n.ID, n.Kind, n.Agent, n.Session, n.Created
		if len(n.Threads) > 0 {
			hit.Thread = n.Threads[0]
		}
		hit.Source, hit.Text = HitSource{File: rest}, n.Body
	case "h":
		file, section := splitOffset(rest)
		text, thread, line, err := headSection(v, file, int(section))
		if err != nil || text == "" {
			return hit, false, err
		}
		hit.ID, hit.Kind, hit.Thread, hit.Agent = file+"#"+strconv.Itoa(int(section)), "head", thread, v.Config.Agent
		hit.Source, hit.Text = HitSource{File: file, Line: line}, text
	default:
		return hit, false, nil
	}
	return hit, true, nil
}

func splitOffset(s string) (string, int64) {
	i := strings.LastIndexByte(s, '|')
	if i < 0 {
		return s, 0
	}
	n, _ := strconv.ParseInt(s[i+1:], 10, 64)
	return s[:i], n
}

// transcriptOfPart recovers agent and session from a part's path.
func transcriptOfPart(rel string) (agent, session string) {
	parts := strings.Split(rel, "/")
	if len(parts) != 3 {
		return "", ""
	}
	name := strings.TrimSuffix(parts[2], ".jsonl")
	base, _, _ := strings.Cut(name, ".")
	return parts[1], transcript.DecodeSessionFileName(base)
}

// lineAt reads the complete line that starts at off in a vault file, and
// its 1-based line number when cheap to know (ledger lines: counted).
func lineAt(v *vault.Vault, rel string, off int64) ([]byte, int, error) {
	f, err := v.Files().Open(filepath.Join(v.Root, filepath.FromSlash(rel)))
	if err != nil {
		return nil, 0, nil // gone since indexed; the index will catch up
	}
	defer f.Close()
	line, err := bufio.NewReader(io.NewSectionReader(f, off, 1<<30)).ReadBytes('\n')
	if err != nil {
		return nil, 0, nil
	}
	n := 0
	if strings.HasPrefix(rel, "ledger/") {
		head := make([]byte, off)
		if _, err := f.ReadAt(head, 0); err == nil {
			n = bytes.Count(head, []byte("\n")) + 1
		}
	}
	return line, n, nil
}

// snippet cuts text around the first word of the query it contains, at most
// about 240 characters, on one line, harness markup removed; it starts and
// ends on a word boundary (a word longer than the snippet aside).
func snippet(text, q string) string {
	text = vault.OneLine(transcript.StripMarkup(text))
	if utf8.RuneCountInString(text) <= 240 {
		return text
	}
	lower := strings.ToLower(text)
	at := -1
	for _, w := range strings.FieldsFunc(strings.ToLower(q), scope.NotWordRune) {
		if len(w) < 3 {
			continue
		}
		if i := strings.Index(lower, w); i >= 0 && (at < 0 || i < at) {
			at = i
		}
	}
	if at < 0 {
		return transcript.CutWords(text, 240)
	}
	// Start about 80 bytes before the word found, at the start of a word:
	// the first after a space in between, else the found word's own.
	start := max(0, at-80)
	if j := strings.IndexByte(text[start:at], ' '); start > 0 && j >= 0 {
		start += j + 1
	} else if start > 0 {
		for start = at; start > 0 && text[start-1] != ' '; start-- {
		}
	}
	out := transcript.CutWords(text[start:], 240)
	if start > 0 {
		out = "…" + out
	}
	return out
}
