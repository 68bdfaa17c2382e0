#!/usr/bin/env bash
# A2A interop tests: the official A2A Python SDK client (a2a-sdk 1.3.0, requirements.txt) and the
# official JavaScript one (@a2a-js/sdk 1.3.0, package-lock.json) against a real sluice serving the
# client application `agent` of tenant `a2a` as an A2A agent (sluice.a2a.toml), and the same
# sluice as a concentrator in front of remote agents built on the official Python SDK
# (remote_agent.py: one serving 1.0, one serving only 0.3, one the checks stop).
#
# Creates (or reuses) a venv in target/a2a-interop-venv (and the MCP SDK venv of tests/interop,
# target/interop-venv, for mcp_ask.py), builds sluice (debug profile: the binary
# `cargo test` already built, so CI compiles nothing new), starts the stub downstream API
# (downstream.py), the three remote agents and `sluice serve` on a free loopback port, waits for
# /healthz, runs test_a2a_python.py (1.0 and 0.3 compat mode), test_a2a_remote.py (the
# concentrator), then a2a.mjs with the machine's Node (>= 20; `npm ci` into target/a2a-interop-js,
# reused while the lock file is unchanged), and always stops what it started. With
# SLUICE_A2A_CLUSTER=1 it also starts two instances sharing the machine's Redis (127.0.0.1:6379, a
# key prefix of their own per run) and runs the two-instance checks of both Python suites
# (A2A_CLUSTER=1). Each suite prints its own `N passed, N failed`; the last line printed is the
# combined `N passed, N failed`; the exit status is non-zero on any failure.
#
# Env: CARGO_TARGET_DIR (where the binary is built, default target/),
#      SLUICE_BIN (a sluice binary to run instead: no `cargo build` then),
#      SLUICE_A2A_CLUSTER=1 (the two-instance checks on Redis; SLUICE_A2A_REDIS overrides the URL),
#      A2A_SUITES (which suites run: a subset of "python remote js", the default all three),
#      A2A_VERBOSE=1 (tracebacks for failed checks), RUST_LOG (sluice's log filter).
set -euo pipefail
cd "$(dirname "$0")/../../.."
root=$(pwd)
here="$root/tests/interop/a2a"

venv="$root/target/a2a-interop-venv"
js_dir="$root/target/a2a-interop-js"
target_dir="${CARGO_TARGET_DIR:-$root/target}"
work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-a2a-interop.XXXXXX")
redis_url="${SLUICE_A2A_REDIS:-redis://127.0.0.1:6379}"
key_prefix=""
pids=()

