package gitrepo

import (
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// Commits made within one second carry the same time; the counts must not
// depend on how the walk orders them.
func TestDivergeWithEqualCommitTimes(t *testing.T) {
	r := openTest(t, newSyncRepo(t, false))
	when := time.Unix(1_800_000_000, 0)
	mk := func(msg string, parents ...plumbing.Hash) plumbing.Hash {
		sig := object.Signature{Name: "x", Email: "x@x", When: when}
		tree, _ := r.writeObject(plumbing.TreeObject, nil)
		h, err := r.encodeAndWrite(&object.Commit{Author: sig, Committer: sig, Message: msg, TreeHash: tree, ParentHashes: parents})
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	for i := 0; i < 50; i++ {
		init := mk("init")
		base := mk("base", init)
		a := mk("a", base)
		b := mk("b", base)
		m := mk("m", b, a)
		j := mk("j", m)
		for _, c := range []struct {
			x, y         plumbing.Hash
			onlyX, onlyY int
		}{{a, b, 1, 1}, {b, a, 1, 1}, {j, a, 3, 0}, {a, j, 0, 3}, {j, b, 3, 0}} {
			d, err := r.Diverge(c.x, c.y)
			if err != nil || d.OnlyA != c.onlyX || d.OnlyB != c.onlyY {
				t.Fatalf("round %d: Diverge = %+v, %v; want %d and %d", i, d, err, c.onlyX, c.onlyY)
			}
		}
		when = when.Add(time.Second)
	}
}
