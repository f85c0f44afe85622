package merge

import (
	"bytes"
	"strconv"
	"strings"
)

// KeepMarker, anywhere in a section of the person's file, pins that section
// and the sections nested under it: Markdown never rewrites them, whatever
// the new render says. It is an HTML comment so it stays invisible when the
// file is rendered.
const KeepMarker = "<!-- memvault:keep -->"

// MarkdownOptions tunes a section merge.
type MarkdownOptions struct {
	// Options applies to the line merge inside sections changed on both
	// sides; its labels name the alternatives in SectionConflict.Marked.
	Options
	// AppendOnly lists heading titles (compared without case, e.g. "Just
	// Completed", "Log") whose sections only ever grow: when both sides
	// changed one, the result is our lines followed by their new lines,
	// which never conflicts.
	AppendOnly []string
	// Peers merges two people's versions of a file (a git merge between
	// clones of a vault) rather than a new render into a person's file.
	// Both sides are then someone's words, so the keep marker pins
	// nothing, and a conflicted section is written into Merged the way git
	// writes a conflict, with markers around both sides, for the person
	// finishing the merge to resolve; it is still listed in Sections.
	Peers bool
	// UnionOnConflict settles, with Peers, a section both sides changed
	// beyond the line merge by the union of their lines (ours, then theirs'
	// lines we lack: appendUnion), and a section one side deleted and the
	// other changed by the changed text, so the merge never stops. For
	// rendered views whose next render replaces what came from the render
	// and keeps what a person wrote: nothing is lost, a person may have
	// two versions of a line to tidy.
	UnionOnConflict bool
	// KeepInsertions settles, without Peers, a section both sides changed
	// beyond the line merge when one side only inserted lines: the other
	// side's version with the inserted lines put in (keepInsertions). For
	// a render merged into a person's file, where a person's line added
	// next to a row the render dropped, or a row the render added next to
	// a line the person changed, is no conflict.
	KeepInsertions bool
	// MergeRows settles, without Peers, what the line merge and
	// KeepInsertions leave in conflict row by row (mergeRows): our text,
	// with the lines they added since base put in and the lines they
	// removed taken out where we left them as they were. A row both
	// changed keeps our text and is reported (SectionConflict.Rows), and
	// the section is merged all the same: a person's edit never holds the
	// render's other rows back. A section we deleted that they changed
	// comes back with only the rows they added; one we renamed takes
	// their changes under our heading (mergeDeleted). For a render merged
	// into a person's file.
	MergeRows bool
	// RowKey, with MergeRows, names the row a line shows (for a head, the
	// id it ends with; "" for none), so that a row the person rewrote or
	// deleted is known when the render changes its text. Nil makes every
	// line its own row.
	RowKey func(line []byte) string
}

// ConflictKind says why a section could not be merged.
type ConflictKind int

const (
	// BothEdited means both sides changed the section in ways the line
	// merge could not reconcile.
	BothEdited ConflictKind = iota + 1
	// OursDeleted means the person deleted a section the render changed;
	// the merged file keeps it deleted.
	OursDeleted
	// TheirsDeleted means the render dropped a section the person edited;
	// the merged file keeps the person's text.
	TheirsDeleted
)

// String names the kind for messages and JSON.
func (k ConflictKind) String() string {
	switch k {
	case BothEdited:
		return "both edited"
	case OursDeleted:
		return "deleted by ours, edited by theirs"
	case TheirsDeleted:
		return "deleted by theirs, edited by ours"
	}
	return "conflict kind " + strconv.Itoa(int(k))
}

// SectionConflict is one section Markdown could not merge. The merged text
// always holds our side of it (or nothing, if we deleted it), so the person's
// words stay in the file; the caller stores Theirs elsewhere until someone
// resolves it.
type SectionConflict struct {
	// Heading is the section's heading path, outermost first, joined by
	// " > "; empty for the text before the first heading.
	Heading string
	// Kind says why the section conflicts.
	Kind ConflictKind
	// Base, Ours and Theirs are the section's text in each version, nil
	// where the section does not exist.
	Base, Ours, Theirs []byte
	// Marked is the line merge of the section with conflict markers, for a
	// BothEdited conflict; nil otherwise.
	Marked []byte
	// Rows, for a section settled by MergeRows, lists the rows where our
	// text stood against their change; the merged text holds our text
	// with every other change of theirs.
	Rows []RowConflict
}

