package redact

import (
	"strings"
	"sync"
)

// The default rules' needles are looked for in one pass over the text
// rather than one strings.Contains per needle: with some 150 needles,
// the per-needle search cost a hook ten times more than the patterns
// that ran (BenchmarkText). Each needle, case-sensitive or folded, gets
// a bit; the pass looks up each pair of bytes in a table of the needles'
// first two bytes and checks the few needles that start there.

// needleSet is a set of needle bits.
type needleSet [4]uint64

func (s *needleSet) add(id int)             { s[id/64] |= 1 << (id % 64) }
func (s *needleSet) has(id int) bool        { return s[id/64]&(1<<(id%64)) != 0 }
func (s *needleSet) any() bool              { return s[0]|s[1]|s[2]|s[3] != 0 }
func pairOf(a, b byte) uint16               { return uint16(a)<<8 | uint16(b) }
func (ix *needleIndex) id(n string) int     { return ix.ids[n] }
func (ix *needleIndex) known(n string) bool { _, ok := ix.ids[n]; return ok }

// needleIndex is the table of the default rules' needles.
type needleIndex struct {
	ids        map[string]int // needle (folded ones prefixed "\x00") to bit
	pairs      [1 << 16]bool  // a needle starts with these two bytes
	candidates map[uint16][]needleEntry
	folded     bool // some needle is folded: the lower-case pass is needed
}

type needleEntry struct {
	text   string
	id     int
	folded bool
}

var needles = sync.OnceValue(func() *needleIndex {
	ix := &needleIndex{ids: map[string]int{}, candidates: map[uint16][]needleEntry{}}
	add := func(n string, folded bool) int {
		key := n
		if folded {
			key = "\x00" + n
		}
		id, ok := ix.ids[key]
		if ok {
			return id
		}
		if len(n) < 2 || len(ix.ids) >= 256 {
			panic("redact: a needle of one byte, or more than 256 needles")
		}
		id = len(ix.ids)
		ix.ids[key] = id
		p := pairOf(n[0], n[1])
		ix.pairs[p] = true
		ix.candidates[p] = append(ix.candidates[p], needleEntry{text: n, id: id, folded: folded})
		ix.folded = ix.folded || folded
		return id
	}
	for _, r := range defaultRules {
		for _, n := range r.needles {
			r.mask.add(add(n, false))
		}
		for _, n := range r.folded {
			r.mask.add(add(n, true))
		}
	}
	return ix
})

// needlesIn returns the needles text holds: case-sensitive ones as
// written, folded ones in text's ASCII lower case.
func needlesIn(text string) needleSet {
	ix := needles()
	var s needleSet
	scan := func(t string, folded bool) {
		for i := 0; i+1 < len(t); i++ {
			p := pairOf(t[i], t[i+1])
			if !ix.pairs[p] {
				continue
			}
			for _, e := range ix.candidates[p] {
				if e.folded == folded && strings.HasPrefix(t[i:], e.text) {
					s.add(e.id)
				}
			}
		}
	}
	scan(text, false)
	if ix.folded {
		scan(asciiLower(text), true)
	}
	return s
}

// mayMatchFound is mayMatch with the needles of text already found: false
// only when text holds none of r's needles. A rule that is not a default
// one (no mask) looks for its needles itself.
func (r rule) mayMatchFound(text string, found needleSet) bool {
	if r.needles == nil && r.folded == nil {
		return true
	}
	if r.mask == nil {
		lower := ""
		return r.mayMatch(text, &lower)
	}
	needles() // fills the masks
	m := r.mask
	if found[0]&m[0]|found[1]&m[1]|found[2]&m[2]|found[3]&m[3] != 0 {
		return true
	}
	// As in mayMatch: the two letters outside ASCII a case-insensitive
	// pattern takes for s and k send the text to the pattern.
	return r.folded != nil && (strings.Contains(text, "\u017f") || strings.Contains(text, "\u212a"))
}

// The default rules' masks are made here and filled when the index is
// built; DefaultRules' copies share them.
func init() {
	for i := range defaultRules {
		if defaultRules[i].needles != nil || defaultRules[i].folded != nil {
			defaultRules[i].mask = &needleSet{}
		}
	}
}
