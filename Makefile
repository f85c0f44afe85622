# Shortcuts; the commands themselves are documented in docs/.

.PHONY: build test bench bench-large

# The binary as the README builds it: urfave_cli_no_docs leaves out the
# command-line library's man-page and markdown generators, which memvault
# does not use and whose package init every process would pay for
# (docs/PERFORMANCE.md, "Start-up").
build:
	CGO_ENABLED=0 go build -tags urfave_cli_no_docs -o memvault ./cmd/memvault

test:
	go test -race -timeout 30m ./...

# The benchmark suite (docs/PERFORMANCE.md, "Method" and "Current results"): small and week vaults.
bench:
	cmd/memvault/bench/run.sh

# The same with the large vault (100k events, 1M messages): minutes to generate once.
bench-large:
	cmd/memvault/bench/run.sh --large
