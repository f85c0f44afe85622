package web

import (
	"context"
	"net/http"
	"slices"
	"strings"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/heads"
	"github.com/memvault/memvault/vault/node"
)

// Short ids. An id begins with its timestamp (vault.NewID), so the first
// ten characters after the marker name a millisecond, and events written
// in one burst share them: `e_01m8jkjgz3` labelled three events. Every id
// a page shows is therefore labelled with the shortest prefix of it that
// no other id of the vault starts with, and never shorter than shortLen
// (the length the pages always showed, which most ids keep). The prefix is
// what `memvault` commands take for an id (vault.ResolveEventID), so a
// label copied from a page names the one object it labels.
//
// The vault's ids are read once a request: the events' from the cached
// fold the overview and the heads read (heads.FoldedState), the nodes'
// from the node index; sorted, an id's shortest unique prefix is one
// character longer than the longest prefix it shares with either of its
// neighbours.

// shortLen is the fewest characters of an id a page shows.
const shortLen = 12

// shortIDs is the vault's event and node ids, sorted.
type shortIDs struct{ sorted []string }

// loadShortIDs reads the vault's ids; nil (every id cut to shortLen) when
// they cannot be read, as on a vault that needs repair, whose pages still
// render.
func (s *Server) loadShortIDs() *shortIDs {
	v, _, err := s.open(true)
	if err != nil {
		return nil
	}
	st, _, err := heads.FoldedState(v)
	if err != nil {
		return nil
	}
	ids := make([]string, 0, len(st.Rows))
	for _, r := range st.Rows {
		ids = append(ids, r.ID)
	}
	if ix, err := node.Load(v.Files()); err == nil {
		for id := range ix.Nodes {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return &shortIDs{sorted: slices.Compact(ids)}
}

// label is id's shortest unique prefix of at least shortLen characters;
// anything else (a commit hash, an id the vault does not hold) is cut to
// shortLen, as before.
func (x *shortIDs) label(id string) string {
	n := shortLen
	if x != nil && (strings.HasPrefix(id, vault.EventIDMarker) || strings.HasPrefix(id, vault.NodeIDMarker)) {
		i, found := slices.BinarySearch(x.sorted, id)
		if found {
			if i > 0 {
				n = max(n, common(id, x.sorted[i-1])+1)
			}
			if i+1 < len(x.sorted) {
				n = max(n, common(id, x.sorted[i+1])+1)
			}
		}
	}
	if len(id) > n {
		return id[:n]
	}
	return id
}

// common is the length of the prefix a and b share.
func common(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// idsKey is the request context's key of the request's shortIDs.
type idsKey struct{}

// withShortIDs is r carrying ids.
func withShortIDs(r *http.Request, ids *shortIDs) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), idsKey{}, ids))
}

// labeler is the label function of the request's ids.
func labeler(r *http.Request) func(string) string {
	ids, _ := r.Context().Value(idsKey{}).(*shortIDs)
	return ids.label
}
