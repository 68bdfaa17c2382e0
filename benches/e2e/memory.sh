#!/usr/bin/env bash
# Resident memory per idle session and per idle GET stream (issue 7, point 4), in ONE run, for
# sluice, rmcp's Streamable HTTP server and a bare hyper SSE connection (hyper-limit), all with
# mimalloc and one tokio worker pinned to core 0. The client is `sluice bench idle` pinned to
# core 1; it prints `ready sessions=N streams=S` once everything is open, and the server's VmRSS
# and RssAnon (/proc/PID/status) are read then, against a reading taken before it started.
#
# Every phase starts a fresh server (so freed memory of an earlier phase cannot be reused), warms
# it with a short `sluice bench` run (code paths, thread-local caches, the first connections),
# reads its memory, opens the idle load, waits SETTLE seconds, reads again:
#   hyper-limit  N sessions + N GET streams  (its "sessions" keep no state: the figure is N bare
#                                             hyper SSE connections)
#   sluice       N sessions;  then (fresh) N sessions + N GET streams
#   rmcp         N sessions;  then (fresh) N sessions + N GET streams (rmcp's standalone stream)
# per session = ΔRSS(sessions) / N; per stream = (ΔRSS(sessions + streams) − ΔRSS(sessions)) / N.
# The 64 keep-alive connections the sessions were opened over stay open in both readings.
#
# Usage: benches/e2e/memory.sh   (builds what it needs; a few minutes)
# Knobs (environment): SESSIONS=10000 CONNECTIONS=64 SETTLE=3 OUT=/tmp/sluice-e2e-memory
#   TARGETS="hyper sluice rmcp" SKIP_BUILD=1 CARGO_TARGET_DIR PEERS_TARGET BENCH_BIN
#   SERVER_CORE=0 CLIENT_CORE=1 (as in run.sh)
# Output: the table on stdout and in $OUT/table.md, raw readings in $OUT/readings.tsv.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
sessions=${SESSIONS:-10000}
connections=${CONNECTIONS:-64}
settle=${SETTLE:-3}
targets=${TARGETS:-hyper sluice rmcp}
out=${OUT:-/tmp/sluice-e2e-memory}
server_core=${SERVER_CORE:-0}
client_core=${CLIENT_CORE:-1}
sluice_target=${CARGO_TARGET_DIR:-$root/target}
peers_target=${PEERS_TARGET:-$root/benches/e2e/peers/target}
sluice_bin=$sluice_target/release/sluice
peers_bin=$peers_target/release
bench_bin=${BENCH_BIN:-$sluice_bin}

if [ "${SKIP_BUILD:-0}" != 1 ]; then
  echo "building sluice (release) into $sluice_target" >&2
  (cd "$root" && CARGO_TARGET_DIR=$sluice_target cargo build --release --bin sluice)
  echo "building the peers (release) into $peers_target" >&2
  (cd "$root/benches/e2e/peers" && CARGO_TARGET_DIR=$peers_target cargo build --release --locked)
fi
for bin in "$sluice_bin" "$bench_bin" "$peers_bin/hyper-limit" "$peers_bin/rmcp-peer" "$peers_bin/demo-api"; do
  [ -x "$bin" ] || { echo "missing $bin (run without SKIP_BUILD=1)" >&2; exit 1; }
done

# Each held stream is a socket on both sides, plus the session connections and slack.
want=$((sessions * 2 + connections + 1024))
ulimit -n "$want" 2>/dev/null || ulimit -n "$(ulimit -Hn)"
if [ "$(ulimit -n)" != unlimited ] && [ "$(ulimit -n)" -lt $((sessions + connections + 256)) ]; then
  echo "open files limit $(ulimit -n) is too low for $sessions streams" >&2
  exit 1
fi

mkdir -p "$out/logs"
: >"$out/readings.tsv"

pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
}
trap cleanup EXIT

# start NAME CORE CMD...: runs CMD pinned to CORE in the background; its pid in $started.
start() {
  local name=$1 core=$2
  shift 2
  taskset -c "$core" "$@" >"$out/logs/$name.out" 2>"$out/logs/$name.err" &
  started=$!
  pids+=("$started")
}

# stop PID: SIGTERM, then wait for it.
stop() {
  kill -TERM "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
}

# wait_line NAME PREFIX [SECONDS]: waits for a line starting `PREFIX` in NAME's stdout; prints
# the rest of it. Fails if the process's log shows it gone or the time runs out.
wait_line() {
  local file=$out/logs/$1.out prefix=$2 limit=${3:-30} line
  for _ in $(seq $((limit * 10))); do
    line=$(grep -m1 "^$prefix" "$file" 2>/dev/null || true)
    if [ -n "$line" ]; then
      echo "${line#"$prefix"}" | sed 's/^ //'
      return 0
    fi
    sleep 0.1
  done
  echo "$1: no '$prefix' line after ${limit}s; its stderr:" >&2
  tail -20 "$out/logs/$1.err" >&2
  return 1
}

# mem PID: "VmRSS RssAnon" in kB.
mem() {
  awk '/^VmRSS:/ {r = $2} /^RssAnon:/ {a = $2} END {print r, a}' "/proc/$1/status"
}

# The demo API (for sluice's configuration and rmcp's --api; idle sessions never call it).
start demo-api "$client_core" "$peers_bin/demo-api" --workers 1 --write-config "$out/sluice.toml"
api_pid=$started
api=$(wait_line demo-api "listening ")
sluice_addr=$(wait_line demo-api "sluice ")

