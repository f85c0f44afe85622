package embed

import (
	"fmt"
	"math"
	"os"
	"runtime"
	"slices"
	"testing"

	"github.com/memvault/memvault/vault/codec"
)

// mixedStore is a cache of n documents of three tiers, four agents and
// five threads (one of them ""), 32 dimensions, with a mark.
func mixedStore(n int) *Store {
	c := topicsCorpus(n, 32)
	s := NewStore("m", 32)
	s.Marks["transcripts/a/x.jsonl"] = 4242
	for i := range n {
		id := fmt.Sprintf("%s|doc-%d|%x", []string{"m", "r", "n"}[i%3], i, i*7919)
		s.Add(id, []string{"a", "bo", "clara", "d"}[i%4], []string{"", "project:x", "person:y", "t3", "t4"}[i%5], uint64(i)*0x9e3779b97f4a7c15, c.store.Vector(i))
	}
	return s
}

// writeOld writes s as a cache of version 1 or 2 did.
func writeOld(root string, s *Store, version uint64) {
	codec.WriteFile(root, StoreName, version, func(e *codec.Encoder) {
		e.Str(s.Model)
		e.Int(s.Dims)
		e.Int(len(s.Marks))
		for k, m := range s.Marks {
			e.Str(k)
			e.Int64(m)
		}
		e.Int(s.Len())
		for i := range s.Len() {
			e.Str(s.ID(i))
			e.Str(s.Agent(i))
			e.Str(s.Thread(i))
			e.Uint64(s.TextHash(i))
			e.Uint64(uint64(math.Float32bits(s.scale(i))))
			if version == 2 {
				e.Uint64(uint64(s.sum(i)))
				e.Uint64(uint64(math.Float32bits(s.level(i))))
			}
		}
		if version == 1 {
			e.Bytes(s.Vecs)
			return
		}
		e.Ref(e.TailBlock(s.Bits))
		e.Ref(e.TailBlock(s.Vecs))
	})
}

// what is everything a store says about its documents, and the hits of a
// few filtered searches.
func what(t *testing.T, s *Store, queries [][]float32) string {
	t.Helper()
	out := fmt.Sprint(s.Model, s.Dims, s.Marks, s.Len(), s.Bytes())
	for i := range s.Len() {
		out += fmt.Sprint(s.ID(i), s.Agent(i), s.Thread(i), s.TextHash(i), s.scale(i), s.sum(i), s.level(i), s.Vector(i))
	}
	for _, q := range queries {
		pos := s.InThreads(s.Split([]string{"m|"}, func(a string) bool { return a != "bo" })[0], func(t string) bool { return t != "t3" })
		hits := s.SearchAmong(q, pos, 20)
		for _, h := range hits {
			out += fmt.Sprintf("|%s %s %s %.6f", s.ID(h.Index), s.Agent(h.Index), s.Thread(h.Index), h.Sim)
		}
		out += fmt.Sprint(s.Search(q, nil, 20))
	}
	return out
}

// A cache of version 1 or 2 still opens and loads, to the same documents
// and the same hits as the current version, and is saved in the current
// version by the first Save (no document embedded again).
func TestStoreReadsOldVersions(t *testing.T) {
	s := mixedStore(300)
	queries := topicsCorpus(300, 32).queries[:5]
	root := t.TempDir()
	if !s.Save(root) {
		t.Fatal("save")
	}
	cur := Open(root, "m", 32)
	if cur.Old() || cur.Vecs != nil || cur.Len() != 300 {
		t.Fatalf("current version: old %v, vectors in memory %v, %d documents", cur.Old(), cur.Vecs != nil, cur.Len())
	}
	want := what(t, cur, queries)
	cur.Close()
	if got := what(t, s, queries); got != want {
		t.Fatal("the cache opened from its file differs from the one saved")
	}
	for _, version := range []uint64{1, 2} {
		root := t.TempDir()
		writeOld(root, s, version)
		for name, st := range map[string]*Store{"open": Open(root, "m", 32), "load": Load(root, "m", 32)} {
			if !st.Old() {
				t.Fatalf("version %d (%s) not reported old", version, name)
			}
			if got := what(t, st, queries); got != want {
				t.Fatalf("version %d (%s) reads otherwise than the current version", version, name)
			}
			st.Close()
		}
		st := Open(root, "m", 32)
		if !st.Save(root) {
			t.Fatalf("version %d: not saved again", version)
		}
		again := Open(root, "m", 32)
		if again.Old() || again.Vecs != nil || what(t, again, queries) != want {
			t.Fatalf("version %d saved again reads otherwise", version)
		}
		again.Close()
	}
}

