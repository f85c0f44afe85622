package heads

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"github.com/memvault/memvault/merge"
	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/gitrepo"
)

// A conflict in a head is a person's edit meeting a change of the render
// on the same rows. The merge settles it row by row (merge.MergeRows): the
// person's text stands for the rows they changed, the render's other rows
// come in beside it, so no section is ever frozen. What remains is to tell
// the person, once: a head.conflict is recorded for a conflict not on
// record yet (merge.SectionConflict.Mark: the same edit meeting the render
// again is the same conflict), and it stands, listed by status and
// threads, until `memvault resolve`, or until a refresh finds the file no
// longer holds the person's side of it.

// rowIDRe finds a head line's row: the id in backticks it ends with (the
// last one, as a row's text may quote other ids).
var rowIDRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile("`([en]_[0-9A-Za-z]{6,})`") })

// headRowKey is merge.MarkdownOptions.RowKey for heads: the row id a line
// ends with, the head a Threads line points to, or one key for a
// section's "- … N more" line.
func headRowKey(line []byte) string {
	if ms := rowIDRe().FindAllSubmatch(line, -1); len(ms) > 0 {
		return string(ms[len(ms)-1][1])
	}
	if i := bytes.LastIndex(line, []byte(" → ")); i >= 0 {
		return "→" + string(bytes.TrimSpace(line[i+len(" → "):]))
	}
	if bytes.HasPrefix(line, []byte("- … ")) && bytes.HasSuffix(line, []byte(" more")) {
		return "… more"
	}
	return ""
}

// conflictPlan is what a refresh records of a head's conflicts.
type conflictPlan struct {
	fresh    []merge.SectionConflict // conflicts not on record
	whole    string                  // the mark of a whole-file conflict not on record
	record   bool                    // a head.conflict is to be recorded
	settled  []string                // head.conflict events that no longer stand
	standing int                     // head.conflict events standing after this refresh
}

// recordedSection is a section of a head.conflict event as planConflicts
// reads it back.
type recordedSection struct {
	Heading string              `json:"heading"`
	Whole   bool                `json:"whole_file"`
	Mark    string              `json:"mark"`
	Rows    []merge.RowConflict `json:"rows"`
}

// planConflicts decides what the merge f of m records: its conflicts not on
// record already, and which recorded ones still stand.
func planConflicts(v *vault.Vault, m HeadMerge, f mergedFile) conflictPlan {
	var p conflictPlan
	marks, headings := map[string]bool{}, map[string]bool{}
	for _, c := range f.conflicts {
		marks[c.Mark()] = true
		headings[c.Heading] = true
	}
	wholeMark := ""
	if f.whole != "" {
		sum := sha256.Sum256(append([]byte("(whole file)\x00"), f.ours...))
		wholeMark = hex.EncodeToString(sum[:12])
		marks[wholeMark] = true
	}
	onRecord := map[string]bool{}
	if len(m.Book.Conflicts) > 0 {
		data := conflictData(v, m.Book)
		result, render := lineSet(f.result), lineSet(m.Theirs)
		resultRows, renderRows := rowSet(f.result), rowSet(m.Theirs)
		for _, id := range m.Book.Conflicts {
			var d struct {
				Sections []recordedSection `json:"sections"`
			}
			if raw, ok := data[id]; !ok || json.Unmarshal(raw, &d) != nil || len(d.Sections) == 0 {
				p.standing++ // unreadable: it stands until resolved
				continue
			}
			stands := false
			for _, s := range d.Sections {
				onRecord[s.Mark] = s.Mark != ""
				switch {
				case s.Mark != "" && marks[s.Mark]:
					stands = true
				case s.Whole:
					stands = stands || f.whole != ""
				case len(s.Rows) > 0:
					stands = stands || rowsStand(s.Rows, result, render, resultRows, renderRows)
				default: // recorded before rows were: stands while its section conflicts
					stands = stands || headings[s.Heading]
				}
			}
			if stands {
				p.standing++
			} else {
				p.settled = append(p.settled, id)
			}
		}
	}
	for _, c := range f.conflicts {
		if mk := c.Mark(); !onRecord[mk] {
			onRecord[mk] = true
			p.fresh = append(p.fresh, c)
		}
	}
	if wholeMark != "" && !onRecord[wholeMark] {
		p.whole = wholeMark
	}
	if p.record = len(p.fresh) > 0 || p.whole != ""; p.record {
		p.standing++
	}
	return p
}

