#!/usr/bin/env bash
# Peak memory of CREATE INDEX and ALTER TABLE ... ADD PRIMARY KEY over a
# table whose rows are in the data file, not in memory: ROWS rows (int,
# int, 96-byte text, no key) are loaded in ten INSERTs with a CHECKPOINT
# after each, the server is restarted (so none of them is in memory), and
# its VmHWM is read after the restart, after CREATE INDEX (then CHECKPOINT)
# and after ADD PRIMARY KEY. Binaries are taken in turn ROUNDS times.
#
#   bash bench/ddl-memory.sh [--rows N] [--rounds R] BINARY [BINARY ...]
#
# Needs psql and python3.
set -euo pipefail
rows=1000000 rounds=1 bins=()
while [ $# -gt 0 ]; do
  case "$1" in
    --rows) rows=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 0 ;;
    *) bins+=("$1"); shift ;;
  esac
done
[ ${#bins[@]} -gt 0 ] || bins=(target/release/walden)
for t in psql python3 "${bins[@]}"; do
  command -v "$t" >/dev/null || [ -x "$t" ] || { echo "$t is required" >&2; exit 3; }
done
scratch=$(mktemp -d "${TMPDIR:-/tmp}/ddl-memory.XXXXXX")
server=""
cleanup() {
  [ -n "$server" ] && kill "$server" 2>/dev/null
  wait 2>/dev/null; rm -rf "$scratch"
}
trap cleanup EXIT INT TERM
mib() { echo $(( $(sed -n "s/^$2:[[:space:]]*\([0-9]*\) kB/\1/p" "/proc/$1/status") / 1024 )); }
start() {
  "$1" serve --data-dir "$scratch/data" --listen "127.0.0.1:$port" >>"$scratch/log" 2>&1 &
  server=$!
  for _ in $(seq 100); do psql "${P[@]}" -Atc 'select 1' >/dev/null 2>&1 && break; sleep 0.1; done
  # The open's background check of the data file reads it all; let it end.
  for _ in $(seq 600); do [ "$(grep -c 'data file checked' "$scratch/log")" -ge "$2" ] && break; sleep 0.1; done
}
printf '%-6s %-24s %10s %16s %16s %12s %12s\n' round binary "table MiB" "HWM restart MiB" "HWM index MiB" "index s" "pkey s"
for r in $(seq "$rounds"); do
  for bin in "${bins[@]}"; do
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    P=(-X -q -h 127.0.0.1 -p "$port" -U walden -d walden -v ON_ERROR_STOP=1)
    rm -rf "$scratch/data" "$scratch/log"
    start "$bin" 1
    psql "${P[@]}" -c "CREATE TABLE a (id int NOT NULL, k int, v text)"
    step=$((rows / 10))
    for b in $(seq 0 9); do
      psql "${P[@]}" -c "INSERT INTO a SELECT g, g % 1000, repeat(md5(g::text), 3) FROM generate_series($((b * step + 1)), $(((b + 1) * step))) g" -c CHECKPOINT
    done
    size=$(psql "${P[@]}" -Atc "SELECT pg_total_relation_size('a') / 1048576")
    kill "$server"; wait "$server" 2>/dev/null || true
    start "$bin" 2
    h0=$(mib "$server" VmHWM)
    t0=$(date +%s.%N)
    psql "${P[@]}" -c "CREATE INDEX a_k ON a (k)"
    t1=$(date +%s.%N)
    h1=$(mib "$server" VmHWM)
    psql "${P[@]}" -c CHECKPOINT
    t2=$(date +%s.%N)
    psql "${P[@]}" -c "ALTER TABLE a ADD PRIMARY KEY (id)"
    t3=$(date +%s.%N)
    h2=$(mib "$server" VmHWM)
    n=$(psql "${P[@]}" -Atc "SELECT count(*) FROM a WHERE k = 7")
    [ "$n" = "$((rows / 1000))" ] || { echo "index lookup found $n rows" >&2; exit 1; }
    printf '%-6s %-24s %10s %16s %16s %12.2f %12.2f   (HWM after pkey %s MiB)\n' "$r" "$(basename "$bin")" \
      "$size" "$h0" "$h1" "$(python3 -c "print($t1 - $t0)")" "$(python3 -c "print($t3 - $t2)")" "$h2"
    kill "$server"; wait "$server" 2>/dev/null || true; server=""
  done
done
