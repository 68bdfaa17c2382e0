#!/usr/bin/env bash
# The side-by-side end-to-end benchmark (issue 7, point 2): in ONE run, on loopback, the minimal
# hyper server (the limit), sluice and rmcp's Streamable HTTP server (the best Rust peer), each
# pinned to core 0 with one tokio worker, measured by `sluice bench` pinned to core 1 (the demo
# API every tools/call forwards to is on core 1 too), at several connection counts (clients =
# connections), several rounds, medians.
#
# Cells (target / method / Accept):
#   hyper-limit  ping                    (the same POST as ping; answers sluice's ping bytes)
#   sluice       ping, tools/list        over SSE (the default) and JSON, in a 2025-11-25 session
#   sluice       tools/call get_customer over SSE (the default) and JSON, through the demo API
#   rmcp         ping, tools/list, tools/call get_customer (stateful, SSE answers)
# Every request sends `Accept: application/json, text/event-stream` (the handshake era requires
# both; sluice refuses anything less with 406). The server picks the framing: rmcp (stateful)
# always answers SSE; sluice answers as its `post_framing` says, so two sluice processes run, from
# the same generated configuration but for that setting: "sse" cells go to the one with the
# default configuration (`post_framing = "sse"`: the "SSE default" rows), "json" cells to the one
# with `post_framing = "json"`. The table's "answered" column is the bench's own count of the
# framing it got.
#
# Two load generators measure every cell in the same run (GENERATORS): `wrk` (independent, C,
# one thread, the load spread over as many sessions as connections, created with curl
# beforehand; installed from the distribution's package, pinned, when missing) and `sluice bench` (one session per
# client, answers decoded and checked). The headline quotes wrk: `sluice bench` costs about as
# much per request as the server it measures, so it saturates its core first on cheap methods.
#
# Besides req/s and latency, each cell records the server process's CPU time (utime + stime
# from /proc/PID/stat around the bench command) and the load core's busy share (/proc/stat).
# "srv us/req" is that CPU ÷ the requests served; "rmcp srv us ÷ this" compares server work per
# request with rmcp's for the same method, which holds even when the load core, not the server,
# is what saturates (load core busy near 100%): then req/s ratios understate the server's margin.
#
# Usage: benches/e2e/run.sh            (builds what it needs, then runs; ~8 min by default)
# Knobs (environment):
#   DURATION=5s WARMUP=1s ROUNDS=3 CONNS="1 16 64" OUT=/tmp/sluice-e2e
#   TARGETS="hyper sluice rmcp"  (subset of targets)      SKIP_BUILD=1 (use existing binaries)
#   GENERATORS="wrk sluice"  (subset of load generators)   WRK_VERSION=4.1.0-3+b2 (the package)
#   CARGO_TARGET_DIR (sluice's target dir, default ./target)
#   PEERS_TARGET (the peers project's target dir, default benches/e2e/peers/target)
#   BENCH_BIN (the `sluice` binary whose `bench` subcommand loads; default the built sluice)
#   SERVER_CORE=0 CLIENT_CORE=1
# Output: the table on stdout and in $OUT/table.md; every bench JSON in $OUT/json/; server logs
# and the probe answers in $OUT/.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
duration=${DURATION:-5s}
warmup=${WARMUP:-1s}
rounds=${ROUNDS:-3}
conns_list=${CONNS:-1 16 64}
targets=${TARGETS:-hyper sluice rmcp}
generators=${GENERATORS:-wrk sluice}
wrk_version=${WRK_VERSION:-4.1.0-3+b2}
out=${OUT:-/tmp/sluice-e2e}
server_core=${SERVER_CORE:-0}
client_core=${CLIENT_CORE:-1}
sluice_target=${CARGO_TARGET_DIR:-$root/target}
peers_target=${PEERS_TARGET:-$root/benches/e2e/peers/target}

sluice_bin=$sluice_target/release/sluice
peers_bin=$peers_target/release
# The load generator: `sluice bench` of the same build unless BENCH_BIN names another binary.
bench_bin=${BENCH_BIN:-$sluice_bin}

