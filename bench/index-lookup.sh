#!/usr/bin/env bash
# Point lookups on a non-key column, with and without a secondary index, in
# Walden and in a scratch PostgreSQL 15, side by side: a table of N rows
# (id primary key, v = a random integer, a 60-byte filler), then pgbench with
# one client running `SELECT id FROM t WHERE v = :r` for S seconds per case,
# the cases interleaved round by round. Prints transactions per second and
# mean latency per case, and the ratios.
#
#   bash bench/index-lookup.sh [--rows N] [--seconds S] [--rounds R] [WALDEN_BINARY]
#
# Needs pgbench, psql, initdb/pg_ctl (postgresql-15) and python3.
set -euo pipefail
rows=200000 seconds=10 rounds=2 bin=target/release/walden
while [ $# -gt 0 ]; do
  case "$1" in
    --rows) rows=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    -h|--help) sed -n 2,11p "$0"; exit 0 ;;
    *) bin=$1; shift ;;
  esac
done
pgbin=$(ls -d /usr/lib/postgresql/15/bin 2>/dev/null || dirname "$(command -v pg_ctl)")
for t in pgbench psql python3 "$pgbin/initdb" "$pgbin/pg_ctl" "$bin"; do
  command -v "$t" >/dev/null || [ -x "$t" ] || { echo "$t is required" >&2; exit 3; }
done
scratch=$(mktemp -d "${TMPDIR:-/tmp}/index-lookup.XXXXXX")
chmod 755 "$scratch"
server=""
as_pg() { if [ "$(id -u)" = 0 ]; then su postgres -s /bin/sh -c "$*"; else sh -c "$*"; fi; }
cleanup() {
  [ -n "$server" ] && kill "$server" 2>/dev/null
  as_pg "$pgbin/pg_ctl -D $scratch/pg/data -m immediate stop" >/dev/null 2>&1 || true
  wait 2>/dev/null; rm -rf "$scratch"
}
trap cleanup EXIT INT TERM
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wport=$(free_port) pport=$(free_port)

"$bin" serve --data-dir "$scratch/walden" --listen "127.0.0.1:$wport" >"$scratch/walden.log" 2>&1 &
server=$!
# PostgreSQL runs as `postgres` when this runs as root: its files live in a
# directory that user owns.
mkdir -p "$scratch/pg"
if [ "$(id -u)" = 0 ]; then chown postgres "$scratch/pg"; fi
as_pg "$pgbin/initdb -D $scratch/pg/data -U walden -A trust" >/dev/null
as_pg "$pgbin/pg_ctl -D $scratch/pg/data -o '-p $pport -k $scratch/pg -c listen_addresses=127.0.0.1' -l $scratch/pg/log -w start" >/dev/null
W=(-h 127.0.0.1 -p "$wport" -U walden) P=(-h 127.0.0.1 -p "$pport" -U walden)
for _ in $(seq 100); do psql "${W[@]}" -qAtc 'select 1' walden >/dev/null 2>&1 && break; sleep 0.1; done
psql "${P[@]}" -qAtc 'CREATE DATABASE walden' postgres >/dev/null

load="CREATE TABLE t (id int PRIMARY KEY, v int, filler text);
      INSERT INTO t SELECT g, (g * 7919) % $rows, 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx' FROM generate_series(1, $rows) g;
      CREATE TABLE u (id int PRIMARY KEY, v int, filler text);
      INSERT INTO u SELECT * FROM t;
      CREATE INDEX t_v ON t (v);"
psql "${W[@]}" -qc "$load" walden >/dev/null
psql "${P[@]}" -qc "$load; ANALYZE" walden >/dev/null
psql "${W[@]}" -qAtc "CHECKPOINT" walden >/dev/null
for tbl in t u; do
  printf '\\set r random(0, %d)\nSELECT id FROM %s WHERE v = :r;\n' "$((rows - 1))" "$tbl" >"$scratch/$tbl.sql"
done

: >"$scratch/results"
for round in $(seq 1 "$rounds"); do
  for case in "walden index:W:t" "walden scan:W:u" "postgres index:P:t" "postgres scan:P:u"; do
    IFS=: read -r name side tbl <<<"$case"
    if [ "$side" = W ]; then conn=("${W[@]}"); else conn=("${P[@]}"); fi
    # PostgreSQL would use its index on u's primary key only; without one on
    # v it scans, as Walden does.
    out=$(pgbench "${conn[@]}" -n -c 1 -T "$seconds" -f "$scratch/$tbl.sql" walden 2>&1)
    tps=$(sed -n 's/^tps = \([0-9.]*\).*/\1/p' <<<"$out")
    lat=$(sed -n 's/^latency average = \([0-9.]*\) ms/\1/p' <<<"$out")
    echo "$round|$name|$tps|$lat" | tee -a "$scratch/results"
  done
done
python3 - "$scratch/results" "$rows" <<'EOF'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    r, name, tps, lat = line.strip().split("|")
    rows.setdefault(name, []).append((float(tps), float(lat)))
print(f"\n{sys.argv[2]} rows, one client, SELECT id FROM t WHERE v = :r (medians over rounds)")
med = {n: (statistics.median(t for t, _ in v), statistics.median(l for _, l in v)) for n, v in rows.items()}
for n, (t, l) in med.items():
    print(f"  {n:16} {t:10.0f} tps  {l:9.3f} ms")
wi, ws, pi = med["walden index"][0], med["walden scan"][0], med["postgres index"][0]
print(f"  walden index / walden scan: {wi / ws:.0f}x;  walden index / postgres index: {wi / pi:.2f}")
EOF
