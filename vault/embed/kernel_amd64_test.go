package embed

import (
	"math/rand"
	"slices"
	"testing"

	"golang.org/x/sys/unix"
)

// The vector kernel gives every document the score the word-by-word
// scorer gives it: random queries and reduced vectors, sparse and dense,
// at every size of a last chunk (one to eight words) and over several
// chunks, documents taken in any order and more than once.
func TestVectorRoughIsTheScore(t *testing.T) {
	if !vectorRough {
		t.Skip("this processor has no AVX-512 bit count: the kernel is not used")
	}
	rng := rand.New(rand.NewSource(9))
	for _, dims := range []int{57, 64, 128, 192, 256, 320, 384, 448, 505, 512, 704, 768, 1024, 1536, 4096} {
		nb := (dims + 7) / 8
		const docs = 64
		var planes []byte
		for d := range docs {
			row := make([]byte, dims)
			for j := range row {
				row[j] = byte(int8(rng.Intn(255) - 127))
				if d%3 == 0 && rng.Intn(10) > 0 { // sparse, as word counts are
					row[j] = 0
				}
			}
			planes, _ = appendSigns(planes, row)
		}
		for trial := range 50 {
			qq := make([]int32, dims)
			for j := range qq {
				qq[j] = int32(rng.Intn(255) - 127)
				if trial%4 == 0 && rng.Intn(8) > 0 {
					qq[j] = 0
				}
			}
			rq := newRoughQuery(roughLevels(qq), nb)
			pos := make([]int, 1+rng.Intn(3*docs))
			for j := range pos {
				pos[j] = rng.Intn(docs)
			}
			out := make([]int32, len(pos))
			if !rq.batch(planes, pos, out) {
				t.Fatalf("dims %d: the kernel was not used", dims)
			}
			for j, i := range pos {
				if want := rq.score(planes[2*i*nb:]); out[j] != want {
					t.Fatalf("dims %d, trial %d, document %d: kernel %d, word by word %d", dims, trial, i, out[j], want)
				}
			}
		}
	}
}

// The kernel reads no plane outside the slice: a position past it makes
// batch decline, and the word-by-word scorer is used; so do planes that
// do not end on a word.
func TestVectorRoughDeclinesOutside(t *testing.T) {
	if !vectorRough {
		t.Skip("this processor has no AVX-512 bit count")
	}
	rq := newRoughQuery(make([]int32, 768), 96)
	planes := make([]byte, 3*192)
	for _, pos := range [][]int{{0, 3}, {-1}, {2, 1, 1 << 40}} {
		if rq.batch(planes, pos, make([]int32, len(pos))) {
			t.Errorf("batch scored positions %v of 3 documents", pos)
		}
	}
	if !rq.batch(planes, []int{2, 0, 1}, make([]int32, 3)) {
		t.Error("batch declined positions inside")
	}
	if newRoughQuery(make([]int32, 449), 57).batch(make([]byte, 2*57), []int{0}, make([]int32, 1)) {
		t.Error("batch scored planes of 57 bytes")
	}
}

// The kernel reads no byte past a document's last word: the last
// document's planes end where a page that cannot be read begins (a read
// past them faults), at every size of a last chunk.
func TestVectorRoughStopsAtTheLastWord(t *testing.T) {
	if !vectorRough {
		t.Skip("this processor has no AVX-512 bit count")
	}
	mem := guardedPage(t)
	for words := 1; words <= 16; words++ {
		stride := 16 * words
		planes := mem[len(mem)-stride:] // one document, ending at the guard page
		for j := range planes {
			planes[j] = byte(j * 37)
		}
		qq := make([]int32, 64*words)
		for j := range qq {
			qq[j] = int32(j%255 - 127)
		}
		rq := newRoughQuery(roughLevels(qq), 8*words)
		out := make([]int32, 1)
		if !rq.batch(planes, []int{0}, out) {
			t.Fatalf("%d words: the kernel was not used", words)
		}
		if want := rq.score(planes); out[0] != want {
			t.Fatalf("%d words: kernel %d, word by word %d", words, out[0], want)
		}
	}
}

// The exact step's vector kernel gives every row the Go loop's dot
// product: random queries over the whole range (±127 included) and rows,
// at every length of a last chunk and over several chunks.
func TestVectorDotIsTheDot(t *testing.T) {
	if !vectorDot {
		t.Skip("this processor has no AVX-512 on 16-bit values: the kernel is not used")
	}
	rng := rand.New(rand.NewSource(21))
	for dims := 1; dims <= 200; dims++ {
		testDots(t, rng, dims)
	}
	for _, dims := range []int{256, 384, 767, 768, 1024, 1536, 3072, 4096} {
		testDots(t, rng, dims)
	}
}

func testDots(t *testing.T, rng *rand.Rand, dims int) {
	for trial := range 20 {
		qq, row := make([]int32, dims), make([]byte, dims)
		for j := range qq {
			qq[j] = int32(rng.Intn(255) - 127)
			row[j] = byte(int8(rng.Intn(255) - 127))
			if trial == 0 { // the extremes: the largest sums
				qq[j], row[j] = -127, 0x81
			}
		}
		if got, want := newExactQuery(qq).dot(row), dot(qq, row); got != want {
			t.Fatalf("%d dimensions, trial %d: kernel %d, Go loop %d", dims, trial, got, want)
		}
	}
}

// The dot kernel reads no byte past a row's last: the row ends where a
// page that cannot be read begins, at every length of a last chunk.
func TestVectorDotStopsAtTheRowsEnd(t *testing.T) {
	if !vectorDot {
		t.Skip("this processor has no AVX-512 on 16-bit values")
	}
	mem := guardedPage(t)
	for dims := 1; dims <= 100; dims++ {
		row := mem[len(mem)-dims:]
		qq := make([]int32, dims)
		for j := range row {
			row[j], qq[j] = byte(j*37), int32(j%255-127)
		}
		if got, want := newExactQuery(qq).dot(row), dot(qq, row); got != want {
			t.Fatalf("%d dimensions: kernel %d, Go loop %d", dims, got, want)
		}
	}
}

// guardedPage is a page of memory followed by one that cannot be read:
// a read past its end faults.
func guardedPage(t *testing.T) []byte {
	t.Helper()
	page := unix.Getpagesize()
	mem, err := unix.Mmap(-1, 0, 2*page, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		t.Skip("no anonymous mapping:", err)
	}
	t.Cleanup(func() { unix.Munmap(mem) })
	if err := unix.Mprotect(mem[page:], unix.PROT_NONE); err != nil {
		t.Skip("no guard page:", err)
	}
	return mem[:page:page]
}

// A search with the vector kernels finds what the Go loops find, the same
// documents with the same similarities, on sparse and dense vectors: the
// kernels change the time of a search, never its result (the Go loops
// are what a processor without AVX-512 runs).
func TestKernelsChangeNoResult(t *testing.T) {
	if !vectorRough || !vectorDot {
		t.Skip("this processor lacks an AVX-512 kernel")
	}
	for _, c := range []corpus{wordsCorpus(3*Candidates, 768), topicsCorpus(3*Candidates, 768)} {
		for qi, q := range c.queries[:10] {
			with := c.store.Search(q, nil, 50)
			vectorRough, vectorDot = false, false
			without := c.store.Search(q, nil, 50)
			vectorRough, vectorDot = true, true
			if !slices.Equal(with, without) {
				t.Fatalf("%s, query %d: with the kernels %v, without %v", c.name, qi, with[:3], without[:3])
			}
		}
	}
}
