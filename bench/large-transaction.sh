#!/usr/bin/env bash
# Peak memory and time of one large transaction: `pgbench -i -s SCALE`
# (its data goes in one transaction: BEGIN, TRUNCATE, COPY of SCALE x
# 100,000 accounts, COMMIT) into a fresh `walden serve` per binary, the
# binaries taken in turn ROUNDS times (the disk changes speed: interleave).
# Prints, per run, the server's VmHWM (peak resident memory) after the
# load, its resident memory then, and the load's wall time.
#
#   bash bench/large-transaction.sh [--scale N] [--rounds R] BINARY [BINARY ...]
#
# Needs pgbench, psql and python3.
set -euo pipefail
scale=20 rounds=1 bins=()
while [ $# -gt 0 ]; do
  case "$1" in
    --scale) scale=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    -h|--help) sed -n 2,11p "$0"; exit 0 ;;
    *) bins+=("$1"); shift ;;
  esac
done
[ ${#bins[@]} -gt 0 ] || bins=(target/release/walden)
for t in pgbench psql python3 "${bins[@]}"; do
  command -v "$t" >/dev/null || [ -x "$t" ] || { echo "$t is required" >&2; exit 3; }
done
scratch=$(mktemp -d "${TMPDIR:-/tmp}/large-txn.XXXXXX")
server=""
cleanup() {
  [ -n "$server" ] && kill "$server" 2>/dev/null
  wait 2>/dev/null; rm -rf "$scratch"
}
trap cleanup EXIT INT TERM
kib() { sed -n "s/^$2:[[:space:]]*\([0-9]*\) kB/\1/p" "/proc/$1/status"; }
for r in $(seq "$rounds"); do
  for bin in "${bins[@]}"; do
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    rm -rf "$scratch/data"
    "$bin" serve --data-dir "$scratch/data" --listen "127.0.0.1:$port" >"$scratch/log" 2>&1 &
    server=$!
    P=(-h 127.0.0.1 -p "$port" -U walden)
    for _ in $(seq 100); do psql "${P[@]}" -X -q -d walden -Atc 'select 1' >/dev/null 2>&1 && break; sleep 0.1; done
    # Wait for the open's background data-file check to end.
    for _ in $(seq 100); do grep -q "data file checked" "$scratch/log" && break; sleep 0.1; done
    start=$(date +%s.%N)
    pgbench "${P[@]}" -i -q -s "$scale" walden >"$scratch/pgbench.log" 2>&1 \
      || { cat "$scratch/pgbench.log" >&2; exit 1; }
    end=$(date +%s.%N)
    hwm=$(kib "$server" VmHWM) rss=$(kib "$server" VmRSS)
    n=$(psql "${P[@]}" -X -d walden -Atc "SELECT count(*) FROM pgbench_accounts")
    python3 -c "import sys; h, r, s, e = map(float, sys.argv[1:5]); print(f'round {sys.argv[7]} {sys.argv[5]}: {int(sys.argv[6]):,} accounts, peak RSS {h / 1024:,.0f} MiB, RSS after {r / 1024:,.0f} MiB, load {e - s:.1f} s')" \
      "$hwm" "$rss" "$start" "$end" "$bin" "$n" "$r"
    kill "$server"; wait "$server" 2>/dev/null || true; server=""
  done
done