// Markdown merges three versions of a markdown document section by
// section, so that a hand edit in one section and a re-render of another
// never meet in a line merge. Sections are matched by heading path (the
// heading texts and levels from the top, and the rank among same-named
// siblings) and resolved as follows:
//
//   - changed on one side only: that side;
//   - changed on both sides: a line merge of the section (see Lines); if it
//     conflicts, the section keeps our text and is reported;
//   - an AppendOnly section changed on both sides: our lines, then their
//     lines that are in neither ours nor base;
//   - a section of ours holding KeepMarker (or under one that does): ours,
//     unless opts.Peers;
//   - added on one side: kept, after the section it follows there;
//   - deleted on one side and unchanged on the other: deleted;
//   - deleted on one side and changed on the other: reported, and the
//     merged text follows ours (kept if we have it, absent if we deleted it).
//
// Text outside the sections that change is copied byte for byte; nothing is
// re-rendered. Result.Conflicts is len(Result.Sections).
func Markdown(base, ours, theirs []byte, opts MarkdownOptions) (Result, error) {
	o, err := opts.Options.normalized()
	if err != nil {
		return Result{}, err
	}
	opts.Options = o

	// A missing final newline belongs to the document, not to its last
	// section: a section that stops being last must not look changed.
	base, bcut := withFinalNewline(base)
	ours, ocut := withFinalNewline(ours)
	theirs, tcut := withFinalNewline(theirs)
	cut := tcut
	if ocut != bcut {
		cut = ocut
	}

	bs, xs, ts := splitSections(base), splitSections(ours), splitSections(theirs)
	m := &sectionMerge{opts: opts, appendOnly: appendOnlyTitles(opts.AppendOnly),
		base: index(bs), ours: index(xs), theirs: index(ts), out: map[string][]byte{}, oursOrder: xs}

	// Follow our section order when we changed it (added, removed or moved
	// sections); otherwise follow theirs, so a render that reorders its
	// sections is taken as is.
	primary, secondary := ts, xs
	if !sameKeys(xs, bs) {
		primary, secondary = xs, ts
	}
	for _, s := range union(primary, secondary) {
		if err := m.resolve(s.key); err != nil {
			return Result{}, err
		}
	}
	m.mergeDeleted()
	res := m.res
	res.Merged = joinSections(order(primary, secondary, m.out), m.out, cut)
	res.Conflicts = len(res.Sections)
	return res, nil
}

// sectionMerge is one Markdown call: the sections of the three versions by
// key, and what has been decided so far.
type sectionMerge struct {
	opts               MarkdownOptions // Options normalized
	appendOnly         map[string]bool // appendOnlyTitles of opts.AppendOnly
	base, ours, theirs map[string]section
	out                map[string][]byte // key → text to emit; absent means dropped
	res                Result            // the conflicts reported so far
	deleted            []string          // sections we deleted and they changed, for mergeDeleted
	oursOrder          []section         // our sections in order, for mergeDeleted
}

// appendOnlyTitles keys the AppendOnly titles as section titles are
// compared: lower case, white space folded.
func appendOnlyTitles(titles []string) map[string]bool {
	appendOnly := map[string]bool{}
	for _, t := range titles {
		appendOnly[strings.ToLower(strings.Join(strings.Fields(t), " "))] = true
	}
	return appendOnly
}

// resolve decides the section key by where it exists: pinned by ours, in
// both sides, dropped by one side, or added by one side (see Markdown).
func (m *sectionMerge) resolve(key string) error {
	b, inB := m.base[key]
	x, inO := m.ours[key]
	y, inT := m.theirs[key]
	var bt []byte
	if inB {
		bt = b.text
	}
	switch {
	case inO && x.keep && !m.opts.Peers:
		m.out[key] = x.text
	case inO && inT:
		return m.both(key, x, y, bt, inB)
	case inO && inB:
		return m.theirsDeleted(key, x, bt)
	case inO:
		m.out[key] = x.text
	case inT && inB:
		return m.oursDeleted(key, y, bt)
	case inT:
		m.out[key] = y.text
	}
	return nil
}

// both resolves a section both sides have: the side that changed it wins;
// changed on both, an append-only section takes the union and any other
// goes to the line merge.
func (m *sectionMerge) both(key string, x, y section, bt []byte, inB bool) error {
	oChanged := !inB || !bytes.Equal(x.text, bt)
	tChanged := !inB || !bytes.Equal(y.text, bt)
	switch {
	case !tChanged || bytes.Equal(x.text, y.text):
		m.out[key] = x.text
	case !oChanged:
		m.out[key] = y.text
	case x.title != "" && m.appendOnly[strings.ToLower(x.title)]:
		m.out[key] = appendUnion(x, y, bt)
	default:
		return m.lineMerge(key, x, y, bt, inB)
	}
	return nil
}

