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
# Needs pgbench, psql, initdb/pg_ctl (postgresql-15) and python3 (bench/lib.sh).
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "$0")/lib.sh"
bench_args "$@"
bench_start index-lookup

load="CREATE TABLE t (id int PRIMARY KEY, v int, filler text);
      INSERT INTO t SELECT g, (g * 7919) % $rows, 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx' FROM generate_series(1, $rows) g;
      CREATE TABLE u (id int PRIMARY KEY, v int, filler text);
      INSERT INTO u SELECT * FROM t;
      CREATE INDEX t_v ON t (v);"
bench_load "$load"
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
    figures=$(bench_case "$scratch/$tbl.sql" "${conn[@]}")
    read -r tps lat <<<"$figures"
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
