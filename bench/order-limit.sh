#!/usr/bin/env bash
# ORDER BY ... LIMIT through an index walk against a full sort, in Walden and
# in a scratch PostgreSQL 15, side by side. A table of N rows (id primary
# key, k a distinct integer with an index, a 30-byte filler); pgbench, one
# client, S seconds per case, the cases interleaved round by round:
#
#   walk    SELECT id, k FROM t ORDER BY k DESC LIMIT 10     (index on k)
#           SELECT id, k FROM t ORDER BY id DESC LIMIT 10    (primary key)
#   sort    the same with `k + 0` / `id + 0`: an expression no index orders,
#           so both servers read every row and keep the top 10.
#
# Prints the mean latency per case (medians over rounds) and the ratios.
#
#   bash bench/order-limit.sh [--rows N] [--seconds S] [--rounds R] [WALDEN_BINARY]
#
# Needs pgbench, psql, initdb/pg_ctl (postgresql-15) and python3 (bench/lib.sh).
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "$0")/lib.sh"
bench_args "$@"
bench_start order-limit

# 7919 is prime and shares no factor with a round N: k is a permutation of
# 0..N-1, so every ORDER BY here has one answer.
load="CREATE TABLE t (id int PRIMARY KEY, k int NOT NULL, filler text);
      INSERT INTO t SELECT g, (g * 7919) % $rows, 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx' FROM generate_series(1, $rows) g;
      CREATE INDEX t_k ON t (k);"
bench_load "$load"

declare -A sql=(
  [k-walk]="SELECT id, k FROM t ORDER BY k DESC LIMIT 10"
  [k-sort]="SELECT id, k FROM t ORDER BY k + 0 DESC LIMIT 10"
  [id-walk]="SELECT id, k FROM t ORDER BY id DESC LIMIT 10"
  [id-sort]="SELECT id, k FROM t ORDER BY id + 0 DESC LIMIT 10"
)
for q in "${!sql[@]}"; do printf '%s;\n' "${sql[$q]}" >"$scratch/$q.sql"; done
# The walk and the sort give the same rows, in both servers.
for col in k id; do
  want=$(psql "${P[@]}" -qAtc "${sql[$col-sort]}" walden)
  for side in W P; do
    if [ "$side" = W ]; then conn=("${W[@]}"); else conn=("${P[@]}"); fi
    for how in walk sort; do
      got=$(psql "${conn[@]}" -qAtc "${sql[$col-$how]}" walden)
      [ "$got" = "$want" ] || { echo "$side $col-$how differs:"$'\n'"$got"$'\n'"want:"$'\n'"$want" >&2; exit 1; }
    done
  done
done

: >"$scratch/results"
for round in $(seq 1 "$rounds"); do
  for side in walden postgres; do
    if [ "$side" = walden ]; then conn=("${W[@]}"); else conn=("${P[@]}"); fi
    for q in k-walk k-sort id-walk id-sort; do
      figures=$(bench_case "$scratch/$q.sql" "${conn[@]}")
      read -r _ lat <<<"$figures"
      echo "$round|$side|$q|$lat" | tee -a "$scratch/results"
    done
  done
done
python3 - "$scratch/results" "$rows" <<'EOF'
import statistics, sys
by = {}
for line in open(sys.argv[1]):
    _, side, q, lat = line.strip().split("|")
    by.setdefault((side, q), []).append(float(lat))
med = {k: statistics.median(v) for k, v in by.items()}
print(f"\n{int(sys.argv[2]):,} rows, one client, mean latency (medians over rounds)\n")
print("| query | Walden walk | Walden sort (`+ 0`) | PostgreSQL 15 index | PostgreSQL 15 sort (`+ 0`) |")
print("| --- | --- | --- | --- | --- |")
for col in ("k", "id"):
    cells = [f"{med[(s, f'{col}-{h}')]:.3f} ms" for s in ("walden", "postgres") for h in ("walk", "sort")]
    print(f"| `ORDER BY {col} DESC LIMIT 10` | " + " | ".join(cells) + " |")
for col in ("k", "id"):
    w, ws, p = med[("walden", f"{col}-walk")], med[("walden", f"{col}-sort")], med[("postgres", f"{col}-walk")]
    print(f"{col}: walk is {ws / w:.0f}x faster than the sort; Walden walk / PostgreSQL index latency: {w / p:.2f}")
EOF
