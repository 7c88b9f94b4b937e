#!/usr/bin/env bash
# Whole-table scans in Walden and in a scratch PostgreSQL 15, side by side: a
# pgbench_accounts-shaped table of N rows (aid primary key, bid, abalance,
# char(84) filler), written to the store by a CHECKPOINT (Walden) and analyzed
# (PostgreSQL), then pgbench with one client running each query for S seconds,
# the cases interleaved round by round. Prints the mean latency per query and
# Walden / PostgreSQL. PostgreSQL runs with its defaults, so it may use
# parallel workers (the machine has 2 cores); --no-parallel turns them off.
#
#   bash bench/scan-speed.sh [--rows N] [--seconds S] [--rounds R] [--no-parallel] [WALDEN_BINARY]
#
# Needs pgbench, psql, initdb/pg_ctl (postgresql-15) and python3 (bench/lib.sh).
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "$0")/lib.sh"
parallel=1
args=()
for a in "$@"; do
  if [[ $a == --no-parallel ]]; then parallel=0; else args+=("$a"); fi
done
rows=2000000
bench_args "${args[@]}"
bench_start scan-speed
if [[ $parallel == 0 ]]; then
  pg_psql -d walden -c "ALTER DATABASE walden SET max_parallel_workers_per_gather = 0" >/dev/null
fi

bench_load "CREATE TABLE a (aid int PRIMARY KEY, bid int NOT NULL, abalance int NOT NULL, filler char(84));
            INSERT INTO a SELECT g, (g - 1) / 100000 + 1, (g::bigint * 7919 % 10001)::int - 5000, '' FROM generate_series(1, $rows) g"

declare -A q=(
  [count]="SELECT count(*) FROM a"
  [sum]="SELECT sum(abalance) FROM a"
  [group]="SELECT bid, sum(abalance), count(*) FROM a GROUP BY bid"
  [filter]="SELECT count(*) FROM a WHERE abalance BETWEEN 100 AND 200"
  [top10]="SELECT aid FROM a ORDER BY abalance DESC, aid LIMIT 10"
)
names=(count sum group filter top10)
for n in "${names[@]}"; do echo "${q[$n]};" >"$scratch/$n.sql"; done
# Same answers on both sides, or the timing means nothing.
for n in "${names[@]}"; do
  wa=$(w_psql -d walden -At -c "${q[$n]}" | sort | md5sum)
  pa=$(pg_psql -d walden -At -c "${q[$n]}" | sort | md5sum)
  [[ $wa == "$pa" ]] || { echo "answers differ for $n" >&2; exit 1; }
done

echo "# $(walden_identity .)" >&2
: >"$scratch/results"
for round in $(seq 1 "$rounds"); do
  for n in "${names[@]}"; do
    for side in walden postgres; do
      if [[ $side == walden ]]; then conn=("${W[@]}"); else conn=("${P[@]}"); fi
      read -r tps lat <<<"$(bench_case "$scratch/$n.sql" "${conn[@]}")"
      echo "$round|$n|$side|$lat" | tee -a "$scratch/results"
    done
  done
done
python3 - "$scratch/results" "$rows" "$parallel" <<'PY'
import statistics, sys
lat = {}
for line in open(sys.argv[1]):
    _, n, side, l = line.strip().split("|")
    lat.setdefault((n, side), []).append(float(l))
par = "with its default parallel workers" if sys.argv[3] == "1" else "without parallel workers"
print(f"\n{sys.argv[2]} rows, one client; mean latency per query, median over rounds (PostgreSQL {par})")
print(f"  {'query':8} {'walden ms':>10} {'postgres ms':>12} {'walden/pg':>10}")
for n in dict.fromkeys(k[0] for k in lat):
    w, p = statistics.median(lat[(n, "walden")]), statistics.median(lat[(n, "postgres")])
    print(f"  {n:8} {w:10.1f} {p:12.1f} {w / p:10.2f}")
PY
