package render

// Benchmarks of the head layout: the sample input and 10,000 rows at two
// budgets, with and without the explain report, and a thread head.

import (
	"fmt"
	"testing"
)

func BenchmarkLayout(b *testing.B) {
	big := sample()
	for i := 0; i < 10000; i++ {
		big.Items = append(big.Items, Item{ID: fmt.Sprintf("e_%026d", i), Kind: "commitment.open",
			Thread: fmt.Sprintf("project:p%03d", i%200), Text: fmt.Sprintf("open item number %d", i), TS: "2026-11-22T00:00:00.000Z"})
	}
	for _, c := range []struct {
		name    string
		in      Input
		budget  int
		explain bool
	}{
		{"sample", sample(), 1000, false},
		{"10k-1000", big, 1000, false},
		{"10k-4000", big, 4000, false},
		{"10k-4000-explain", big, 4000, true},
	} {
		in := c.in
		in.MemoryTokens, in.Explain = c.budget, c.explain
		p := PrepareMemory(in)
		b.Run("memory/"+c.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := RenderMemory(p, in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	in := sample()
	in.ThreadTokens = 2000
	tp := PrepareThread(in, "project:shop")
	b.Run("thread/sample", func(b *testing.B) {
		for b.Loop() {
			if _, err := RenderThread(tp, "project:shop", in); err != nil {
				b.Fatal(err)
			}
		}
	})
}
