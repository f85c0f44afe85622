package embed

import (
	"fmt"
	"math"
	"math/rand"
	"os"
	"strings"
	"testing"

	"github.com/memvault/memvault/vault/codec"
	"github.com/memvault/memvault/vault/embed/embedtest"
)

// A corpus of vectors to measure the two-step search on, with queries.
type corpus struct {
	name    string
	store   *Store
	queries [][]float32
}

// wordsCorpus is the fake endpoint's vectors (a count a dimension of the
// words, synonyms sharing one) of texts of 8 to 40 words drawn from a
// Zipf law over 5,000 words, as messages are: sparse, non-negative.
func wordsCorpus(n, dims int) corpus {
	rng := rand.New(rand.NewSource(7))
	z := rand.NewZipf(rng, 1.1, 2, 4999)
	text := func(lo, hi int) string {
		var b strings.Builder
		for range lo + rng.Intn(hi-lo) {
			fmt.Fprintf(&b, "w%d ", z.Uint64())
		}
		return b.String()
	}
	c := corpus{name: "words", store: NewStore("m", dims)}
	for i := range n {
		u, _ := unit(embedtest.Vector(text(8, 40), dims))
		c.store.Add(fmt.Sprintf("m|%d", i), "a", "", 0, u)
	}
	for range 30 {
		u, _ := unit(embedtest.Vector(text(3, 9), dims))
		c.queries = append(c.queries, u)
	}
	return c
}

// topicsCorpus is dense vectors around 300 topics (a document is its
// topic's centre plus as much noise again), as a real model's are:
// documents of a topic near each other, every dimension in use.
func topicsCorpus(n, dims int) corpus {
	rng := rand.New(rand.NewSource(11))
	gauss := func(scale float64) []float64 {
		v := make([]float64, dims)
		for j := range v {
			v[j] = rng.NormFloat64() * scale
		}
		return v
	}
	centres := make([][]float64, 300)
	for i := range centres {
		centres[i] = gauss(1)
	}
	near := func(noise float64) []float32 {
		c, v := centres[rng.Intn(len(centres))], gauss(noise)
		for j := range v {
			v[j] += c[j]
		}
		u, _ := unit(v)
		return u
	}
	c := corpus{name: "topics", store: NewStore("m", dims)}
	for i := range n {
		c.store.Add(fmt.Sprintf("m|%d", i), "a", "", 0, near(1.2))
	}
	for range 30 {
		c.queries = append(c.queries, near(1.5))
	}
	return c
}

// overlap is the share of the full scan's top k the search found (a
// document as similar as the full scan's k-th counts: which of equals
// make the cut is a tie), and whether the first ten are as similar as
// the full scan's first ten, one by one.
func overlap(s *Store, q []float32, k int) (float64, bool) {
	got, want := s.Search(q, nil, k), s.SearchFull(q, nil, k)
	found := 0
	for _, g := range got {
		if len(want) > 0 && g.Sim >= want[len(want)-1].Sim {
			found++
		}
	}
	same := len(got) >= 10 && len(want) >= 10
	for i := 0; same && i < 10; i++ {
		same = got[i].Sim == want[i].Sim
	}
	return float64(found) / float64(max(len(want), 1)), same
}

// The two-step search finds what a full scan finds: at 40,000 vectors of
// 768 dimensions (about 7 times the candidates scored exactly), at least
// 95 % of the full scan's 200 nearest, and the same first ten in 9 queries
// of 10, on both corpora; read from the file as recall reads it.
func TestSearchAgainstFullScan(t *testing.T) {
	n := 40_000
	if testing.Short() {
		n = 12_000
	}
	for _, c := range []corpus{wordsCorpus(n, 768), topicsCorpus(n, 768)} {
		root := t.TempDir()
		if !c.store.Save(root) {
			t.Fatal("save")
		}
		s := Open(root, "m", 768)
		if s.Vecs != nil || s.Len() != n {
			t.Fatalf("%s: open read %d documents, vectors in memory %v", c.name, s.Len(), s.Vecs != nil)
		}
		var sum float64
		same := 0
		for _, q := range c.queries {
			r, ok := overlap(s, q, 200)
			sum += r
			if ok {
				same++
			}
		}
		s.Close()
		mean := sum / float64(len(c.queries))
		t.Logf("%s, %d vectors: the full scan's top 200 found %.3f; the same top 10 in %d of %d queries", c.name, n, mean, same, len(c.queries))
		if mean < 0.95 || same < len(c.queries)*9/10 {
			t.Errorf("%s: top 200 found %.3f (want ≥ 0.95), same top 10 in %d of %d (want 90 %%)", c.name, mean, same, len(c.queries))
		}
	}
}

