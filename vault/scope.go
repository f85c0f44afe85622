package vault

import (
	"bufio"
	"bytes"
	"encoding/gob"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/memvault/memvault/vault/fault"
	"github.com/memvault/memvault/vault/fileio"
)

// Scope facts are what retrieval needs to know about threads without reading
// the whole ledger: which threads each session belongs to, which events link
// across threads, and which threads exist. They are derived per ledger
// segment and cached in .state/scope.gob by the segment's stamp, so a
// recall re-reads only the segments that changed since the last one.
type scopeFacts struct {
	Sessions [][3]string `json:"sessions"` // agent, session, thread
	Links    [][2]string `json:"links"`    // thread of the linking event, linked id
	Threads  []string    `json:"threads"`  // thread keys seen
	Events   [][2]string `json:"events"`   // id, thread: events that carry a thread
}

type segScope struct {
	Stamp segStamp   `json:"stamp"`
	Facts scopeFacts `json:"facts"`
}

// scopeCache is gob: it is read on every recall, and decoding it as JSON
// took a third of a recall on a vault of 5k sessions.
const scopeCache = ".state/scope.gob"

// Scope is the thread structure of the vault as retrieval sees it.
type Scope struct {
	// folded holds agent, session, thread triples sorted, as the folded
	// cache has them (searched, not turned into a map: a vault has tens of
	// thousands of sessions and a recall asks about a few);
	// sessionThreads holds what was folded on top of them.
	folded         [][3]string
	sessionThreads map[[2]string]map[string]bool // agent+session → threads
	pairs          [][2]string                   // threads joined by a link event
	known          map[string]bool
	resort         bool // folded came unsorted from the cache (an older memvault): save it sorted
}

// hasSession reports whether the session is known to belong to thread.
func (sc *Scope) hasSession(agent, session, thread string) bool {
	if sc.sessionThreads[[2]string{agent, session}][thread] {
		return true
	}
	return sc.inFolded([3]string{agent, session, thread})
}

func less3(a, b [3]string) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}

// foldedScope is the whole vault's scope, saved with the stamps of the
// segments it was folded from and the hash of the last event folded: when
// no segment changed, a recall reads this small file instead of every
// segment's facts, and when events were only appended since, it folds just
// those onto it.
type foldedScope struct {
	Stamps   []segStamp
	Tip      string
	Sessions [][3]string
	Pairs    [][2]string
	Known    []string
}

// foldedScopeCache is read on every recall. Its sessions (tens of
// thousands of agent, session, thread triples) are stored as one run of
// length-prefixed strings after a small gob header, and read back as
// substrings of one string: decoding them with gob cost a prompt 4 ms.
const foldedScopeCache = ".state/scope-folded.bin"

const foldedScopeMagic = "memvault scope 1\n"

func encodeFolded(f foldedScope) ([]byte, error) {
	var hdr bytes.Buffer
	if err := gob.NewEncoder(&hdr).Encode(foldedScope{Stamps: f.Stamps, Tip: f.Tip, Pairs: f.Pairs, Known: f.Known}); err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteString(foldedScopeMagic)
	putUvarint(&b, uint64(hdr.Len()))
	b.Write(hdr.Bytes())
	putUvarint(&b, uint64(len(f.Sessions)))
	for _, t := range f.Sessions {
		for _, x := range t {
			putString(&b, x)
		}
	}
	return b.Bytes(), nil
}

func decodeFolded(data []byte) (foldedScope, bool) {
	var f foldedScope
	rest, ok := bytes.CutPrefix(data, []byte(foldedScopeMagic))
	if !ok {
		return f, false
	}
	text := string(rest) // one copy; the sessions are substrings of it
	n, w := uvarintString(text)
	if w <= 0 || uint64(len(text)-w) < n {
		return f, false
	}
	if gob.NewDecoder(strings.NewReader(text[w:w+int(n)])).Decode(&f) != nil {
		return f, false
	}
	text = text[w+int(n):]
	count, w := uvarintString(text)
	if w <= 0 || count > uint64(len(text)) {
		return f, false
	}
	text = text[w:]
	f.Sessions = make([][3]string, count)
	for i := range f.Sessions {
		for j := range 3 {
			l, w := uvarintString(text)
			if w <= 0 || uint64(len(text)-w) < l {
				return foldedScope{}, false
			}
			f.Sessions[i][j] = text[w : w+int(l)]
			text = text[w+int(l):]
		}
	}
	return f, len(text) == 0
}

