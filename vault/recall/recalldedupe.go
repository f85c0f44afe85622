package recall

// One hit per node: a section of a head file (MEMORY.md's Drill down, a
// thread head) that matches a query only on lines pointing at nodes is a
// near-duplicate of those nodes, and is left out when they are among the
// hits: the node itself is the hit worth showing (issue 36).

import (
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/memvault/memvault/vault/scope"
)

// nodeIDPattern is how a node id appears in a head file.
var nodeIDPattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\bn_[0-9a-z]{26}\b`) })

// pointerLines returns the node ids named on the lines of text that hold a
// word of q (as snippet finds them, at least three letters), or nil when
// one of those lines names no node: a section with a line of its own that
// matches is not a duplicate of anything.
func pointerLines(text, q string) []string {
	var words []string
	for _, w := range strings.FieldsFunc(strings.ToLower(q), scope.NotWordRune) {
		if len(w) >= 3 {
			words = append(words, w)
		}
	}
	var ids []string
	for _, line := range strings.Split(text, "\n") {
		lower := strings.ToLower(line)
		if !slices.ContainsFunc(words, func(w string) bool { return strings.Contains(lower, w) }) {
			continue
		}
		found := nodeIDPattern().FindAllString(line, -1)
		if len(found) == 0 {
			return nil
		}
		ids = append(ids, found...)
	}
	return ids
}

// shownOnce tracks the hits of one tier as they are kept, so that a head
// section pointing only at nodes already shown is left out, and one kept
// before its nodes came is taken out when the last of them does.
type shownOnce struct {
	nodes map[string]bool
}

// add reports whether hit is shown, given the hits kept so far; it returns
// the index in kept of a head hit the new one makes a duplicate (-1: none).
func (s *shownOnce) add(hit Hit, kept []Hit) (show bool, drop int) {
	if s.nodes == nil {
		s.nodes = map[string]bool{}
	}
	if hit.Kind == "head" {
		if len(hit.nodeRefs) > 0 && s.allShown(hit.nodeRefs) {
			return false, -1
		}
		return true, -1
	}
	if !strings.HasPrefix(hit.ID, "n_") {
		return true, -1
	}
	s.nodes[hit.ID] = true
	for i, k := range kept {
		if k.Kind == "head" && slices.Contains(k.nodeRefs, hit.ID) && s.allShown(k.nodeRefs) {
			return true, i
		}
	}
	return true, -1
}

func (s *shownOnce) allShown(ids []string) bool {
	for _, id := range ids {
		if !s.nodes[id] {
			return false
		}
	}
	return true
}
