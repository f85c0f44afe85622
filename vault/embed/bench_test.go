package embed

import (
	"strconv"
	"syscall"
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

// BenchmarkCandidates is the first step alone (the reduced vectors of
// every document scored, the best Candidates kept) over 100,000 vectors
// of 768 dimensions in memory; beside the wall time, the CPU time (user
// and system) of the process per search, which other work on the machine
// moves less.
func BenchmarkCandidates(b *testing.B) {
	for _, mk := range []func(int, int) corpus{wordsCorpus, topicsCorpus} {
		c := mk(100_000, 768)
		all := c.store.Split([]string{""}, nil)[0]
		b.Run(c.name, func(b *testing.B) {
			cpu0 := cpuTime()
			for i := range b.N {
				q := c.queries[i%len(c.queries)]
				qq, _ := quantiseQuery(q)
				c.store.candidates(qq, all, Candidates)
			}
			b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/1000/float64(b.N), "cpu-ms/op")
		})
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
