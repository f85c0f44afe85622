package bench

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/memory"
)

// BenchmarkPolicyLoad measures what the policy check adds to a
// transaction that records content, in process, on a vault of 100k ledger
// events (docs/POLICY.md, "Policy: cost"): the policy rebuilt with no
// .state/ (once per vault, or after a segment is replaced), and loaded
// inside a transaction as the check loads it (the state file read against
// the segments the transaction's chain check stat'ed, the event the last
// transaction appended folded on top), beside the whole remember
// transaction it is part of. A transaction that records only
// bookkeeping, or nothing, pays none of it.
//
//	MEMVAULT_BENCH_CACHE=/tmp/mvcache go test -run '^$' -bench PolicyLoad ./cmd/memvault/bench/
func BenchmarkPolicyLoad(b *testing.B) {
	root := verifyVault(b)
	v, err := vault.Open(root)
	if err != nil {
		b.Fatal(err)
	}
	load := func(b *testing.B) {
		if _, err := v.LoadPolicy(); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("rebuild", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			os.Remove(filepath.Join(root, ".state", "policy.bin"))
			load(b)
		}
	})
	load(b)
	// Inside a transaction, as the check loads it: against the stamps the
	// transaction's own chain check took, the previous iteration's event
	// folded on top of the saved view.
	b.Run("in-transaction", func(b *testing.B) {
		b.StopTimer()
		for i := 0; i < b.N; i++ {
			if _, err := v.Update(vault.TxOptions{}, func(tx *vault.Tx) error {
				b.StartTimer()
				_, err := tx.Policy()
				b.StopTimer()
				if err != nil {
					return err
				}
				_, err = memory.Remember(tx, memory.Input{Text: "a row of the benchmark"})
				return err
			}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("remember-transaction", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, err := v.Update(vault.TxOptions{}, func(tx *vault.Tx) error {
				_, err := memory.Remember(tx, memory.Input{Text: "a row of the benchmark"})
				return err
			}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