// lineMerge merges a section both sides changed with Lines. A conflict
// keeps our text and is reported, unless Peers writes git's markers or
// UnionOnConflict settles it by the union of both sides' lines.
func (m *sectionMerge) lineMerge(key string, x, y section, bt []byte, inB bool) error {
	r, err := Lines(bt, x.text, y.text, m.opts.Options)
	if err != nil {
		return err
	}
	if r.Clean() {
		m.out[key] = r.Merged
		return nil
	}
	if m.opts.Peers && m.opts.UnionOnConflict {
		m.out[key] = appendUnion(x, y, bt)
		return nil
	}
	if m.opts.KeepInsertions && !m.opts.Peers && inB {
		if merged, ok := keepInsertions(bt, x.text, y.text); ok {
			m.out[key] = merged
			return nil
		}
	}
	var rows []RowConflict
	m.out[key] = x.text
	if m.opts.MergeRows && !m.opts.Peers {
		if m.out[key], rows = mergeRows(bt, x.text, y.text, m.opts.RowKey); len(rows) == 0 {
			return nil
		}
	}
	if m.opts.Peers {
		m.out[key] = r.Merged
	}
	m.res.Sections = append(m.res.Sections, SectionConflict{
		Heading: x.path, Kind: BothEdited,
		Base: clone(bt, inB), Ours: bytes.Clone(x.text), Theirs: bytes.Clone(y.text),
		Marked: r.Merged, Rows: rows,
	})
	return nil
}

// theirsDeleted resolves a section they dropped: gone if we left it as it
// was; if we edited it, our text stays (with Peers, between markers against
// nothing) and the conflict is reported, unless UnionOnConflict keeps the
// edit silently.
func (m *sectionMerge) theirsDeleted(key string, x section, bt []byte) error {
	if bytes.Equal(x.text, bt) {
		return nil
	}
	m.out[key] = x.text
	if m.opts.Peers && m.opts.UnionOnConflict {
		return nil
	}
	if m.opts.Peers {
		var err error
		if m.out[key], err = markedDeletion(bt, x.text, nil, m.opts.Options); err != nil {
			return err
		}
	}
	m.res.Sections = append(m.res.Sections, SectionConflict{
		Heading: x.path, Kind: TheirsDeleted,
		Base: bytes.Clone(bt), Ours: bytes.Clone(x.text),
	})
	return nil
}

// oursDeleted resolves a section we dropped: gone if they left it as it
// was; if they edited it, it stays deleted (with Peers, their edit between
// markers against nothing) and the conflict is reported, unless
// UnionOnConflict takes their edit.
func (m *sectionMerge) oursDeleted(key string, y section, bt []byte) error {
	if bytes.Equal(y.text, bt) {
		return nil
	}
	if m.opts.MergeRows && !m.opts.Peers {
		m.deleted = append(m.deleted, key) // once every section is decided
		return nil
	}
	if m.opts.Peers && m.opts.UnionOnConflict {
		m.out[key] = y.text
		return nil
	}
	if m.opts.Peers {
		var err error
		if m.out[key], err = markedDeletion(bt, nil, y.text, m.opts.Options); err != nil {
			return err
		}
	}
	m.res.Sections = append(m.res.Sections, SectionConflict{
		Heading: y.path, Kind: OursDeleted,
		Base: bytes.Clone(bt), Theirs: bytes.Clone(y.text),
	})
	return nil
}

// joinSections writes the kept sections in order, then takes off the final
// newline withFinalNewline added (cut). The result is never nil.
func joinSections(keys []string, out map[string][]byte, cut string) []byte {
	var merged []byte
	for _, key := range keys {
		if len(merged) > 0 && merged[len(merged)-1] != '\n' {
			// The previous section ended its document without a newline.
			merged = append(merged, '\n')
		}
		merged = append(merged, out[key]...)
	}
	if cut != "" && bytes.HasSuffix(merged, []byte(cut)) {
		merged = merged[:len(merged)-len(cut)]
	}
	if merged == nil {
		merged = []byte{}
	}
	return merged
}