// foldRewriteBytes is how much ledger may be appended since the folded
// scope was saved before a reader saves it again: below it, re-reading the
// appended lines costs less than writing the file on every prompt.
const foldRewriteBytes = 16 << 10

func (sc *Scope) fold(stamps []segStamp, tip string) foldedScope {
	f := foldedScope{Stamps: stamps, Tip: tip, Pairs: sc.pairs}
	f.Sessions = append(f.Sessions, sc.folded...)
	for k, ts := range sc.sessionThreads {
		for t := range ts {
			if k3 := [3]string{k[0], k[1], t}; !sc.inFolded(k3) {
				f.Sessions = append(f.Sessions, k3)
			}
		}
	}
	sort.Slice(f.Sessions, func(i, j int) bool { return less3(f.Sessions[i], f.Sessions[j]) })
	for t := range sc.known {
		f.Known = append(f.Known, t)
	}
	return f
}

func (sc *Scope) inFolded(k [3]string) bool {
	i := sort.Search(len(sc.folded), func(i int) bool { return !less3(sc.folded[i], k) })
	return i < len(sc.folded) && sc.folded[i] == k
}

func scopeFromFolded(f foldedScope) *Scope {
	sc := &Scope{folded: f.Sessions, sessionThreads: map[[2]string]map[string]bool{}, pairs: f.Pairs, known: map[string]bool{}}
	if !sort.SliceIsSorted(sc.folded, func(i, j int) bool { return less3(sc.folded[i], sc.folded[j]) }) {
		sc.folded = append([][3]string(nil), sc.folded...)
		sort.Slice(sc.folded, func(i, j int) bool { return less3(sc.folded[i], sc.folded[j]) })
		sc.resort = true
	}
	for _, t := range f.Known {
		sc.known[t] = true
	}
	return sc
}

func sameStamps(a, b []segStamp) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// loadScope folds the scope facts of every segment, reading only segments
// whose stamp changed since they were cached.
func (v *Vault) loadScope() (*Scope, error) {
	segs, _, err := listSegments(v.Root)
	if err != nil {
		return nil, err
	}
	stamps := make([]segStamp, 0, len(segs))
	for _, s := range segs {
		st, err := stampOf(v.Root, s)
		if err != nil {
			return nil, err
		}
		stamps = append(stamps, st)
	}
	if data, err := os.ReadFile(filepath.Join(v.Root, foldedScopeCache)); err == nil {
		folded, ok := decodeFolded(data)
		if ok && sameStamps(folded.Stamps, stamps) {
			sc := scopeFromFolded(folded)
			if sc.resort {
				v.saveFoldedScope(sc.fold(stamps, folded.Tip))
			}
			return sc, nil
		}
		if ok && len(folded.Stamps) > 0 && stampsContinue(folded.Stamps, stamps) {
			if sc, ok := v.scopeSince(folded, segs, stamps); ok {
				return sc, nil
			}
		}
	}
	cache := map[string]segScope{}
	if f, err := os.Open(filepath.Join(v.Root, scopeCache)); err == nil {
		if gob.NewDecoder(bufio.NewReader(f)).Decode(&cache) != nil {
			cache = map[string]segScope{}
		}
		f.Close()
	}
	changed := false
	sc := &Scope{sessionThreads: map[[2]string]map[string]bool{}, known: map[string]bool{}}
	threadOf := map[string]string{}
	var links [][2]string
	live := map[string]bool{}
	for i, s := range segs {
		file := s.String()
		live[file] = true
		stamp := stamps[i]
		c, ok := cache[file]
		if !ok || c.Stamp != stamp {
			data, err := os.ReadFile(filepath.Join(v.Root, filepath.FromSlash(file)))
			if err != nil {
				return nil, fault.IO("read "+file, err)
			}
			c = segScope{Stamp: stamp, Facts: factsOf(data)}
			cache[file] = c
			changed = true
		}
		f := c.Facts
		for _, st := range f.Sessions {
			k := [2]string{st[0], st[1]}
			if sc.sessionThreads[k] == nil {
				sc.sessionThreads[k] = map[string]bool{}
			}
			sc.sessionThreads[k][st[2]] = true
		}
		for _, e := range f.Events {
			threadOf[e[0]] = e[1]
		}
		links = append(links, f.Links...)
		for _, t := range f.Threads {
			sc.known[t] = true
		}
	}
	// Resolve each link to the pair of threads it joins.
	seen := map[[2]string]bool{}
	for _, l := range links {
		target, ok := threadOf[l[1]]
		if !ok || target == l[0] {
			continue
		}
		pair := [2]string{l[0], target}
		if !seen[pair] {
			seen[pair] = true
			sc.pairs = append(sc.pairs, pair)
		}
	}
	for file := range cache {
		if !live[file] {
			delete(cache, file)
			changed = true
		}
	}
	if changed {
		var buf bytes.Buffer
		if gob.NewEncoder(&buf).Encode(cache) == nil {
			_ = fileio.WriteCache(filepath.Join(v.Root, scopeCache), buf.Bytes())
		}
	}
	tip := ""
	for i := len(segs) - 1; i >= 0 && tip == ""; i-- {
		tip = lastHashOf(v.abs(segs[i].rel()))
	}
	v.saveFoldedScope(sc.fold(stamps, tip))
	return sc, nil
}

