#!/usr/bin/env bash
# Server-side instructions per request for each e2e_loopback workload, measured with callgrind:
# the bench runs a fixed number of requests (E2E_REQUESTS) on one connection, twice (N and 2N), and
# the difference of the server thread's instruction counts divided by N is the per-request cost
# (set-up costs cancel out). The server runtime is built first, so its worker is thread 2.
#
# Usage: benches/e2e/callgrind.sh [N] [workload...]   (defaults: 200, every default workload)
# Needs valgrind and a built bench binary:
#   cargo bench --bench e2e_loopback --no-run
# Output files stay in $OUT (default /tmp/e2e-callgrind) for callgrind_annotate.
set -euo pipefail
n=${1:-200}
shift || true
workloads=("$@")
if [ ${#workloads[@]} -eq 0 ]; then
  workloads=(hyper hyper_cl ping tools_list get_customer sl_discover sl_tools_list)
fi
target=${CARGO_TARGET_DIR:-target}
bin=$(ls -t "$target"/release/deps/e2e_loopback-* | grep -v '\.d$' | head -1)
out=${OUT:-/tmp/e2e-callgrind}
mkdir -p "$out"

# Instructions of thread 2 (the server worker) in a run of $2 requests of workload $1.
server_ir() {
  local file="$out/$1.$2"
  rm -f "$file" "$file"-*
  E2E_WORKLOADS=$1 E2E_CONNS=1 E2E_ROUNDS=1 E2E_WARMUP_MS=0 E2E_DURATION_MS=600000 \
    E2E_REQUESTS=$2 valgrind --tool=callgrind --separate-threads=yes \
    --callgrind-out-file="$file" "$bin" --bench >/dev/null 2>&1
  awk '/^summary:/ {print $2}' "$file"-02
}

printf '%-15s %12s %12s %14s\n' workload "Ir($n)" "Ir($((2 * n)))" "Ir/request"
for w in "${workloads[@]}"; do
  a=$(server_ir "$w" "$n")
  b=$(server_ir "$w" $((2 * n)))
  printf '%-15s %12d %12d %14d\n' "$w" "$a" "$b" $(((b - a) / n))
done