// markedDeletion writes a section deleted on one side and edited on the
// other as git would: the edited text against nothing, between markers.
func markedDeletion(base, ours, theirs []byte, o Options) ([]byte, error) {
	m, err := Lines(base, ours, theirs, o)
	return m.Merged, err
}

// withFinalNewline returns doc ending in a newline (in the document's own
// line-end style) and the suffix it added, if any.
func withFinalNewline(doc []byte) ([]byte, string) {
	if len(doc) == 0 || doc[len(doc)-1] == '\n' {
		return doc, ""
	}
	nl := eol(doc)
	if doc[len(doc)-1] == '\r' {
		nl = "\n"
	}
	out := make([]byte, 0, len(doc)+len(nl))
	return append(append(out, doc...), nl...), nl
}

func clone(b []byte, ok bool) []byte {
	if !ok {
		return nil
	}
	return bytes.Clone(b)
}

func index(secs []section) map[string]section {
	m := make(map[string]section, len(secs))
	for _, s := range secs {
		m[s.key] = s
	}
	return m
}

func sameKeys(a, b []section) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].key != b[i].key {
			return false
		}
	}
	return true
}

// union lists the sections of a, then those of b that a lacks, so every
// key is decided once, in a stable order (conflicts are reported in it).
func union(a, b []section) []section {
	seen := make(map[string]bool, len(a))
	all := make([]section, 0, len(a)+len(b))
	for _, s := range a {
		seen[s.key] = true
		all = append(all, s)
	}
	for _, s := range b {
		if !seen[s.key] {
			all = append(all, s)
		}
	}
	return all
}

// order lays out the kept sections: those of primary in its order, then
// each kept section only secondary has, right after the nearest section
// before it in secondary that is already placed (or after the preamble).
func order(primary, secondary []section, out map[string][]byte) []string {
	keys := make([]string, 0, len(out))
	placed := map[string]bool{}
	for _, s := range primary {
		if _, ok := out[s.key]; ok {
			keys = append(keys, s.key)
			placed[s.key] = true
		}
	}
	for i, s := range secondary {
		if _, ok := out[s.key]; !ok || placed[s.key] {
			continue
		}
		at := 0
		if len(keys) > 0 && keys[0] == "" {
			at = 1 // never before the preamble
		}
		for j := i - 1; j >= 0; j-- {
			if placed[secondary[j].key] {
				for k, key := range keys {
					if key == secondary[j].key {
						at = k + 1
						break
					}
				}
				break
			}
		}
		keys = append(keys[:at], append([]string{s.key}, keys[at:]...)...)
		placed[s.key] = true
	}
	return keys
}

// appendUnion merges an append-only section: our heading and lines, then
// the lines they added that we do not have, placed before our trailing
// blank lines so a list stays one list. Lines in base that we lack were
// deleted by the person and stay deleted.
func appendUnion(ours, theirs section, base []byte) []byte {
	have := map[string]bool{}
	for _, l := range splitLines(ours.text) {
		have[lineKey(l)] = true
	}
	for _, l := range splitLines(base) {
		have[lineKey(l)] = true
	}
	var add []byte
	for _, l := range splitLines(theirs.text[theirs.head:]) {
		k := lineKey(l)
		if k == "" || have[k] {
			continue
		}
		have[k] = true
		add = append(add, bytes.TrimRight(l, "\r\n")...)
		add = append(add, eol(ours.text)...)
	}
	if len(add) == 0 {
		return ours.text
	}
	body := ours.text
	cut := len(body)
	for cut > ours.head {
		s := lineStart(body, max(cut-1, 0))
		if s < ours.head || len(bytes.TrimSpace(body[s:cut])) != 0 {
			break
		}
		cut = s
	}
	merged := make([]byte, 0, len(body)+len(add)+2)
	merged = append(merged, body[:cut]...)
	if len(merged) > 0 && merged[len(merged)-1] != '\n' {
		merged = append(merged, eol(ours.text)...)
	}
	merged = append(merged, add...)
	return append(merged, body[cut:]...)
}

// lineKey compares lines of an append-only section ignoring line ends and
// trailing blanks; blank lines yield "".
func lineKey(l []byte) string {
	return string(bytes.TrimRight(l, " \t\r\n"))
}

// eol is the line end text uses, so added lines match it.
func eol(text []byte) string {
	if i := bytes.IndexByte(text, '\n'); i > 0 && text[i-1] == '\r' {
		return "\r\n"
	}
	return "\n"
}
