#!/usr/bin/env python3
"""Per-request inclusive instruction counts of the server thread, by function.

Reads the two callgrind files of one workload written by callgrind.sh (N and 2N requests, server
thread = part -02), runs `callgrind_annotate --inclusive=yes` on both and prints, for the functions
whose inclusive count grew, (Ir(2N) - Ir(N)) / N: what each function costs per request, set-up
excluded. Usage: callgrind_diff.py DIR WORKLOAD N [LIMIT]
"""
import re
import subprocess
import sys


def inclusive(path):
    out = subprocess.run(
        ["callgrind_annotate", "--inclusive=yes", "--threshold=100", path],
        capture_output=True, text=True, check=True,
    ).stdout
    costs = {}
    line_re = re.compile(r"^\s*([\d,]+)\s+\([\s\d.]+%\)\s+(.*?):(.*?)(?: \[.*\])?$")
    for line in out.splitlines():
        m = line_re.match(line)
        if not m:
            continue
        ir = int(m.group(1).replace(",", ""))
        # Drop the call count ("(402x)"): it differs between the two runs.
        name = re.sub(r" \(\d[\d,]*x\)$", "", m.group(3).strip())
        # The same function appears under several source files (inlined code): keep the largest.
        costs[name] = max(costs.get(name, 0), ir)
    return costs


def main():
    folder, workload, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    limit = int(sys.argv[4]) if len(sys.argv) > 4 else 60
    small = inclusive(f"{folder}/{workload}.{n}-02")
    large = inclusive(f"{folder}/{workload}.{2 * n}-02")
    rows = sorted(
        ((large[k] - small.get(k, 0)) / n, k) for k in large
    )
    rows.reverse()
    for per_request, name in rows[:limit]:
        print(f"{per_request:10.0f}  {name[:150]}")


if __name__ == "__main__":
    main()
