// Package scope is the thread structure retrieval filters by, and the
// thread a working folder belongs to: one rule for the hooks and the
// command line (docs/RETRIEVAL.md, "The current thread"). It stands on
// the engine's ledger and its derived-state files, and keeps its own: the
// scope view (.state/scope.bin) and the per-segment facts it is rebuilt
// from (.state/scope-facts.bin).
package scope

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/codec"
	"github.com/memvault/memvault/vault/fault"
	"github.com/memvault/memvault/vault/transcript"
)

// Scope facts are what retrieval needs to know about threads without reading
// the whole ledger: which threads each session belongs to, which events link
// across threads, and which threads exist. They are derived per ledger
// segment and kept in .state/scope-facts.bin by the segment's stamp, so a
// rebuild of the scope re-reads only the segments that changed.
type scopeFacts struct {
	Sessions [][3]string `json:"sessions"` // agent, session, thread
	Links    [][2]string `json:"links"`    // thread of the linking event, linked id
	Threads  []string    `json:"threads"`  // thread keys seen
	Events   [][2]string `json:"events"`   // id, thread: events that carry a thread
}

type segScope struct {
	Stamp vault.SegStamp
	Facts scopeFacts
}

// Scope is the thread structure of the vault as retrieval sees it.
type Scope struct {
	// folded holds agent, session, thread triples sorted, as the folded
	// cache has them (searched, not turned into a map: a vault has tens of
	// thousands of sessions and a recall asks about a few);
	// sessionThreads holds what was folded on top of them.
	folded         [][3]string
	sessionThreads map[[2]string]map[string]bool // agent+session → threads
	Pairs          [][2]string                   // threads joined by a link event
	known          map[string]bool
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

// View is the scope as a vault.Derived view, .state/scope.bin, read on
// every recall: its sessions (tens of thousands of agent, session, thread
// triples) are sorted triples read back as substrings of the file, not a
// map, since a recall asks about a few. Events appended since are folded
// on top, except a link event: which threads it joins needs the threads of
// older events, which only the per-segment facts hold, so it rebuilds from
// them. The file is rewritten after 64 events folded on top (about 16 KiB
// of ledger): below that, re-reading the lines costs less than writing the
// whole scope on every prompt after a write.
var View = &vault.Derived[*Scope]{
	Name:    "scope",
	Version: 2,
	Every:   64,
	Rebuild: func(v *vault.Vault, segs []vault.Segment, stamps []vault.SegStamp) (*Scope, string, bool, error) {
		return FromFacts(v, segs, stamps)
	},
	Fold:   foldScope,
	Encode: encode,
	Decode: decode,
}

// Load returns the scope of the whole ledger, through its view.
func Load(v *vault.Vault) (*Scope, error) {
	sc, _, err := View.Load(v)
	return sc, err
}

func foldScope(sc *Scope, ev *vault.Event) (*Scope, bool) {
	if ev.Thread == "" {
		return sc, true
	}
	if len(ev.Links) > 0 {
		return sc, false
	}
	sc.known[ev.Thread] = true
	if ev.Session != "" && !sc.hasSession(ev.Agent, ev.Session, ev.Thread) {
		k := [2]string{ev.Agent, ev.Session}
		if sc.sessionThreads[k] == nil {
			sc.sessionThreads[k] = map[string]bool{}
		}
		sc.sessionThreads[k][ev.Thread] = true
	}
	return sc, true
}

// Sessions returns every agent, session, thread triple, sorted.
func (sc *Scope) Sessions() [][3]string {
	out := append([][3]string(nil), sc.folded...)
	for k, ts := range sc.sessionThreads {
		for t := range ts {
			if k3 := [3]string{k[0], k[1], t}; !sc.inFolded(k3) {
				out = append(out, k3)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return less3(out[i], out[j]) })
	return out
}

func encode(e *codec.Encoder, sc *Scope) {
	sess := sc.Sessions()
	e.Int(len(sess))
	for _, t := range sess {
		e.Str(t[0])
		e.Str(t[1])
		e.Str(t[2])
	}
	e.Int(len(sc.Pairs))
	for _, p := range sc.Pairs {
		e.Str(p[0])
		e.Str(p[1])
	}
	e.Strs(vault.SortedKeys(sc.known))
}

func decode(d *codec.Decoder) (*Scope, bool) {
	sc := &Scope{sessionThreads: map[[2]string]map[string]bool{}, known: map[string]bool{}}
	if n := d.Count(); n > 0 {
		sc.folded = make([][3]string, n)
		for i := range sc.folded {
			sc.folded[i] = [3]string{d.Str(), d.Str(), d.Str()}
		}
	}
	if n := d.Count(); n > 0 {
		sc.Pairs = make([][2]string, n)
		for i := range sc.Pairs {
			sc.Pairs[i] = [2]string{d.Str(), d.Str()}
		}
	}
	for _, t := range d.Strs() {
		sc.known[t] = true
	}
	// Searched by binary search: a file not sorted is not one we wrote.
	if d.Failed() || !sort.SliceIsSorted(sc.folded, func(i, j int) bool { return less3(sc.folded[i], sc.folded[j]) }) {
		return nil, false
	}
	return sc, true
}

func (sc *Scope) inFolded(k [3]string) bool {
	i := sort.Search(len(sc.folded), func(i int) bool { return !less3(sc.folded[i], k) })
	return i < len(sc.folded) && sc.folded[i] == k
}

// FactsFile names the per-segment facts' file, .state/scope-facts.bin, in
// the framing of every file there (codec.WriteFile); a test removes
// it to tell a rebuild from a fold on top.
const (
	FactsFile    = "scope-facts"
	factsVersion = 1
)

func loadFacts(root string) map[string]segScope {
	cache := map[string]segScope{}
	d, ok := codec.ReadFile(root, FactsFile, factsVersion)
	if !ok {
		return cache
	}
	pairs := func() [][2]string {
		n := d.Count()
		if n == 0 {
			return nil
		}
		out := make([][2]string, n)
		for i := range out {
			out[i] = [2]string{d.Str(), d.Str()}
		}
		return out
	}
	for n := d.Count(); n > 0 && !d.Failed(); n-- {
		var c segScope
		if st := vault.DecodeStamps(d); len(st) == 1 {
			c.Stamp = st[0]
		}
		if k := d.Count(); k > 0 {
			c.Facts.Sessions = make([][3]string, k)
			for i := range c.Facts.Sessions {
				c.Facts.Sessions[i] = [3]string{d.Str(), d.Str(), d.Str()}
			}
		}
		c.Facts.Links = pairs()
		c.Facts.Threads = d.Strs()
		c.Facts.Events = pairs()
		cache[c.Stamp.Path] = c
	}
	if !d.Done() {
		return map[string]segScope{}
	}
	return cache
}

func saveFacts(root string, cache map[string]segScope) {
	files := make([]string, 0, len(cache))
	for f := range cache {
		files = append(files, f)
	}
	sort.Strings(files)
	codec.WriteFile(root, FactsFile, factsVersion, func(e *codec.Encoder) {
		pairs := func(ps [][2]string) {
			e.Int(len(ps))
			for _, p := range ps {
				e.Str(p[0])
				e.Str(p[1])
			}
		}
		e.Int(len(files))
		for _, f := range files {
			c := cache[f]
			vault.EncodeStamps(e, []vault.SegStamp{c.Stamp})
			e.Int(len(c.Facts.Sessions))
			for _, t := range c.Facts.Sessions {
				e.Str(t[0])
				e.Str(t[1])
				e.Str(t[2])
			}
			pairs(c.Facts.Links)
			e.Strs(c.Facts.Threads)
			pairs(c.Facts.Events)
		}
	})
}

// FromFacts folds the scope facts of every segment, reading only the
// segments whose stamp changed since their facts were kept. It is View's
// Rebuild, exported for the test that holds every view to the full fold
// (vault/continuity's TestDerivedMatchesFullFold).
func FromFacts(v *vault.Vault, segs []vault.Segment, stamps []vault.SegStamp) (*Scope, string, bool, error) {
	cache := loadFacts(v.Root)
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
			data, err := v.Files().ReadFile(filepath.Join(v.Root, filepath.FromSlash(file)))
			if err != nil {
				return nil, "", false, fault.IO("read "+file, err)
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
			sc.Pairs = append(sc.Pairs, pair)
		}
	}
	for file := range cache {
		if !live[file] {
			delete(cache, file)
			changed = true
		}
	}
	if changed {
		saveFacts(v.Root, cache)
	}
	tip := v.TipOf(segs)
	torn := len(segs) > 0 && vault.EndsTorn(v.Files(), v.SegPath(segs[len(segs)-1]), stamps[len(stamps)-1].Size)
	return sc, tip, torn, nil
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
	return vault.SortedKeys(out)
}

// Linked returns the threads joined to thread by a link event: an event in
// one thread that links to an event in the other, either way.
func (sc *Scope) Linked(thread string) []string {
	out := map[string]bool{}
	for _, p := range sc.Pairs {
		switch thread {
		case p[0]:
			out[p[1]] = true
		case p[1]:
			out[p[0]] = true
		}
	}
	return vault.SortedKeys(out)
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

// MentionsAlias reports whether query names alias as a whole word or
// phrase, ignoring case.
func MentionsAlias(query, alias string) bool {
	q := " " + strings.Join(strings.FieldsFunc(strings.ToLower(query), NotWordRune), " ") + " "
	a := " " + strings.Join(strings.FieldsFunc(strings.ToLower(alias), NotWordRune), " ") + " "
	return strings.TrimSpace(a) != "" && strings.Contains(q, a)
}

// NotWordRune reports whether r separates the words of a query: an alias
// is matched, and a snippet placed, on the same words.
func NotWordRune(r rune) bool {
	return !(r == '-' || r == '_' || r == '.' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r > 127)
}

// BindSession records that a session belongs to a thread (a session.thread
// event), unless the ledger says so already. Retrieval scopes a session's
// transcript by the threads it belongs to.
func BindSession(tx *vault.Tx, t transcript.Ref, thread string) error {
	th, err := vault.ParseThread(thread)
	if err != nil {
		return err
	}
	sc, err := Load(tx.Vault())
	if err != nil {
		return err
	}
	if slices.Contains(sc.SessionThreads(t.Agent, t.Session), th.String()) {
		return nil
	}
	for _, ev := range tx.Events() {
		if ev.Kind == "session.thread" && ev.Agent == t.Agent && ev.Session == t.Session && ev.Thread == th.String() {
			return nil
		}
	}
	tx.Append(&vault.Event{Kind: "session.thread", Agent: t.Agent, Session: t.Session, Thread: th.String(),
		Text: "session " + t.Session + " belongs to " + th.String(), Source: "cli"})
	return nil
}