// A damaged column (the documents' fields, their ids, the tables) makes
// the cache read as empty: a recall misses its vectors, it never takes
// one document's id, agent or thread for another's.
func TestStoreDamagedColumns(t *testing.T) {
	s := mixedStore(200)
	root := t.TempDir()
	s.Save(root)
	path := codec.FilePath(root, StoreName)
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n, nb := 200, 4
	vecs := len(good) - n*32
	bits := vecs - n*2*nb
	ids := bits - len(s.ids)
	cols := ids - n*recW
	for name, at := range map[string]int{
		"an agent code": cols + 5*recW + colAgent, "a thread code": cols + 7*recW + colThread,
		"an id's end": cols + 9*recW + colIDEnd, "a scale": cols + 11*recW + colScale,
		"an id": ids + 40, "the last id": bits - 1, "the tables": cols - 40,
	} {
		b := append([]byte(nil), good...)
		b[at] ^= 0x01
		os.WriteFile(path, b, 0o644)
		if st := Open(root, "m", 32); st.Len() != 0 {
			t.Fatalf("damaged %s: the cache still read %d documents", name, st.Len())
		}
		if st := Load(root, "m", 32); st.Len() != 0 {
			t.Fatalf("damaged %s: Load still read %d documents", name, st.Len())
		}
	}
	// Codes outside their tables (the CRC-32 matching by chance) are
	// kept by no filter and name no agent or thread.
	s.cols[3*recW+colAgent] = 200
	s.cols[4*recW+colThread] = 200
	kept := s.InThreads(s.Split([]string{""}, nil)[0], nil)
	if slices.Contains(kept, 3) || slices.Contains(kept, 4) || !slices.Contains(kept, 5) || s.Agent(3) != "" || s.Thread(4) != "" {
		t.Fatal("a code outside its table was kept or named")
	}
}

// Split keeps exactly what a filter on each document's id, agent and
// thread keeps, in parts as in one.
func TestStoreSplit(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(maxParts))
	for _, n := range []int{500, 3*minPart + 77} {
		testStoreSplit(t, mixedStore(n))
	}
}

func testStoreSplit(t *testing.T, s *Store) {
	agents := func(a string) bool { return a == "a" || a == "clara" }
	threads := func(t string) bool { return t == "" || t == "project:x" }
	for _, prefix := range []string{"", "m|", "r|", "n|", "n|doc-1"} {
		for _, f := range [][2]func(string) bool{{nil, nil}, {agents, nil}, {nil, threads}, {agents, threads}} {
			got := s.Split([]string{prefix}, f[0])[0]
			if f[1] != nil {
				got = s.InThreads(got, f[1])
			}
			var want []int
			for i := range s.Len() {
				id := s.ID(i)
				if len(id) >= len(prefix) && id[:len(prefix)] == prefix &&
					(f[0] == nil || f[0](s.Agent(i))) && (f[1] == nil || f[1](s.Thread(i))) {
					want = append(want, i)
				}
			}
			if !slices.Equal(got, want) {
				t.Fatalf("%d documents, prefix %q: kept %d, want %d, first differing %v", s.Len(), prefix, len(got), len(want), firstDiff(got, want))
			}
		}
	}
	// Several prefixes at once: each document in the list of the first
	// that it begins with, as one pass per prefix would find them.
	all := s.Split([]string{"m|", "r|", "n|"}, agents)
	for p, prefix := range []string{"m|", "r|", "n|"} {
		if one := s.Split([]string{prefix}, agents)[0]; !slices.Equal(all[p], one) {
			t.Errorf("%d documents, %s: split together %d, alone %d", s.Len(), prefix, len(all[p]), len(one))
		}
	}
}
