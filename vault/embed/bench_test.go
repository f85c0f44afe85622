package embed

import (
	"strconv"
	"testing"
	"time"
)

// BenchmarkSearch is one search of n vectors of 768 dimensions, read from
// the cache's file as recall reads it (Open, Search, Close): recall's cost
// per tier with vectors (docs/PERFORMANCE.md); it reports, beside the
// time, the share of the full scan's top 200 the search found and the
// full scan's own time.
func BenchmarkSearch(b *testing.B) {
	for _, n := range []int{100_000, 330_000} {
		for _, mk := range []func(int, int) corpus{wordsCorpus, topicsCorpus} {
			c := mk(n, 768)
			root := b.TempDir()
			if !c.store.Save(root) {
				b.Fatal("save")
			}
			c.store = nil
			b.Run(c.name+"-"+strconv.Itoa(n), func(b *testing.B) {
				var found float64
				var full time.Duration
				for i := range b.N {
					s := Open(root, "m", 768)
					q := c.queries[i%len(c.queries)]
					s.Search(q, nil, 200)
					b.StopTimer()
					t0 := time.Now()
					r, _ := overlap(s, q, 200)
					full += time.Since(t0)
					found += r
					s.Close()
					b.StartTimer()
				}
				b.ReportMetric(found/float64(b.N), "top200-found")
				b.ReportMetric(float64(full.Milliseconds())/float64(b.N), "full-scan-ms")
			})
		}
	}
}
