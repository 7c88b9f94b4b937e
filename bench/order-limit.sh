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
# Needs pgbench, psql, initdb/pg_ctl (postgresql-15) and python3.
set -euo pipefail
rows=200000 seconds=10 rounds=2 bin=target/release/walden
while [ $# -gt 0 ]; do
  case "$1" in
    --rows) rows=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    -h|--help) sed -n 2,16p "$0"; exit 0 ;;
    *) bin=$1; shift ;;
  esac
done
pgbin=$(ls -d /usr/lib/postgresql/15/bin 2>/dev/null || dirname "$(command -v pg_ctl)")
for t in pgbench psql python3 "$pgbin/initdb" "$pgbin/pg_ctl" "$bin"; do
  command -v "$t" >/dev/null || [ -x "$t" ] || { echo "$t is required" >&2; exit 3; }
done
scratch=$(mktemp -d "${TMPDIR:-/tmp}/order-limit.XXXXXX")
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

# 7919 is prime and shares no factor with a round N: k is a permutation of
# 0..N-1, so every ORDER BY here has one answer.
load="CREATE TABLE t (id int PRIMARY KEY, k int NOT NULL, filler text);
      INSERT INTO t SELECT g, (g * 7919) % $rows, 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx' FROM generate_series(1, $rows) g;
      CREATE INDEX t_k ON t (k);"
psql "${W[@]}" -qc "$load" walden >/dev/null
psql "${P[@]}" -qc "$load; ANALYZE" walden >/dev/null
psql "${W[@]}" -qAtc "CHECKPOINT" walden >/dev/null

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
      out=$(pgbench "${conn[@]}" -n -c 1 -T "$seconds" -f "$scratch/$q.sql" walden 2>&1)
      lat=$(sed -n 's/^latency average = \([0-9.]*\) ms/\1/p' <<<"$out")
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
