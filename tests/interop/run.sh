#!/usr/bin/env bash
# Interop tests: the official Python MCP SDK client (mcp==2.3.0) and the official TypeScript one
# (@modelcontextprotocol/sdk, pinned in tests/interop/ts/package-lock.json) against a real sluice.
#
# Creates (or reuses) a venv in target/interop-venv, builds sluice (debug profile: the binary
# `cargo test` already built, so CI compiles nothing new; interop checks behaviour, not speed), starts the stub
# downstream API (downstream.py) and two `sluice serve` on free loopback ports with the fixture
# configuration (as is, and with `post_framing = "json"`), waits for /healthz, runs test_python_sdk.py,
# then test_tls_sdk.py (the SDK over HTTPS and mTLS, against two instances it starts itself with a
# test CA it makes), then test_otlp.py (traces against an OTLP receiver on opentelemetry-proto), then
# tests/interop/ts/resumption.mjs against the main (default-configuration) instance with the
# machine's Node (>= 18; `npm ci` into target/interop-ts, reused while the lock file is unchanged),
# and always stops what it started. Each suite prints its own `N passed, N failed`; the last line
# printed is the combined `N passed, N failed`; the exit status is non-zero on any failure.
#
# Env: CARGO_TARGET_DIR (where the binary is built, default target/),
#      SLUICE_BIN (a sluice binary to run instead: no `cargo build` then),
#      INTEROP_VERBOSE=1 (tracebacks for failed checks), RUST_LOG (sluice's log filter).
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$(pwd)
here="$root/tests/interop"

venv="$root/target/interop-venv"
target_dir="${CARGO_TARGET_DIR:-$root/target}"
work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-interop.XXXXXX")
pids=()

cleanup() {
  local pid
  for pid in "${pids[@]}"; do
    kill "$pid" 2>/dev/null || true
  done
  for pid in "${pids[@]}"; do
    wait "$pid" 2>/dev/null || true
  done
  rm -rf "$work"
}
trap cleanup EXIT