// rowsStand reports whether the file (its lines, result, and row keys,
// resultRows) still holds the person's side of any of rows against the
// render: a line of theirs the render lacks, or a row they deleted that
// the render still shows.
func rowsStand(rows []merge.RowConflict, result, render, resultRows, renderRows map[string]bool) bool {
	for _, r := range rows {
		switch y := strings.TrimSpace(r.Yours); {
		case y != "":
			for _, l := range strings.Split(y, "\n") {
				if l = strings.TrimSpace(l); result[l] && !render[l] {
					return true
				}
			}
		case r.Row != "":
			if renderRows[r.Row] && !resultRows[r.Row] {
				return true
			}
		default:
			if t := strings.TrimSpace(r.Theirs); render[t] && !result[t] {
				return true
			}
		}
	}
	return false
}

// rowSet is the set of the row keys of a text's lines.
func rowSet(b []byte) map[string]bool {
	out := map[string]bool{}
	for _, l := range bytes.Split(b, []byte("\n")) {
		if k := headRowKey(bytes.TrimSpace(l)); k != "" {
			out[k] = true
		}
	}
	return out
}

// conflictData is the data of each unresolved head.conflict of the book:
// from the book when it holds it, else read back from the ledger (newest
// segment first; only CONTINUITY.md's bookkeeping, kept in a cache that
// holds ids alone, can lack it).
func conflictData(v *vault.Vault, book HeadBook) map[string]json.RawMessage {
	out := map[string]json.RawMessage{}
	want := map[string]bool{}
	for _, id := range book.Conflicts {
		if d, ok := book.Data[id]; ok {
			out[id] = d
		} else {
			want[id] = true
		}
	}
	if len(want) == 0 {
		return out
	}
	segs, _, err := vault.ListSegments(v.Root)
	if err != nil {
		return out
	}
	for i := len(segs) - 1; i >= 0 && len(want) > 0; i-- {
		data, err := v.Files().ReadFile(filepath.Join(v.Root, filepath.FromSlash(segs[i].String())))
		if err != nil {
			continue
		}
		for id := range want {
			at := bytes.Index(data, []byte(`"id":"`+id+`"`))
			if at < 0 {
				continue
			}
			start := bytes.LastIndexByte(data[:at], '\n') + 1
			end := len(data)
			if e := bytes.IndexByte(data[at:], '\n'); e >= 0 {
				end = at + e
			}
			var ev struct {
				Data json.RawMessage `json:"data"`
			}
			if json.Unmarshal(data[start:end], &ev) == nil {
				out[id] = ev.Data
			}
			delete(want, id)
		}
	}
	return out
}