// Where the caller keeps no more documents than are scored exactly, the
// search is the full scan, exactly; and it is the same from one run to
// the next.
func TestSearchSmallIsExact(t *testing.T) {
	c := topicsCorpus(5_000, 64)
	keep := func(i int) bool { return i%2 == 0 }
	for _, q := range c.queries {
		got, want := c.store.Search(q, keep, 50), c.store.SearchFull(q, keep, 50)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("kept %d ≤ %d, yet the search differs from the full scan", 2500, Candidates)
		}
		if again := c.store.Search(q, keep, 50); fmt.Sprint(again) != fmt.Sprint(got) {
			t.Fatal("two searches differ")
		}
	}
}

// A vector damaged in the file is left out of the search, the others
// found; a cache whose signs are damaged reads as empty.
func TestSearchDamagedVector(t *testing.T) {
	root := t.TempDir()
	c := topicsCorpus(100, 32)
	c.store.Save(root)
	path := codec.FilePath(root, StoreName)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)-32*99-5] ^= 0xff // in the vector of document 0
	os.WriteFile(path, b, 0o644)
	s := Open(root, "m", 32)
	defer s.Close()
	if s.Len() != 100 {
		t.Fatalf("a damaged vector lost the cache: %d", s.Len())
	}
	got := s.Search(unitOf(c.store.Vector(0)), nil, 100)
	if len(got) != 99 {
		t.Fatalf("%d of 100 found, want the 99 undamaged", len(got))
	}
	for _, g := range got {
		if g.Index == 0 {
			t.Fatal("the damaged vector was scored")
		}
	}
	if Load(root, "m", 32).Len() != 0 {
		t.Fatal("Load read a cache whose vectors fail their sum")
	}
	b[len(b)-32*100-3] ^= 0xff // in the signs
	os.WriteFile(path, b, 0o644)
	if Open(root, "m", 32).Len() != 0 {
		t.Fatal("a cache with damaged signs was read")
	}
}

func unitOf(v []float32) []float32 {
	var n float64
	for _, x := range v {
		n += float64(x * x)
	}
	for j := range v {
		v[j] /= float32(math.Sqrt(n))
	}
	return v
}

// A vector whose bytes on disk no longer match its CRC-32 is never a hit,
// though it is checked only when it would enter the best k; a search of
// a cache read in parts (one per processor) finds what the full scan finds.
func TestDamagedVectorLeftOut(t *testing.T) {
	c := topicsCorpus(40000, 64)
	root := t.TempDir()
	if !c.store.Save(root) {
		t.Fatal("save")
	}
	q := c.store.Vector(777) // document 777 is its own nearest
	st := Open(root, "m", 64)
	if got := st.Search(q, nil, 5); len(got) == 0 || got[0].Index != 777 {
		t.Fatalf("before the damage: %v, want 777 first", got)
	}
	_, tail, _ := st.dec.TailFile() // the mapping starts at the tail
	off := tail + int64(st.vecBase+777*st.Dims)
	st.Close()
	f, err := os.OpenFile(codec.FilePath(root, StoreName), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 4)
	if _, err := f.ReadAt(b, off); err != nil {
		t.Fatal(err)
	}
	for i := range b {
		b[i] ^= 0x5a
	}
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
	f.Close()
	st = Open(root, "m", 64)
	defer st.Close()
	got, want := st.Search(q, nil, 10), st.SearchFull(q, nil, 10)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("search %v, full scan %v", got, want)
	}
	for _, g := range got {
		if g.Index == 777 {
			t.Fatalf("the damaged vector is a hit: %v", got)
		}
	}
}
