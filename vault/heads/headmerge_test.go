package heads

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/memvault/memvault/vault"
)

// TestHeadBookFoldsLikeHeadState holds the two folds of head events to one
// answer: the heads' bookkeeping (applyHeadEvent, what status shows and a
// refresh of MEMORY.md or a thread head reads) and CONTINUITY.md's, kept
// inside the protocol's derived state. Both feed the same mergeInto, so
// a difference would make one file's refresh settle what the other's
// leaves pending.
func TestHeadBookFoldsLikeHeadState(t *testing.T) {
	kinds := []string{vault.KindHeadRendered, vault.KindHeadDeferred, vault.KindHeadConflict, vault.KindHeadResolved, vault.KindHeadEdited, vault.KindHeadTakeover}
	for seed := uint64(0); seed < 500; seed++ {
		r := rand.New(rand.NewPCG(seed, 7))
		heads := map[string]*HeadState{}
		book := HeadBook{Tokens: map[string]bool{}}
		n := r.IntN(12)
		var trail []string
		for i := 0; i < n; i++ {
			kind := kinds[r.IntN(len(kinds))]
			data := map[string]any{"head": vault.ContinuityHead}
			switch kind {
			case vault.KindHeadRendered:
				data["blob"] = fmt.Sprintf("%040d", r.IntN(3))
				data["conflicts"] = r.IntN(2)
				if len(trail) > 0 && r.IntN(2) == 0 {
					data["settled"] = []string{fmt.Sprintf("e_%d", r.IntN(len(trail)))}
				}
			case vault.KindHeadDeferred:
				data["holder"] = map[string]string{"token": fmt.Sprintf("t%d", r.IntN(3))}
			}
			raw, _ := json.Marshal(data)
			ev := &vault.Event{ID: fmt.Sprintf("e_%d", i), Kind: kind, Data: raw}
			trail = append(trail, kind)
			applyHeadEvent(heads, &vault.Row{Event: ev}, i)
			book.Add(ev)
			want := heads[vault.ContinuityHead].book()
			if !sameBook(book, want) {
				t.Fatalf("seed %d after %v:\n book      %+v\n HeadState %+v", seed, trail, book, want)
			}
		}
	}
}

// sameBook compares two books, an empty list and none alike.
func sameBook(a, b HeadBook) bool {
	norm := func(h HeadBook) HeadBook {
		if len(h.Deferred) == 0 {
			h.Deferred = nil
		}
		if len(h.Conflicts) == 0 {
			h.Conflicts = nil
		}
		if len(h.Tokens) == 0 {
			h.Tokens = nil
		}
		if len(h.Data) == 0 {
			h.Data = nil
		}
		return h
	}
	return reflect.DeepEqual(norm(a), norm(b))
}
