package vault

import (
	"io"
	"os"
	"testing"
)

// BenchmarkPatchIndex patches one entry of a real index, named by
// MEMVAULT_BENCH_INDEX (a vault's .git/index), as a remember does.
func BenchmarkPatchIndex(b *testing.B) {
	p := os.Getenv("MEMVAULT_BENCH_INDEX")
	if p == "" {
		b.Skip("MEMVAULT_BENCH_INDEX names a git index to patch")
	}
	data, err := os.ReadFile(p)
	if err != nil {
		b.Fatal(err)
	}
	c := &fileChange{path: "ledger/2026/11/22-191.jsonl"}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if err := writeIndexPatch(io.Discard, data, []*fileChange{c}); err != nil {
			b.Fatal(err)
		}
	}
}