# === build ===
if [ "${SKIP_BUILD:-0}" != 1 ]; then
  echo "building sluice (release) into $sluice_target" >&2
  (cd "$root" && CARGO_TARGET_DIR=$sluice_target cargo build --release --bin sluice)
  echo "building the peers (release) into $peers_target" >&2
  (cd "$root/benches/e2e/peers" && CARGO_TARGET_DIR=$peers_target cargo build --release --locked)
fi
if [[ " $generators " == *" wrk "* ]] && ! command -v wrk >/dev/null 2>&1; then
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    echo "installing wrk $wrk_version (Debian package)" >&2
    apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "wrk=$wrk_version" >&2
  else
    echo "wrk is missing and cannot be installed here (apt-get as root); GENERATORS=sluice skips it" >&2
    exit 1
  fi
fi
for bin in "$sluice_bin" "$bench_bin" "$peers_bin/hyper-limit" "$peers_bin/rmcp-peer" "$peers_bin/demo-api"; do
  [ -x "$bin" ] || { echo "missing $bin (run without SKIP_BUILD=1)" >&2; exit 1; }
done

mkdir -p "$out/json" "$out/logs" "$out/wrk"
rm -f "$out"/json/*.json

# === processes ===
pids=()
declare -A pid_of=()
cleanup() {
  for pid in "${pids[@]}"; do
    kill -TERM "$pid" 2>/dev/null || true
  done
  for pid in "${pids[@]}"; do
    wait "$pid" 2>/dev/null || true
  done
}
trap cleanup EXIT

# start NAME CORE CMD...: starts CMD pinned to CORE, stdout/stderr to $out/logs/NAME.*
start() {
  local name=$1 core=$2
  shift 2
  taskset -c "$core" "$@" >"$out/logs/$name.out" 2>"$out/logs/$name.err" &
  pids+=($!)
  pid_of[$name]=$!
}

# CPU time (clock ticks, user + system) a process has used so far.
proc_ticks() {
  awk '{print $14 + $15}' "/proc/$1/stat"
}

# Busy and total clock ticks of one core so far (busy = all but idle and iowait).
core_ticks() {
  awk -v cpu="cpu$1" '$1 == cpu {t = 0; for (i = 2; i <= NF; i++) t += $i; print t - $5 - $6, t}' /proc/stat
}

# wait_line NAME PREFIX: waits (30 s at most) for a line `PREFIX ADDR` in NAME's stdout; prints ADDR.
wait_line() {
  local file=$out/logs/$1.out prefix=$2 line
  for _ in $(seq 300); do
    line=$(grep -m1 "^$prefix " "$file" 2>/dev/null || true)
    if [ -n "$line" ]; then
      echo "${line#"$prefix "}"
      return 0
    fi
    sleep 0.1
  done
  echo "$1 did not print '$prefix ADDR'; its stderr:" >&2
  cat "$out/logs/$1.err" >&2
  exit 1
}

# wait_port ADDR: waits (30 s at most) until ADDR accepts connections.
wait_port() {
  for _ in $(seq 300); do
    if curl -s -o /dev/null --max-time 1 "http://$1/"; then
      return 0
    fi
    sleep 0.1
  done
  echo "nothing listens on $1" >&2
  exit 1
}

start demo-api "$client_core" "$peers_bin/demo-api" --workers 1 \
  --write-config "$out/sluice.toml" --write-json-config "$out/sluice-json.toml"
api=$(wait_line demo-api listening)
sluice_addr=$(wait_line demo-api sluice)
sluice_json_addr=$(wait_line demo-api sluice-json)
start sluice "$server_core" "$sluice_bin" --workers 1 serve --config "$out/sluice.toml"
start sluice-json "$server_core" "$sluice_bin" --workers 1 serve --config "$out/sluice-json.toml"
start hyper-limit "$server_core" "$peers_bin/hyper-limit" --workers 1
start rmcp-peer "$server_core" "$peers_bin/rmcp-peer" --workers 1 --api "http://$api"
hyper_addr=$(wait_line hyper-limit listening)
rmcp_addr=$(wait_line rmcp-peer listening)
wait_port "$sluice_addr"
wait_port "$sluice_json_addr"

declare -A url=(
  [hyper]="http://$hyper_addr/mcp"
  [sluice]="http://$sluice_addr/runtime/demo/agent/mcp"
  [sluice-json]="http://$sluice_json_addr/runtime/demo/agent/mcp"
  [rmcp]="http://$rmcp_addr/mcp"
)

# The cells: target|method|accept
cells=()
for t in $targets; do
  case $t in
    hyper) cells+=("hyper|ping|sse") ;;
    sluice) cells+=("sluice|ping|sse" "sluice|ping|json" "sluice|tools/list|sse" "sluice|tools/list|json"
      "sluice|tools/call|json" "sluice|tools/call|sse") ;;
    rmcp) cells+=("rmcp|ping|sse" "rmcp|tools/list|sse" "rmcp|tools/call|sse") ;;
    *) echo "unknown target $t" >&2; exit 1 ;;
  esac
done

# cell_url TARGET ACCEPT: where the cell's requests go.
cell_url() {
  if [ "$1" = sluice ] && [ "$2" = json ]; then
    echo "${url[sluice-json]}"
  else
    echo "${url[$1]}"
  fi
}

# bench TARGET METHOD ACCEPT CONNS JSONFILE [extra flags]: one measured cell.
bench() {
  local target=$1 method=$2 accept=$3 conns=$4 json=$5
  shift 5
  local args=(bench --url "$(cell_url "$target" "$accept")" --era handshake --method "$method"
    --clients "$conns" --connections "$conns" --http1 --accept both
    --quiet --json "$json" "$@")
  if [ "$method" = tools/call ]; then
    args+=(--tool get_customer --args '{"id":"c-100"}')
  fi
  taskset -c "$client_core" "$bench_bin" --workers 1 "${args[@]}" >>"$out/logs/bench.out" 2>>"$out/logs/bench.err"
}

# session_for URL: opens a 2025-11-25 session at URL (initialize, then
# notifications/initialized) and prints its id; prints nothing for a server that gives none.
session_for() {
  local init='{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"wrk","version":"1"}}}'
  local sid
  sid=$(curl -s -D - -o /dev/null --max-time 5 "$1" -H 'content-type: application/json' \
    -H 'accept: application/json, text/event-stream' -d "$init" |
    awk 'tolower($1) == "mcp-session-id:" {print $2}' | tr -d '\r')
  if [ -n "$sid" ]; then
    curl -s -o /dev/null --max-time 5 "$1" -H 'content-type: application/json' \
      -H 'accept: application/json, text/event-stream' -H 'mcp-protocol-version: 2025-11-25' \
      -H "mcp-session-id: $sid" -d '{"jsonrpc":"2.0","method":"notifications/initialized"}'
  fi
  echo "$sid"
}

# request_body METHOD: the JSON-RPC request every measured request of a cell sends.
request_body() {
  case $1 in
    ping) echo '{"jsonrpc":"2.0","id":7,"method":"ping"}' ;;
    tools/list) echo '{"jsonrpc":"2.0","id":7,"method":"tools/list"}' ;;
    tools/call) echo '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"get_customer","arguments":{"id":"c-100"}}}' ;;
  esac
}

# wrk_cell TARGET METHOD ACCEPT CONNS JSONFILE DURATION: one cell measured by wrk (one thread,
# CONNS connections). Like `sluice bench`'s clients, the load is spread over CONNS sessions
# (opened with curl beforehand): wrk's `request` hook hands out CONNS pre-formatted requests in
# turn, one per session, so no session sees much more than one request at a time (one session
# for every connection would measure how a server serializes one session: rmcp runs a task per
# session). The Lua `done` hook writes JSONFILE in the shape of `sluice bench --json`
# (requests_per_s, latency_us, errors) so one table reads both.
wrk_cell() {
  local target=$1 method=$2 accept=$3 conns=$4 json=$5 duration=$6
  local u script sids=() sid i
  u=$(cell_url "$target" "$accept")
  for i in $(seq "$conns"); do
    sid=$(session_for "$u")
    sids+=("$sid")
    # A server that gives no session id (hyper-limit) needs only one request shape.
    [ -z "$sid" ] && break
  done
  script=$out/wrk/${target}-${method//\//_}-$accept-c$conns.lua
  {
    echo 'wrk.method = "POST"'
    echo "wrk.body = [[$(request_body "$method")]]"
    echo 'wrk.headers["Content-Type"] = "application/json"'
    echo 'wrk.headers["Accept"] = "application/json, text/event-stream"'
    echo 'wrk.headers["Mcp-Protocol-Version"] = "2025-11-25"'
    echo 'local sessions = {'
    for sid in "${sids[@]}"; do echo "  \"$sid\","; done
    echo '}'
    cat <<LUA
local requests, turn = {}, 0
init = function(args)
  for i, sid in ipairs(sessions) do
    local headers = {}
    for k, v in pairs(wrk.headers) do headers[k] = v end
    if sid ~= "" then headers["Mcp-Session-Id"] = sid end
    requests[i] = wrk.format(nil, nil, headers, nil)
  end
end
request = function()
  turn = turn % #requests + 1
  return requests[turn]
end
done = function(summary, latency, requests)
  local e = summary.errors
  local secs = summary.duration / 1e6
  local f = io.open("$json", "w")
  f:write(string.format('{"generator": "wrk", "requests": %d, "duration_s": %.6f, "warmup_s": 0, '
    .. '"requests_per_s": %.1f, "latency_us": {"p50": %d, "p99": %d, "mean": %.1f}, '
    .. '"errors": {"connect": %d, "read": %d, "write": %d, "status": %d, "timeout": %d}}\n',
    summary.requests, secs, summary.requests / secs, latency:percentile(50), latency:percentile(99),
    latency.mean, e.connect, e.read, e.write, e.status, e.timeout))
  f:close()
end
LUA
  } >"$script"
  taskset -c "$client_core" wrk -t1 -c"$conns" -d"$duration" --timeout 10s -s "$script" "$u" \
    >>"$out/logs/wrk.out" 2>>"$out/logs/wrk.err"
  for sid in "${sids[@]}"; do
    [ -n "$sid" ] && curl -s -o /dev/null -X DELETE "$u" -H "mcp-session-id: $sid" \
      -H 'mcp-protocol-version: 2025-11-25'
  done
  return 0
}

# === probe: one answer of each cell, kept for the record (and a failed cell stops the run) ===
echo "probing every cell once" >&2
for cell in "${cells[@]}"; do
  IFS='|' read -r target method accept <<<"$cell"
  probe=$out/json/probe-${target}-${method//\//_}-$accept.json
  if ! bench "$target" "$method" "$accept" 1 "$probe" --requests 20 --warmup 0s; then
    echo "probe of $cell failed; see $out/logs/bench.err" >&2
    exit 1
  fi
  ok=$(jq -r '.ok // 0' "$probe")
  [ "$ok" -gt 0 ] || { echo "probe of $cell: no OK answer ($probe)" >&2; exit 1; }
done
# What each target answers (content type and body) to the measured requests, for the record.
{
  for cell in "${cells[@]}"; do
    IFS='|' read -r target method accept <<<"$cell"
    echo "== $cell"
    u=$(cell_url "$target" "$accept")
    a='application/json, text/event-stream'
    init='{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"probe","version":"1"}}}'
    sid=$(curl -s -D - -o /dev/null "$u" -H 'content-type: application/json' \
      -H "accept: application/json, text/event-stream" -d "$init" |
      awk 'tolower($1) == "mcp-session-id:" {print $2}' | tr -d '\r')
    hdr=(-H 'content-type: application/json' -H "accept: $a" -H 'mcp-protocol-version: 2025-11-25')
    [ -n "$sid" ] && hdr+=(-H "mcp-session-id: $sid")
    curl -s -o /dev/null "$u" "${hdr[@]}" -d '{"jsonrpc":"2.0","method":"notifications/initialized"}'
    case $method in
      ping) body='{"jsonrpc":"2.0","id":7,"method":"ping"}' ;;
      tools/list) body='{"jsonrpc":"2.0","id":7,"method":"tools/list"}' ;;
      tools/call) body='{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"get_customer","arguments":{"id":"c-100"}}}' ;;
    esac
    curl -s -i --max-time 5 "$u" "${hdr[@]}" -d "$body" | tr -d '\r' || true
    echo
    if [ -n "$sid" ]; then curl -s -o /dev/null -X DELETE "$u" "${hdr[@]}"; fi
  done
} >"$out/probe.txt" 2>&1 || true

# === the run ===
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
echo "load average before: $load_before" >&2
echo "cells: ${#cells[@]} x conns ($conns_list) x $rounds rounds, $warmup warm-up + $duration each" >&2
for round in $(seq "$rounds"); do
  for conns in $conns_list; do
    for cell in "${cells[@]}"; do
     for gen in $generators; do
      IFS='|' read -r target method accept <<<"$cell"
      json=$out/json/${gen}-${target}-${method//\//_}-$accept-c$conns-r$round.json
      server=$target
      [ "$target" = sluice ] && [ "$accept" = json ] && server=sluice-json
      [ "$target" = hyper ] && server=hyper-limit
      [ "$target" = rmcp ] && server=rmcp-peer
      ticks_before=$(proc_ticks "${pid_of[$server]}")
      read -r busy_before total_before < <(core_ticks "$client_core")
      if [ "$gen" = wrk ]; then
        # wrk has no warm-up of its own: a short unmeasured run first, then the measured one.
        wrk_cell "$target" "$method" "$accept" "$conns" "$out/wrk/warmup.json" "$warmup" ||
          echo "round $round: wrk warm-up of $cell failed" >&2
        ticks_before=$(proc_ticks "${pid_of[$server]}")
        read -r busy_before total_before < <(core_ticks "$client_core")
        wrk_cell "$target" "$method" "$accept" "$conns" "$json" "$duration" ||
          echo "round $round: wrk $cell at $conns connections failed (see $out/logs/wrk.err)" >&2
      elif ! bench "$target" "$method" "$accept" "$conns" "$json" --duration "$duration" --warmup "$warmup"; then
        echo "round $round: $cell at $conns connections failed (see $out/logs/bench.err)" >&2
      fi
      ticks_after=$(proc_ticks "${pid_of[$server]}")
      read -r busy_after total_after < <(core_ticks "$client_core")
      # The server's CPU over the whole bench command (warm-up and set-up included) and the
      # load generator core's busy share, next to the bench's JSON of the same cell.
      echo "{\"server_ticks\": $((ticks_after - ticks_before)), \"ticks_per_s\": $(getconf CLK_TCK), \"client_core_busy\": $((busy_after - busy_before)), \"client_core_total\": $((total_after - total_before))}" >"${json%.json}.cpu.json"
      printf 'round %s  %-6s %-28s c=%-3s %s\n' "$round" "$gen" "$cell" "$conns" \
        "$(jq -r '"\(.requests_per_s | floor) req/s  p99 \(.latency_us.p99) us  errors \(.errors | add // 0)"' "$json" 2>/dev/null || echo '(no result)')" >&2
     done
    done
  done
  echo "round $round done; load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
echo "load average after: $load_after" >&2

# === the table ===
python3 - "$out" "$rounds" "$conns_list" "$load_before" "$load_after" "$generators" "${cells[@]}" <<'PY' | tee "$out/table.md"
import json, os, statistics, sys

out, rounds, conns_list, load_before, load_after, generators = sys.argv[1:7]
cells = [c.split("|") for c in sys.argv[7:]]
generators = generators.split()
rounds = int(rounds)
conns_list = [int(c) for c in conns_list.split()]

def load(gen, target, method, accept, conns):
    rows = []
    for r in range(1, rounds + 1):
        path = os.path.join(out, "json", f"{gen}-{target}-{method.replace('/', '_')}-{accept}-c{conns}-r{r}.json")
        try:
            with open(path) as f:
                rows.append(json.load(f))
        except (OSError, ValueError):
            pass
    if not rows:
        return None
    med = lambda xs: statistics.median(xs)
    # Server CPU per request: the server's CPU over the bench command ÷ the requests of its
    # warm-up and window (the rate of the window applied to both); the set-up (initialize) is a
    # few requests per connection, lost in the rounding.
    srv_us, gen_busy = [], []
    for r in range(1, rounds + 1):
        stem = os.path.join(out, "json", f"{gen}-{target}-{method.replace('/', '_')}-{accept}-c{conns}-r{r}")
        try:
            with open(stem + ".json") as f:
                x = json.load(f)
            with open(stem + ".cpu.json") as f:
                cpu = json.load(f)
        except (OSError, ValueError):
            continue
        served = x.get("requests_per_s", 0.0) * (x.get("duration_s", 0.0) + x.get("warmup_s", 0.0))
        if served > 0:
            srv_us.append(cpu["server_ticks"] / cpu["ticks_per_s"] * 1e6 / served)
        if cpu.get("client_core_total"):
            gen_busy.append(cpu["client_core_busy"] / cpu["client_core_total"])
    return {
        "rps": med([x.get("requests_per_s", 0.0) for x in rows]),
        "p50": med([x.get("latency_us", {}).get("p50", 0.0) for x in rows]),
        "p99": med([x.get("latency_us", {}).get("p99", 0.0) for x in rows]),
        "errors": sum(sum((x.get("errors") or {}).values()) for x in rows),
        # How the server framed its answers (json/sse), from the bench's own count.
        "framing": "/".join(sorted({k for x in rows for k, v in (x.get("answers") or {}).items() if v})),
        "n": len(rows),
        "srv_us": med(srv_us) if srv_us else None,
        "gen_busy": med(gen_busy) if gen_busy else None,
    }

results = {}
for gen in generators:
    for target, method, accept in cells:
        for conns in conns_list:
            results[(gen, target, method, accept, conns)] = load(gen, target, method, accept, conns)

def ratio(a, b):
    return f"{a / b:.2f}x" if a and b else "-"

print(f"load average before: {load_before}; after: {load_after}")
print()
print("srv us/req: the server process's CPU time (user + system) over the measured command ÷ the requests it served;")
print("\"÷ limit's\": that figure over hyper-limit's for ping in the same generator's run.")
print()
print("| generator | target | method | accept | answered | conns | req/s | p50 us | p99 us | vs hyper-limit | vs rmcp same method | srv us/req | srv ÷ limit's | rmcp srv us ÷ this | load core busy | errors | rounds |")
print("| --- | --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
for gen in generators:
    for conns in conns_list:
        limit = results.get((gen, "hyper", "ping", "sse", conns))
        for target, method, accept in cells:
            r = results[(gen, target, method, accept, conns)]
            if r is None:
                print(f"| {gen} | {target} | {method} | {accept} | | {conns} | no result | | | | | | | | | | 0 |")
                continue
            peer = results.get((gen, "rmcp", method, "sse", conns))
            vs_limit = ratio(r["rps"], limit["rps"] if limit else None) if target != "hyper" else "1.00x"
            vs_peer = ratio(r["rps"], peer["rps"] if peer else None) if target != "rmcp" else "1.00x"
            if peer and target != "rmcp":
                vs_peer += f" (p99 {ratio(r['p99'], peer['p99'])})"
            srv = f"{r['srv_us']:.2f}" if r["srv_us"] else "-"
            srv_vs_limit = ratio(r["srv_us"], limit["srv_us"]) if limit and limit.get("srv_us") and r["srv_us"] else "-"
            cpu_vs_peer = ratio(peer["srv_us"], r["srv_us"]) if peer and peer.get("srv_us") and r["srv_us"] else "-"
            busy = f"{r['gen_busy']:.0%}" if r["gen_busy"] is not None else "-"
            framing = r["framing"] or "-"
            print(f"| {gen} | {target} | {method} | {accept} | {framing} | {conns} | {r['rps']:,.0f} | {r['p50']:.1f} | "
                  f"{r['p99']:.1f} | {vs_limit} | {vs_peer} | {srv} | {srv_vs_limit} | {cpu_vs_peer} | {busy} | {r['errors']} | {r['n']} |")
PY
echo "results: $out/table.md, $out/json/, probe answers in $out/probe.txt" >&2
