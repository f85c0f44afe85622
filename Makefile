# Shortcuts; the commands themselves are documented in docs/.

.PHONY: test bench bench-large

test:
	go test -race -timeout 30m ./...

# The benchmark suite (docs/PERFORMANCE.md, "Method" and "Current results"): small and week vaults.
bench:
	cmd/memvault/bench/run.sh

# The same with the large vault (100k events, 1M messages): minutes to generate once.
bench-large:
	cmd/memvault/bench/run.sh --large
