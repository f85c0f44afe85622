#!/usr/bin/env bash
# Install what the real-browser test of the web view (TestE2EWebBrowser,
# cmd/memvault/internal/web/e2e_test.go) runs on: Debian's chromium, from apt when it is
# missing, and playwright-core, pinned, from npm into a cache folder (like
# the harnesses of .ci/e2e-harnesses.sh); print the environment the test
# reads.
#
#   eval "$(.ci/e2e-browser.sh)"    # then: go test -run TestE2EWebBrowser -v ./cmd/memvault/internal/web/
#
# stdout: only `export NAME=VALUE` lines (safe to eval):
#   MEMVAULT_E2E_CHROMIUM    the chromium binary
#   MEMVAULT_E2E_PLAYWRIGHT  the installed playwright-core package folder
# stderr: progress, and a line `SKIP: e2e browser test: <reason>` for what
# could not be installed (not root and no chromium, apt failing, npm or its
# registry missing). It exits 0 then: the test skips, saying why.
#
# playwright-core never downloads a browser of its own here (that fails on
# this machine's closed network); the test hands it Debian's chromium.
#
# Env: MEMVAULT_E2E_CACHE (default $HOME/.cache/memvault-e2e),
#      MEMVAULT_E2E_NPM_TIMEOUT (seconds for the registry probe, default 20),
#      MEMVAULT_E2E_APT_TIMEOUT (seconds for apt-get install, default 900).
set -uo pipefail

PLAYWRIGHT_VER=1.64.1 # playwright-core

CACHE=${MEMVAULT_E2E_CACHE:-${HOME:-/tmp}/.cache/memvault-e2e}
PROBE_TIMEOUT=${MEMVAULT_E2E_NPM_TIMEOUT:-20}
APT_TIMEOUT=${MEMVAULT_E2E_APT_TIMEOUT:-900}

say() { echo "e2e-browser: $*" >&2; }
skip() { echo "SKIP: e2e browser test: $*" >&2; }
emit() { printf 'export %s=%q\n' "$1" "$2"; }

if ! command -v timeout >/dev/null 2>&1; then
  skip "coreutils timeout not found"
  exit 0
fi

# Chromium: Debian's package. Its /usr/bin/chromium is a wrapper script
# that sources /etc/chromium.d; the test passes its own flags anyway.
chromium=$(command -v chromium || true)
if [ -z "$chromium" ]; then
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    skip "chromium not installed, and cannot install it (needs root and apt-get: apt-get install chromium)"
  else
    start=$(date +%s)
    say "installing Debian's chromium with apt-get"
    log=$(mktemp)
    if timeout "$APT_TIMEOUT" sh -c 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium' >"$log" 2>&1; then
      chromium=$(command -v chromium || true)
      say "chromium installed in $(($(date +%s) - start))s"
    else
      skip "apt-get install chromium failed or timed out after ${APT_TIMEOUT}s (log: $log)"
    fi
  fi
fi
if [ -n "$chromium" ]; then
  if ver=$(timeout 60 "$chromium" --version 2>/dev/null); then
    say "$ver"
    emit MEMVAULT_E2E_CHROMIUM "$chromium"
  else
    skip "$chromium --version failed"
  fi
fi

# playwright-core: pinned, cached, no other npm dependency.
dir=$CACHE/playwright
ok=$dir/.memvault-e2e-ok
pkg=$dir/node_modules/playwright-core
if [ ! -f "$ok" ]; then
  if ! command -v npm >/dev/null 2>&1 || ! command -v node >/dev/null 2>&1; then
    skip "npm/node not found on PATH (playwright-core@$PLAYWRIGHT_VER not installed)"
    exit 0
  fi
  if ! out=$(timeout "$PROBE_TIMEOUT" npm view "playwright-core@$PLAYWRIGHT_VER" version 2>/dev/null) || [ "$out" != "$PLAYWRIGHT_VER" ]; then
    skip "npm registry not reachable ($(npm config get registry 2>/dev/null): npm view playwright-core@$PLAYWRIGHT_VER failed or timed out after ${PROBE_TIMEOUT}s)"
    exit 0
  fi
  mkdir -p "$dir" || { skip "cannot create cache folder $dir"; exit 0; }
  [ -f "$dir/package.json" ] || echo '{"name":"memvault-e2e-playwright","private":true}' >"$dir/package.json"
  say "installing playwright-core@$PLAYWRIGHT_VER into $dir"
  # PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD: playwright-core has no install
  # script today; this keeps it so if a version gains one.
  if ! PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 timeout 600 npm install --prefix "$dir" --no-audit --no-fund --loglevel=error "playwright-core@$PLAYWRIGHT_VER" >"$dir/npm-install.log" 2>&1; then
    skip "npm install playwright-core@$PLAYWRIGHT_VER failed (log: $dir/npm-install.log)"
    exit 0
  fi
  got=$(node -p 'require(process.argv[1]).version' "$pkg/package.json" 2>&1)
  if [ "$got" != "$PLAYWRIGHT_VER" ]; then
    skip "installed playwright-core says '$got', want $PLAYWRIGHT_VER"
    exit 0
  fi
  touch "$ok"
fi
emit MEMVAULT_E2E_PLAYWRIGHT "$pkg"
exit 0
