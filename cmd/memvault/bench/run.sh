#!/bin/sh
# run.sh runs memvault's benchmark suite (cmd/memvault/bench/suite_test.go): every budget
# of DESIGN §11 as whole processes, on a small and a week-long vault, and on
# a large one (100k events, 1M messages) when MEMVAULT_SUITE_LARGE=1 or
# --large is given. It prints one table; docs/PERFORMANCE.md ("Current results")
# holds the latest.
#
# Generated vaults are kept in MEMVAULT_BENCH_CACHE (default
# ${TMPDIR:-/tmp}/memvault-bench-cache), so reruns skip generation: small
# takes seconds to generate, week about a minute, large several minutes.
#
#   cmd/memvault/bench/run.sh [--large] [--rounds N]
#
# The whole default run takes about 3 minutes, with the large vault about
# 15 more once it is generated (about 6 minutes, once). On the large vault
# `git gc --aggressive`, the anchor for gc, runs only with
# MEMVAULT_SUITE_AGGRESSIVE=1: it takes over ten minutes of CPU there.
set -eu
cd "$(dirname "$0")/../../.."
sizes=small,week
rounds=${MEMVAULT_SUITE_ROUNDS:-20}
[ "${MEMVAULT_SUITE_LARGE:-0}" = 1 ] && sizes=small,week,large
while [ $# -gt 0 ]; do
	case $1 in
	--large) sizes=small,week,large ;;
	--rounds) rounds=$2; shift ;;
	*) echo "usage: cmd/memvault/bench/run.sh [--large] [--rounds N]" >&2; exit 2 ;;
	esac
	shift
done
export MEMVAULT_SUITE=${MEMVAULT_SUITE:-$sizes}
export MEMVAULT_SUITE_ROUNDS=$rounds
export MEMVAULT_BENCH_CACHE=${MEMVAULT_BENCH_CACHE:-${TMPDIR:-/tmp}/memvault-bench-cache}
mkdir -p "$MEMVAULT_BENCH_CACHE"
echo "suite: sizes $MEMVAULT_SUITE, $rounds runs each, cache $MEMVAULT_BENCH_CACHE" >&2
exec go test -count=1 -run '^TestSuite$' -timeout 6h -v ./cmd/memvault/bench/