# phase NAME KIND STREAMS: one fresh server of KIND, warmed, measured before and after the idle
# load; appends "NAME base_rss base_anon after_rss after_anon" to readings.tsv.
phase() {
  local name=$1 kind=$2 streams=$3 server url addr
  case $kind in
    hyper)
      start "$name" "$server_core" "$peers_bin/hyper-limit" --workers 1
      server=$started
      addr=$(wait_line "$name" "listening ")
      url="http://$addr/mcp"
      ;;
    sluice)
      start "$name" "$server_core" "$sluice_bin" --workers 1 serve --config "$out/sluice.toml"
      server=$started
      addr=$sluice_addr
      for _ in $(seq 300); do
        curl -s -o /dev/null --max-time 1 "http://$addr/" && break
        sleep 0.1
      done
      url="http://$addr/runtime/demo/agent/mcp"
      ;;
    rmcp)
      start "$name" "$server_core" "$peers_bin/rmcp-peer" --workers 1 --api "http://$api"
      server=$started
      addr=$(wait_line "$name" "listening ")
      url="http://$addr/mcp"
      ;;
  esac
  # Warm-up: a few hundred pings over a few sessions.
  taskset -c "$client_core" "$bench_bin" --workers 1 bench --url "$url" --method ping \
    --clients 8 --connections 8 --requests 400 --quiet >>"$out/logs/warmup.out" 2>&1 ||
    echo "$name: warm-up failed (see $out/logs/warmup.out)" >&2
  sleep 1
  local before
  before=$(mem "$server")
  local flags=(--url "$url" --sessions "$sessions" --connections "$connections" --hold 3600s)
  [ "$streams" = 1 ] && flags+=(--streams)
  start "$name-idle" "$client_core" "$bench_bin" --workers 1 bench idle "${flags[@]}"
  local idle=$started
  if ! wait_line "$name-idle" "ready" 600 >/dev/null; then
    stop "$idle"
    stop "$server"
    echo "$name: the idle load did not open" >&2
    return 1
  fi
  sleep "$settle"
  local after
  after=$(mem "$server")
  echo "$name: before $before kB, after $after kB (VmRSS RssAnon) — $(cat "$out/logs/$name-idle.out")" >&2
  printf '%s\t%s\t%s\n' "$name" "${before// /	}" "${after// /	}" >>"$out/readings.tsv"
  stop "$idle"
  stop "$server"
}

for t in $targets; do
  case $t in
    hyper) phase hyper-streams hyper 1 ;;
    sluice) phase sluice-sessions sluice 0 && phase sluice-streams sluice 1 ;;
    rmcp) phase rmcp-sessions rmcp 0 && phase rmcp-streams rmcp 1 ;;
    *) echo "unknown target $t" >&2; exit 1 ;;
  esac
done
stop "$api_pid"

python3 - "$out/readings.tsv" "$sessions" <<'PY' | tee "$out/table.md"
import sys

path, n = sys.argv[1], int(sys.argv[2])
rows = {}
with open(path) as f:
    for line in f:
        name, b_rss, b_anon, a_rss, a_anon = line.split()
        rows[name] = (int(b_rss), int(b_anon), int(a_rss), int(a_anon))

def delta(name, anon=False):
    r = rows.get(name)
    if r is None:
        return None
    return (r[3] - r[1]) if anon else (r[2] - r[0])

def per(kb):
    return None if kb is None else kb * 1024 / n

def fmt(b):
    return "-" if b is None else f"{b:,.0f} B"

print(f"{n:,} idle sessions / streams per server; kB = VmRSS (RssAnon) from /proc/PID/status")
print()
print("| phase | before kB | after kB | ΔRSS kB | ΔRssAnon kB |")
print("| --- | ---: | ---: | ---: | ---: |")
for name, r in rows.items():
    print(f"| {name} | {r[0]:,} ({r[1]:,}) | {r[2]:,} ({r[3]:,}) | {r[2] - r[0]:,} | {r[3] - r[1]:,} |")
print()
figures = {}
for anon in (False, True):
    tag = "RssAnon" if anon else "VmRSS"
    s_sess = per(delta("sluice-sessions", anon))
    r_sess = per(delta("rmcp-sessions", anon))
    s_both, r_both = per(delta("sluice-streams", anon)), per(delta("rmcp-streams", anon))
    s_str = None if s_both is None or s_sess is None else s_both - s_sess
    r_str = None if r_both is None or r_sess is None else r_both - r_sess
    h_conn = per(delta("hyper-streams", anon))
    figures[tag] = (s_sess, r_sess, s_str, r_str, s_both, r_both, h_conn)
print("| per item | sluice | rmcp | rmcp / sluice |")
print("| --- | ---: | ---: | ---: |")
def ratio(a, b):
    return f"{a / b:.1f}x" if a is not None and b else "-"
for tag, (s_sess, r_sess, s_str, r_str, s_both, r_both, h_conn) in figures.items():
    print(f"| idle session ({tag}) | {fmt(s_sess)} | {fmt(r_sess)} | {ratio(r_sess, s_sess)} |")
    print(f"| idle GET stream ({tag}) | {fmt(s_str)} | {fmt(r_str)} | {ratio(r_str, s_str)} |")
    print(f"| session + stream ({tag}) | {fmt(s_both)} | {fmt(r_both)} | {ratio(r_both, s_both)} |")
print()
for tag, (s_sess, r_sess, s_str, r_str, s_both, r_both, h_conn) in figures.items():
    print(f"bare hyper SSE connection ({tag}): {fmt(h_conn)}; sluice stream / hyper connection: "
          f"{ratio(s_str, h_conn)} (target <= 1.3x); rmcp / sluice per session: "
          f"{ratio(r_sess, s_sess)} (target >= 20x)")
PY
echo "results: $out/table.md, $out/readings.tsv, logs in $out/logs/" >&2
