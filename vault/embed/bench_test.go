package embed

import (
	"math/rand"
	"strconv"
	"testing"
)

// BenchmarkSearch is one brute-force scan of n vectors of d dimensions:
// recall's cost per tier with vectors (docs/PERFORMANCE.md).
func BenchmarkSearch(b *testing.B) {
	for _, c := range []struct{ n, d int }{{100_000, 768}, {330_000, 768}, {1_000_000, 64}} {
		b.Run(strconv.Itoa(c.n)+"x"+strconv.Itoa(c.d), func(b *testing.B) {
			rng := rand.New(rand.NewSource(1))
			s := NewStore("m", c.d)
			s.Vecs = make([]byte, c.n*c.d)
			rng.Read(s.Vecs)
			s.IDs, s.Scales = make([]string, c.n), make([]float32, c.n)
			for i := range s.Scales {
				s.IDs[i], s.Scales[i] = "m|x", 0.01
			}
			q := make([]float32, c.d)
			for i := range q {
				q[i] = rng.Float32()
			}
			b.ResetTimer()
			for range b.N {
				s.Search(q, nil, 200)
			}
		})
	}
}