func (v *Vault) saveFoldedScope(f foldedScope) {
	if data, err := encodeFolded(f); err == nil {
		_ = fileio.WriteCache(filepath.Join(v.Root, foldedScopeCache), data)
	}
}

// scopeSince folds the events appended since the folded scope was saved
// onto it. A new link event needs the threads of older events, which only
// the per-segment facts hold, so one sends the caller to the full fold (ok
// false), as does a chain that does not continue.
func (v *Vault) scopeSince(folded foldedScope, segs []segment, stamps []segStamp) (*Scope, bool) {
	sc := scopeFromFolded(folded)
	tip, _, ok := v.appendedSince(segs, stamps, folded.Stamps, folded.Tip, func(ev *Event) bool {
		if ev.Thread == "" {
			return true
		}
		if len(ev.Links) > 0 {
			return false
		}
		sc.known[ev.Thread] = true
		if ev.Session != "" {
			k := [2]string{ev.Agent, ev.Session}
			if !sc.hasSession(ev.Agent, ev.Session, ev.Thread) {
				if sc.sessionThreads[k] == nil {
					sc.sessionThreads[k] = map[string]bool{}
				}
				sc.sessionThreads[k][ev.Thread] = true
			}
		}
		return true
	})
	if !ok || tip == "" {
		return nil, false
	}
	last := len(folded.Stamps) - 1
	grown := -folded.Stamps[last].Size
	for _, st := range stamps[last:] {
		grown += st.Size
	}
	// What was learnt is not saved at once: re-reading the few lines
	// appended since costs less than writing the whole scope on every
	// prompt after a write.
	if grown > foldRewriteBytes || sc.resort {
		v.saveFoldedScope(sc.fold(stamps, tip))
	}
	return sc, true
}

// lastHashOf returns the hash of the last complete event of a ledger
// segment ("" when it has none).
func lastHashOf(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	end := bytes.LastIndexByte(data, '\n')
	if end < 0 {
		return ""
	}
	data = data[:end]
	for len(data) > 0 {
		i := bytes.LastIndexByte(data, '\n')
		var ev struct {
			Hash string `json:"hash"`
		}
		if json.Unmarshal(data[i+1:], &ev) == nil && ev.Hash != "" {
			return ev.Hash
		}
		if i < 0 {
			break
		}
		data = data[:i]
	}
	return ""
}