// recordMerge appends head.rendered and, when the merge met a conflict
// not on record, head.conflict with the render's version of each section
// and the rows where the person's text stood. It returns the head.rendered
// event too. head.rendered's data.conflicts is the number of conflicts
// standing after it (0 settles them all) and data.settled names those
// that no longer stand.
func recordMerge(tx *vault.Tx, m HeadMerge, f mergedFile, p conflictPlan, theirsBlob string) (mergeOutcome, *vault.Event) {
	head := m.Rel.String()
	out := mergeOutcome{Status: f.status}
	data := map[string]any{"head": head, "blob": theirsBlob, "file": gitrepo.BlobHash(f.result), "trigger": m.Trigger, "conflicts": p.standing}
	if p.standing > 0 && len(p.settled) > 0 {
		data["settled"] = p.settled
	}
	for k, x := range m.Size {
		data[k] = x
	}
	d, _ := json.Marshal(data)
	text := head + ": " + out.Status
	if len(m.Book.Deferred) > 0 {
		text += fmt.Sprintf(" (retry of %d deferred)", len(m.Book.Deferred))
		out.retried = append([]string(nil), m.Book.Deferred...)
	}
	links := append([]string(nil), m.Book.Deferred...)
	if p.standing == 0 {
		links = append(links, m.Book.Conflicts...)
	} else {
		links = append(links, p.settled...)
	}
	rendered := tx.Append(&vault.Event{Kind: vault.KindHeadRendered, Thread: m.thread, Text: text, Data: d, Links: links, Source: m.Source})
	if !p.record {
		return out, rendered
	}
	type sec struct {
		Heading string              `json:"heading"`
		Kind    string              `json:"kind"`
		Whole   bool                `json:"whole_file,omitempty"`
		Mark    string              `json:"mark"`
		Rows    []merge.RowConflict `json:"rows,omitempty"`
		Theirs  string              `json:"theirs"`
	}
	var secs []sec
	if p.whole != "" {
		secs = append(secs, sec{Kind: f.whole, Whole: true, Mark: p.whole, Theirs: string(m.Theirs)})
		out.Sections = append(out.Sections, "(whole file)")
	}
	for _, c := range p.fresh {
		secs = append(secs, sec{Heading: c.Heading, Kind: c.Kind.String(), Mark: c.Mark(), Rows: c.Rows, Theirs: string(c.Theirs)})
		out.Sections = append(out.Sections, c.Heading)
	}
	cd, _ := json.Marshal(map[string]any{"head": head, "rendered": theirsBlob, "base": m.Book.Blob, "sections": secs})
	what := "the render's version is in this event"
	if len(p.fresh) > 0 && p.whole == "" {
		what = "the render's other rows were merged beside it; its version of your rows is in this event"
	}
	tx.Append(&vault.Event{Kind: vault.KindHeadConflict, Thread: m.thread, Source: m.Source, Data: cd,
		Text: fmt.Sprintf("%s: your text kept in %s; %s", head, strings.Join(out.Sections, "; "), what)})
	return out, rendered
}

// staleBase finds, for a file that conflicts with the render, the older
// render its editor loaded, when it was saved from one: merged row by row
// against the last render, a stale buffer that lacks the rows the last
// render brought would read as the person deleting them, and they would
// stay out of the head. Walking the renders newest first (as staleSave
// does), it stops at the first one whose successor brought a line the
// file holds (the file was read after that successor); the base is the
// oldest render passed before that whose successors brought lines the file
// lacks. It returns nil when the file holds a line the last render
// brought, or no later render brought any line the file lacks.
func staleBase(v *vault.Vault, renderedRel vault.RelPath, last string, base, ours []byte) []byte {
	const staleRenders, staleCommits = 8, 256
	oursLines := lineSet(ours)
	seen := map[string]bool{last: true}
	prev := base
	var found []byte
	tried, walked := 0, 0
	_ = v.Log(func(c gitrepo.CommitInfo) bool {
		walked++
		blob, there, err := v.Repo.BlobAt(c.Hash, renderedRel.String())
		if err != nil || !there || seen[blob] {
			return walked < staleCommits
		}
		seen[blob] = true
		tried++
		older, read := v.Repo.Blob(blob)
		if !read {
			return false
		}
		older, _ = dropPlaceholders(older, nil)
		if seesLaterRender(oursLines, prev, older) {
			return false // read after prev
		}
		if missesLaterRender(oursLines, prev, older) {
			found = older
		}
		prev = older
		return tried < staleRenders && walked < staleCommits
	})
	return found
}

// missesLaterRender reports whether a later render (later) brought a line
// the older one lacks and the file (its lines, ours) lacks too.
func missesLaterRender(ours map[string]bool, later, older []byte) bool {
	was := lineSet(older)
	for l := range lineSet(later) {
		if !was[l] && !ours[l] {
			return true
		}
	}
	return false
}