# Prints the final line for a run that could not get as far as the tests, and fails.
setup_failed() {
  echo "interop setup failed: $*" >&2
  for log in "$work"/*.log; do
    [ -s "$log" ] && { echo "--- $(basename "$log")" >&2; tail -30 "$log" >&2; }
  done
  echo "0 passed, 1 failed"
  exit 1
}

# --- the venv (reused while requirements.txt is unchanged) ---
if ! cmp -s "$here/requirements.txt" "$venv/interop-requirements.txt" 2>/dev/null; then
  rm -rf "$venv"
  python3 -m venv "$venv" || setup_failed "python3 -m venv"
  "$venv/bin/pip" install --disable-pip-version-check -q -r "$here/requirements.txt" ||
    setup_failed "pip install -r tests/interop/requirements.txt"
  cp "$here/requirements.txt" "$venv/interop-requirements.txt"
fi
py="$venv/bin/python"

# --- sluice (cargo reuses the build when nothing changed; SLUICE_BIN skips it) ---
if [ -n "${SLUICE_BIN:-}" ]; then
  sluice="$SLUICE_BIN"
else
  cargo build --locked --bin sluice || setup_failed "cargo build"
  sluice="$target_dir/debug/sluice"
fi
[ -x "$sluice" ] || setup_failed "no binary at $sluice"

# --- the stub downstream: prints its port first ---
"$py" -u "$here/downstream.py" >"$work/downstream.port" 2>"$work/downstream.log" &
pids+=($!)
api_port=""
for _ in $(seq 100); do
  api_port=$(head -1 "$work/downstream.port" 2>/dev/null || true)
  [ -n "$api_port" ] && break
  kill -0 "${pids[-1]}" 2>/dev/null || setup_failed "the stub downstream exited"
  sleep 0.1
done
[ -n "$api_port" ] || setup_failed "the stub downstream announced no port"
api="http://127.0.0.1:$api_port"

config="$work/sluice.toml"
sed "s#{api}#$api#g" "$here/sluice.interop.toml" >"$config"
admin_token=$(sed -n 's/^admin_token = "\(.*\)"$/\1/p' "$config")

free_port() {
  "$py" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

# --- sluice on a free port; another port when the one picked was taken meanwhile ---
# start_sluice NAME CONFIG: starts `sluice serve` and sets $base to its URL once /healthz answers.
start_sluice() {
  local name=$1 config_file=$2 attempt port pid up
  base=""
  for attempt in 1 2 3 4 5; do
    port=$(free_port)
    RUST_LOG="${RUST_LOG:-warn}" "$sluice" serve --config "$config_file" --listen "127.0.0.1:$port" \
      >"$work/$name.log" 2>&1 &
    pid=$!
    up=""
    for _ in $(seq 200); do
      kill -0 "$pid" 2>/dev/null || break
      if "$py" -c 'import sys, urllib.request
try:
    sys.exit(0 if urllib.request.urlopen(sys.argv[1], timeout=1).status == 200 else 1)
except Exception:
    sys.exit(1)' "http://127.0.0.1:$port/healthz"; then
        up=1
        break
      fi
      sleep 0.1
    done
    if [ -n "$up" ]; then
      pids+=("$pid")
      base="http://127.0.0.1:$port"
      return 0
    fi
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    grep -qi "address already in use" "$work/$name.log" || setup_failed "$name did not become healthy"
    echo "port $port was taken; retrying (attempt $attempt)" >&2
  done
  setup_failed "no free port for $name after 5 attempts"
}

# The main instance (its file is rewritten by the reload checks; the default configuration, so
# every handshake-era answer to a POST is an SSE stream with priming event and event ids), and one
# with `post_framing = "json"` (every answer JSON).
start_sluice sluice "$config"
main_base=$base
json_config="$work/sluice-json.toml"
sed 's/^\[server\]$/[server]\npost_framing = "json"/' "$config" >"$json_config"
grep -q '^post_framing = "json"$' "$json_config" || setup_failed "could not write $json_config"
start_sluice sluice-json "$json_config"
json_base=$base

# --- the checks: the Python suite ---
summary="$work/summary"
status=0
SLUICE_URL="$main_base" SLUICE_JSON_URL="$json_base" SLUICE_CONFIG="$config" INTEROP_API="$api" ADMIN_TOKEN="$admin_token" \
  INTEROP_SUMMARY="$summary" "$py" "$here/test_python_sdk.py" || status=$?
py_line=$(tail -1 "$summary" 2>/dev/null || true)
if ! [[ "$py_line" =~ ^[0-9]+\ passed,\ [0-9]+\ failed$ ]]; then
  echo "the Python suite wrote no summary" >&2
  py_line="0 passed, 1 failed"
  status=1
fi

# --- the checks: the Python SDK over TLS (its own two sluice instances, its own test CA) ---
tls_summary="$work/tls-summary"
SLUICE_BIN="$sluice" INTEROP_API="$api" INTEROP_SUMMARY="$tls_summary" \
  timeout 180 "$py" "$here/test_tls_sdk.py" || status=$?
tls_line=$(tail -1 "$tls_summary" 2>/dev/null || true)
if ! [[ "$tls_line" =~ ^[0-9]+\ passed,\ [0-9]+\ failed$ ]]; then
  echo "the TLS suite wrote no summary" >&2
  tls_line="0 passed, 1 failed"
  status=1
fi

# --- the checks: OpenTelemetry traces against an OTLP receiver on opentelemetry-proto ---
otlp_summary="$work/otlp-summary"
SLUICE_BIN="$sluice" INTEROP_SUMMARY="$otlp_summary" timeout 180 "$py" "$here/test_otlp.py" || status=$?
otlp_line=$(tail -1 "$otlp_summary" 2>/dev/null || true)
if ! [[ "$otlp_line" =~ ^[0-9]+\ passed,\ [0-9]+\ failed$ ]]; then
  echo "the OTLP suite wrote no summary" >&2
  otlp_line="0 passed, 1 failed"
  status=1
fi

# --- the checks: the TypeScript suite (the pinned SDK, reused while package-lock.json is unchanged) ---
ts_pinned="$here/ts"
ts_dir="$root/target/interop-ts"
ts_line=""
if ! cmp -s "$ts_pinned/package-lock.json" "$ts_dir/package-lock.json" 2>/dev/null ||
  [ ! -d "$ts_dir/node_modules" ]; then
  rm -rf "$ts_dir"
  mkdir -p "$ts_dir"
  cp "$ts_pinned/package.json" "$ts_pinned/package-lock.json" "$ts_dir/"
  if ! (cd "$ts_dir" && npm ci --no-audit --no-fund --loglevel=error) >"$work/npm.log" 2>&1; then
    tail -30 "$work/npm.log" >&2
    rm -rf "$ts_dir"
    echo "FAIL   ts: npm ci in $ts_dir" >&2
    ts_line="0 passed, 1 failed"
  fi
fi
if [ -z "$ts_line" ]; then
  # The script imports the SDK from the node_modules next to it.
  cp "$ts_pinned/resumption.mjs" "$ts_dir/"
  ts_status=0
  SLUICE_URL="$main_base" timeout 120 node "$ts_dir/resumption.mjs" >"$work/ts.out" 2>"$work/ts.err" || ts_status=$?
  cat "$work/ts.out"
  [ -s "$work/ts.err" ] && cat "$work/ts.err" >&2
  ts_line=$(tail -1 "$work/ts.out")
  if ! [[ "$ts_line" =~ ^[0-9]+\ passed,\ [0-9]+\ failed$ ]]; then
    echo "FAIL   ts: resumption.mjs exited $ts_status without a summary" >&2
    ts_line="0 passed, 1 failed"
  elif [ "$ts_status" -ne 0 ] && [[ "$ts_line" =~ \ 0\ failed$ ]]; then
    ts_line="${ts_line%%,*}, 1 failed"
  fi
fi
[[ "$ts_line" =~ \ 0\ failed$ ]] || status=1

if [ "$status" -ne 0 ]; then
  for log in "$work"/sluice*.log; do echo "--- $(basename "$log")" >&2; tail -30 "$log" >&2; done
fi
# The combined summary stays the last line on stdout.
read -r py_passed _ py_failed _ <<<"${py_line//,/}"
read -r ts_passed _ ts_failed _ <<<"${ts_line//,/}"
read -r tls_passed _ tls_failed _ <<<"${tls_line//,/}"
read -r otlp_passed _ otlp_failed _ <<<"${otlp_line//,/}"
echo "$((py_passed + ts_passed + tls_passed + otlp_passed)) passed, $((py_failed + ts_failed + tls_failed + otlp_failed)) failed"
exit "$status"