cleanup() {
  local pid
  for pid in "${pids[@]}"; do
    kill "$pid" 2>/dev/null || true
  done
  for pid in "${pids[@]}"; do
    wait "$pid" 2>/dev/null || true
  done
  # The run's own Redis keys (best effort: every key expires on its own too).
  if [ -n "$key_prefix" ] && command -v redis-cli >/dev/null 2>&1; then
    redis-cli -u "$redis_url" --scan --pattern "${key_prefix}*" 2>/dev/null |
      xargs -r redis-cli -u "$redis_url" del >/dev/null 2>&1 || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

# Prints the final line for a run that could not get as far as the tests, and fails.
setup_failed() {
  echo "a2a interop setup failed: $*" >&2
  for log in "$work"/*.log; do
    [ -s "$log" ] && { echo "--- $(basename "$log")" >&2; tail -30 "$log" >&2; }
  done
  echo "0 passed, 1 failed"
  exit 1
}

# --- the venv (reused while requirements.txt is unchanged) ---
if ! cmp -s "$here/requirements.txt" "$venv/a2a-interop-requirements.txt" 2>/dev/null; then
  rm -rf "$venv"
  python3 -m venv "$venv" || setup_failed "python3 -m venv"
  "$venv/bin/pip" install --disable-pip-version-check -q -r "$here/requirements.txt" ||
    setup_failed "pip install -r tests/interop/a2a/requirements.txt"
  cp "$here/requirements.txt" "$venv/a2a-interop-requirements.txt"
fi
py="$venv/bin/python"

# --- the MCP SDK's venv for mcp_ask.py (tests/interop/run.sh's own: the same path and pins) ---
mcp_venv="$root/target/interop-venv"
if ! cmp -s "$root/tests/interop/requirements.txt" "$mcp_venv/interop-requirements.txt" 2>/dev/null; then
  rm -rf "$mcp_venv"
  python3 -m venv "$mcp_venv" || setup_failed "python3 -m venv (MCP SDK)"
  "$mcp_venv/bin/pip" install --disable-pip-version-check -q -r "$root/tests/interop/requirements.txt" ||
    setup_failed "pip install -r tests/interop/requirements.txt"
  cp "$root/tests/interop/requirements.txt" "$mcp_venv/interop-requirements.txt"
fi

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

# --- the remote agents: the upstream's bearer secret, and a wrong one for the `wrong` agent ---
printf 'upstream-interop-secret-%s\n' "$$" >"$work/upstream.secret"
printf 'not-the-upstream-secret\n' >"$work/wrong.secret"
# start_agent NAME PROTOCOL: starts remote_agent.py and sets $agent_url to its card URL.
start_agent() {
  local name=$1 protocol=$2 port=""
  "$py" -u "$here/remote_agent.py" --protocol "$protocol" --secret-file "$work/upstream.secret" \
    >"$work/$name.port" 2>"$work/$name.log" &
  pids+=($!)
  agent_pid=$!
  for _ in $(seq 100); do
    port=$(head -1 "$work/$name.port" 2>/dev/null || true)
    [ -n "$port" ] && break
    kill -0 "$agent_pid" 2>/dev/null || setup_failed "the remote agent $name exited"
    sleep 0.1
  done
  [ -n "$port" ] || setup_failed "the remote agent $name announced no port"
  agent_url="http://127.0.0.1:$port/.well-known/agent-card.json"
}
start_agent agent-v1 1.0
v1_card=$agent_url
start_agent agent-v03 0.3
v03_card=$agent_url
start_agent agent-doomed 1.0
doomed_card=$agent_url
doomed_pid=$agent_pid

# fixture AUDIT_FILE: sluice.a2a.toml with every placeholder filled in.
fixture() {
  sed -e "s#{api}#$api#g" -e "s#{v1}#$v1_card#g" -e "s#{v03}#$v03_card#g" \
    -e "s#{doomed}#$doomed_card#g" -e "s#{secret}#$work/upstream.secret#g" \
    -e "s#{wrong_secret}#$work/wrong.secret#g" -e "s#{audit}#$1#g" "$here/sluice.a2a.toml"
}
config="$work/sluice.toml"
fixture "$work/audit.jsonl" >"$config"

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

start_sluice sluice "$config"
main_base=$base

# --- the two-instance case: both on the machine's Redis, a key prefix of this run's own ---
cluster_env=()
if [ "${SLUICE_A2A_CLUSTER:-}" = "1" ]; then
  key_prefix="a2a-interop-$$-$(date +%s)"
  for side in a b; do
    {
      fixture "$work/audit-$side.jsonl"
      printf '\n[cluster]\nredis_url = "%s"\nkey_prefix = "%s"\nexpected_instances = 2\n' "$redis_url" "$key_prefix"
    } >"$work/sluice-cluster-$side.toml"
  done
  start_sluice cluster-a "$work/sluice-cluster-a.toml"
  cluster_a=$base
  start_sluice cluster-b "$work/sluice-cluster-b.toml"
  cluster_b=$base
  cluster_env=(A2A_CLUSTER=1 SLUICE_CLUSTER_A="$cluster_a" SLUICE_CLUSTER_B="$cluster_b")
fi

suites=" ${A2A_SUITES:-python remote js} "
# wanted SUITE: whether SUITE runs (a skipped one counts 0 passed, 0 failed).
wanted() { [[ "$suites" == *" $1 "* ]]; }

# --- the checks: the Python suite ---
summary="$work/summary"
status=0
if wanted python; then
  env "${cluster_env[@]}" SLUICE_URL="$main_base" A2A_SUMMARY="$summary" \
    timeout 240 "$py" "$here/test_a2a_python.py" || status=$?
else
  echo "0 passed, 0 failed" >"$summary"
fi
py_line=$(tail -1 "$summary" 2>/dev/null || true)
if ! [[ "$py_line" =~ ^[0-9]+\ passed,\ [0-9]+\ failed$ ]]; then
  echo "the Python suite wrote no summary" >&2
  py_line="0 passed, 1 failed"
  status=1
fi

# --- the checks: the concentrator suite ---
remote_line=""
remote_status=0
if wanted remote; then
  env "${cluster_env[@]}" SLUICE_URL="$main_base" A2A_SUMMARY="$summary.remote" \
    A2A_AUDIT="$work/audit.jsonl" A2A_UPSTREAM_V1="${v1_card%/.well-known/agent-card.json}" \
    A2A_UPSTREAM_V03="${v03_card%/.well-known/agent-card.json}" \
    A2A_UPSTREAM_SECRET="$(cat "$work/upstream.secret")" A2A_DOOMED_PID="$doomed_pid" \
    MCP_PY="$mcp_venv/bin/python" timeout 300 "$py" "$here/test_a2a_remote.py" || remote_status=$?
else
  echo "0 passed, 0 failed" >"$summary.remote"
fi
remote_line=$(tail -1 "$summary.remote" 2>/dev/null || true)
if ! [[ "$remote_line" =~ ^[0-9]+\ passed,\ [0-9]+\ failed$ ]]; then
  echo "the concentrator suite wrote no summary" >&2
  remote_line="0 passed, 1 failed"
fi
[ "$remote_status" -eq 0 ] || status=1

# --- the checks: the JavaScript suite (the pinned SDK, reused while package-lock.json is unchanged) ---
js_line=""
if ! wanted js; then
  js_line="0 passed, 0 failed"
elif ! command -v node >/dev/null 2>&1 ||
  [ "$(node -p 'Number(process.versions.node.split(".")[0])' 2>/dev/null || echo 0)" -lt 20 ]; then
  echo "FAIL   js: Node >= 20 is needed (found: $(node --version 2>/dev/null || echo none))" >&2
  js_line="0 passed, 1 failed"
elif ! cmp -s "$here/package-lock.json" "$js_dir/package-lock.json" 2>/dev/null ||
  [ ! -d "$js_dir/node_modules" ]; then
  rm -rf "$js_dir"
  mkdir -p "$js_dir"
  cp "$here/package.json" "$here/package-lock.json" "$js_dir/"
  if ! (cd "$js_dir" && npm ci --no-audit --no-fund --loglevel=error) >"$work/npm.log" 2>&1; then
    tail -30 "$work/npm.log" >&2
    rm -rf "$js_dir"
    echo "FAIL   js: npm ci in $js_dir" >&2
    js_line="0 passed, 1 failed"
  fi
fi
if [ -z "$js_line" ]; then
  # The script imports the SDK from the node_modules next to it.
  cp "$here/a2a.mjs" "$js_dir/"
  js_status=0
  SLUICE_URL="$main_base" timeout 120 node "$js_dir/a2a.mjs" >"$work/js.out" 2>"$work/js.err" || js_status=$?
  cat "$work/js.out"
  [ -s "$work/js.err" ] && cat "$work/js.err" >&2
  js_line=$(tail -1 "$work/js.out")
  if ! [[ "$js_line" =~ ^[0-9]+\ passed,\ [0-9]+\ failed$ ]]; then
    echo "FAIL   js: a2a.mjs exited $js_status without a summary" >&2
    js_line="0 passed, 1 failed"
  elif [ "$js_status" -ne 0 ] && [[ "$js_line" =~ \ 0\ failed$ ]]; then
    js_line="${js_line%%,*}, 1 failed"
  fi
fi
[[ "$js_line" =~ \ 0\ failed$ ]] || status=1

if [ "$status" -ne 0 ]; then
  for log in "$work"/sluice*.log "$work"/cluster-*.log "$work"/agent-*.log; do
    [ -s "$log" ] && { echo "--- $(basename "$log")" >&2; tail -30 "$log" >&2; }
  done
fi
# The combined summary stays the last line on stdout.
read -r py_passed _ py_failed _ <<<"${py_line//,/}"
read -r remote_passed _ remote_failed _ <<<"${remote_line//,/}"
read -r js_passed _ js_failed _ <<<"${js_line//,/}"
echo "$((py_passed + remote_passed + js_passed)) passed, $((py_failed + remote_failed + js_failed)) failed"
exit "$status"
