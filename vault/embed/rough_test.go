package embed

import (
	"math"
	"math/bits"
	"math/rand"
	"runtime"
	"slices"
	"testing"
)

// tableScore is the first step's score as a table per byte of the query
// gave it: the reference the bit-plane score must equal.
func tableScore(qq []int32, doc []byte, nb int) int32 {
	tab := make([][256]int16, nb)
	for p := range tab {
		for b := 1; b < 256; b++ {
			k := bits.TrailingZeros8(uint8(b))
			v := int16(0)
			if 8*p+k < len(qq) {
				v = int16(qq[8*p+k])
			}
			tab[p][b] = tab[p][b&(b-1)] + v
		}
	}
	var a, b int32
	for p := range nb {
		a += int32(tab[p][doc[p]])
		b += int32(tab[p][doc[nb+p]])
	}
	return a - b
}

// The bit-plane score is, for every query (its values reduced to -7 … +7)
// and reduced vector, the integer the table per byte gives: random queries over the whole range
// of a quantised value (±127 included), random reduced vectors sparse and
// dense, at dimensions that fill whole words and that do not.
func TestRoughScoreIsTheDotProduct(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	for _, dims := range []int{1, 7, 8, 63, 64, 65, 100, 384, 768, 1000, 1536} {
		nb := (dims + 7) / 8
		for trial := range 200 {
			qq := make([]int32, dims)
			for j := range qq {
				switch rng.Intn(6) {
				case 0:
					qq[j] = 127
				case 1:
					qq[j] = -127
				case 2:
					qq[j] = 0
				default:
					qq[j] = int32(rng.Intn(255) - 127)
				}
			}
			if trial%7 == 0 { // a small query: fewer planes in use
				for j := range qq {
					qq[j] %= 4
				}
			}
			var row []byte
			for range dims {
				row = append(row, byte(int8(rng.Intn(255)-127)))
			}
			if trial%3 == 0 { // sparse, as word counts are
				for j := range row {
					if rng.Intn(10) > 0 {
						row[j] = 0
					}
				}
			}
			doc, _ := appendSigns(nil, row)
			rl := roughLevels(qq)
			for j, q := range rl {
				if q < -7 || q > 7 || (q < 0) != (qq[j] < 0) && q != 0 {
					t.Fatalf("%d reduced to %d", qq[j], q)
				}
			}
			rq := newRoughQuery(rl, nb)
			if got, want := rq.score(doc), tableScore(rl, doc, nb); got != want {
				t.Fatalf("dims %d, trial %d: bit-plane score %d, table %d", dims, trial, got, want)
			}
		}
	}
}

// The first step keeps the n a heap of the best would keep (the highest,
// ties to the earlier document), also where most values are equal, as
// sparse vectors' zeros are, and where the n-th is among equals.
func TestBestNIsTheHeapsChoice(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	for trial := range 300 {
		m := 1 + rng.Intn(3000)
		distinct := 1 + rng.Intn(1+trial%50) // few distinct values: many ties
		kept, sims := make([]int, m), make([]float32, m)
		for j := range kept {
			kept[j] = 3*j + rng.Intn(3)
			sims[j] = float32(rng.Intn(distinct)) - float32(distinct)/3
		}
		n := 1 + rng.Intn(m+10)
		h := &minHeap{}
		for j, i := range kept {
			h.offer(Scored{Index: i, Sim: sims[j]}, n)
		}
		var want []int
		for _, sc := range *h {
			want = append(want, sc.Index)
		}
		slices.Sort(want)
		var got []int
		for _, j := range bestN(slices.Clone(sims), n) {
			got = append(got, kept[j])
		}
		if !slices.Equal(got, want) {
			t.Fatalf("trial %d (%d values, %d distinct, n %d): kept %d, the heap %d, first of them differing: %v",
				trial, m, distinct, n, len(got), len(want), firstDiff(got, want))
		}
	}
}

func firstDiff(a, b []int) [2]int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return [2]int{a[i], b[i]}
		}
	}
	return [2]int{-1, -1}
}

// The first step in parts keeps what one pass keeps: the n best reduced
// scores of all the documents, ties to the earlier, also where most
// scores are equal (sparse word counts) and the n-th is among equals.
func TestCandidatesInPartsAreOnePass(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(maxParts))
	c := wordsCorpus(4*minPart+123, 64)
	all := c.store.Split([]string{""}, nil)[0]
	odd := make([]int, 0, len(all)/2) // a list with gaps, as a tier's is
	for _, i := range all {
		if i%2 == 1 {
			odd = append(odd, i)
		}
	}
	for qi, q := range c.queries[:8] {
		qq, _ := quantiseQuery(q)
		rq := newRoughQuery(roughLevels(qq), (c.store.Dims+7)/8)
		for _, pos := range [][]int{all, odd} {
			sims := make([]float32, len(pos))
			for j, i := range pos {
				sims[j] = float32(rq.score(c.store.Bits[2*i*rq.nb:])) * c.store.level(i)
			}
			for _, n := range []int{1, 100, Candidates, len(pos) - 1} {
				var want []int
				for _, j := range bestN(sims, n) {
					want = append(want, pos[j])
				}
				if got := c.store.candidates(qq, pos, n); !slices.Equal(got, want) {
					t.Fatalf("query %d, %d documents, n %d: in parts %d, one pass %d, first differing %v",
						qi, len(pos), n, len(got), len(want), firstDiff(got, want))
				}
			}
		}
	}
}

// nthOf, which selects among the values a sample says reach about the
// n-th, is the n-th highest: on random values, many equal ones, values in
// order either way, and values whose sample misleads (the sampled places
// hold the highest, so fewer than n reach the sample's guess and it
// selects among all).
func TestNthOfIsTheNth(t *testing.T) {
	rng := rand.New(rand.NewSource(13))
	for trial := range 60 {
		m := 8*2048 + rng.Intn(200000)
		v := make([]float32, m)
		distinct := 1 + rng.Intn(1+trial*trial)
		for i := range v {
			v[i] = float32(rng.Intn(distinct))
			switch trial % 5 {
			case 1:
				v[i] = float32(i) // rising
			case 2:
				v[i] = float32(-i) // falling
			case 3:
				v[i] = float32(math.Inf(-1))
				if i%(m/2048) == 0 {
					v[i] = 1 // the sampled places
				}
			}
		}
		for _, n := range []int{1, 7, 2048, 2049, Candidates, m/4 - 1} {
			want := nthHighest(slices.Clone(v), n)
			if got := nthOf(v, n); got != want {
				t.Fatalf("trial %d, %d values (%d distinct), n %d: %v, want %v", trial, m, distinct, n, got, want)
			}
		}
	}
}