// factsOf extracts the scope facts of one segment's complete lines.
func factsOf(data []byte) scopeFacts {
	f := scopeFacts{}
	seenS := map[[3]string]bool{}
	seenT := map[string]bool{}
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			break
		}
		raw := data[:i]
		data = data[i+1:]
		if !bytes.Contains(raw, []byte(`"thread":"`)) {
			continue // facts are about threads: a line without one adds none
		}
		var ev struct {
			ID      string   `json:"id"`
			Agent   string   `json:"agent"`
			Session string   `json:"session"`
			Thread  string   `json:"thread"`
			Links   []string `json:"links"`
		}
		if json.Unmarshal(raw, &ev) != nil || ev.Thread == "" {
			continue
		}
		f.Events = append(f.Events, [2]string{ev.ID, ev.Thread})
		if !seenT[ev.Thread] {
			seenT[ev.Thread] = true
			f.Threads = append(f.Threads, ev.Thread)
		}
		if ev.Session != "" {
			k := [3]string{ev.Agent, ev.Session, ev.Thread}
			if !seenS[k] {
				seenS[k] = true
				f.Sessions = append(f.Sessions, k)
			}
		}
		for _, l := range ev.Links {
			f.Links = append(f.Links, [2]string{ev.Thread, l})
		}
	}
	return f
}

// SessionThreads returns the threads a session of agent belongs to.
func (sc *Scope) SessionThreads(agent, session string) []string {
	out := map[string]bool{}
	for t := range sc.sessionThreads[[2]string{agent, session}] {
		out[t] = true
	}
	lo := [3]string{agent, session, ""}
	for i := sort.Search(len(sc.folded), func(i int) bool { return !less3(sc.folded[i], lo) }); i < len(sc.folded) &&
		sc.folded[i][0] == agent && sc.folded[i][1] == session; i++ {
		out[sc.folded[i][2]] = true
	}
	return sortedKeys(out)
}

// Known reports whether a thread appears anywhere in the ledger.
func (sc *Scope) Known(thread string) bool { return sc.known[thread] }

// Linked returns the threads joined to thread by a link event: an event in
// one thread that links to an event in the other, either way.
func (sc *Scope) Linked(thread string) []string {
	out := map[string]bool{}
	for _, p := range sc.pairs {
		switch thread {
		case p[0]:
			out[p[1]] = true
		case p[1]:
			out[p[0]] = true
		}
	}
	return sortedKeys(out)
}

// Threads lists every thread the ledger knows.
func (sc *Scope) Threads() []string {
	out := make([]string, 0, len(sc.known))
	for t := range sc.known {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}

// mentionsAlias reports whether query names alias as a whole word or
// phrase, ignoring case.
func mentionsAlias(query, alias string) bool {
	q := " " + strings.Join(strings.FieldsFunc(strings.ToLower(query), notWordRune), " ") + " "
	a := " " + strings.Join(strings.FieldsFunc(strings.ToLower(alias), notWordRune), " ") + " "
	return strings.TrimSpace(a) != "" && strings.Contains(q, a)
}

func notWordRune(r rune) bool {
	return !(r == '-' || r == '_' || r == '.' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r > 127)
}

// BindSession records that a session belongs to a thread (a session.thread
// event), unless the ledger says so already. Retrieval scopes a session's
// transcript by the threads it belongs to.
func (tx *Tx) BindSession(t TranscriptRef, thread string) error {
	th, err := ParseThread(thread)
	if err != nil {
		return err
	}
	sc, err := tx.v.loadScope()
	if err != nil {
		return err
	}
	if contains(sc.SessionThreads(t.Agent, t.Session), th.String()) {
		return nil
	}
	for _, ev := range tx.events {
		if ev.Kind == "session.thread" && ev.Agent == t.Agent && ev.Session == t.Session && ev.Thread == th.String() {
			return nil
		}
	}
	tx.Append(&Event{Kind: "session.thread", Agent: t.Agent, Session: t.Session, Thread: th.String(),
		Text: "session " + t.Session + " belongs to " + th.String(), Source: "cli"})
	return nil
}
