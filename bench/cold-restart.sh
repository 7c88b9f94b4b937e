#!/usr/bin/env bash
# Restart with a cold page cache, then TPC-B: loads pgbench's tables (scale
# N) once with the first binary, then, for each binary in turn (repeat a
# binary to interleave), drops the OS page cache (needs root), starts the
# server on the same data directory, prints how long it took to answer, and
# runs TPC-B (4 clients) with progress every 5 s. Shows what a restart
# costs when the data file is not in memory: an open that reads the whole
# file versus one that reads rows as they are asked for.
#
#   bash bench/cold-restart.sh [--scale N] [--seconds S] BINARY [BINARY...]
#
# Needs pgbench and psql (postgresql-client-15), python3 and root.
set -euo pipefail
scale=100 seconds=20
bins=()
while [ $# -gt 0 ]; do
  case "$1" in
    --scale) scale=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    -h|--help) sed -n 2,12p "$0"; exit 0 ;;
    *) bins+=("$1"); shift ;;
  esac
done
[ ${#bins[@]} -gt 0 ] || { echo "give at least one walden binary" >&2; exit 2; }
[ -w /proc/sys/vm/drop_caches ] || { echo "dropping the page cache needs root" >&2; exit 3; }
scratch=$(mktemp -d "${TMPDIR:-/tmp}/cold.XXXXXX")
data="$scratch/data" server=""
cleanup() { [ -n "$server" ] && kill -9 "$server" 2>/dev/null; wait 2>/dev/null; rm -rf "$scratch"; }
trap cleanup EXIT INT TERM
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
conn=(-h 127.0.0.1 -p "$port" -U walden)
start() {
  local t0 t1
  t0=$(date +%s.%N)
  "$1" serve --data-dir "$data" --listen "127.0.0.1:$port" >>"$scratch/server.log" 2>&1 &
  server=$!
  for _ in $(seq 6000); do psql "${conn[@]}" -qAtc 'select 1' walden >/dev/null 2>&1 && break; sleep 0.05; done
  t1=$(date +%s.%N)
  echo "$1 answered after $(python3 -c "print(f'{$t1 - $t0:.2f}')") s"
}
stop() { kill "$server"; wait "$server" 2>/dev/null || true; server=""; }
start "${bins[0]}"
pgbench "${conn[@]}" -i -q -s "$scale" -I dtGvp walden >"$scratch/init.log" 2>&1
psql "${conn[@]}" -qAtc CHECKPOINT walden >/dev/null
stop
for bin in "${bins[@]}"; do
  sync; echo 3 >/proc/sys/vm/drop_caches
  start "$bin"
  pgbench "${conn[@]}" -n -c 4 -j 2 -T "$seconds" -P 5 walden 2>&1 | grep -E '^progress|^tps'
  stop
done
