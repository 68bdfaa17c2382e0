#!/usr/bin/env bash
# SOAP interop: sluice's SOAP tools against spyne 2.14 (a real SOAP 1.1 and 1.2 stack), called by
# the official MCP Python SDK client, with zeep 4.3 building the reference envelopes
# (test_soap.py, spyne_service.py; versions pinned in requirements.txt).
#
# Creates (or reuses) a venv in target/soap-interop-venv, builds sluice (debug profile: the binary
# `cargo test` already built), and runs test_soap.py, which starts spyne in-process, imports the
# calculator fixture with `sluice import wsdl` and serves it with `sluice serve`. The last line
# printed is `N passed, N failed`; the exit status is non-zero on any failure.
#
# Env: CARGO_TARGET_DIR (where the binary is built, default target/),
#      SLUICE_BIN (a sluice binary to run instead: no `cargo build` then),
#      INTEROP_VERBOSE=1 (tracebacks for failed checks), RUST_LOG (sluice's log filter).
set -euo pipefail
cd "$(dirname "$0")/../../.."
root=$(pwd)
here="$root/tests/interop/soap"
venv="$root/target/soap-interop-venv"
target_dir="${CARGO_TARGET_DIR:-$root/target}"

if ! cmp -s "$here/requirements.txt" "$venv/soap-interop-requirements.txt" 2>/dev/null; then
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --disable-pip-version-check -q -r "$here/requirements.txt" || {
    echo "soap interop setup failed: pip install -r tests/interop/soap/requirements.txt" >&2
    echo "0 passed, 1 failed"
    exit 1
  }
  cp "$here/requirements.txt" "$venv/soap-interop-requirements.txt"
fi

if [ -n "${SLUICE_BIN:-}" ]; then
  sluice="$SLUICE_BIN"
else
  cargo build --locked --bin sluice
  sluice="$target_dir/debug/sluice"
fi

cd "$here"
SLUICE_BIN="$sluice" "$venv/bin/python" -u test_soap.py
