#!/usr/bin/env bash
# The four statement shapes TPC-C spends its time in, each timed alone in
# Walden and in a scratch PostgreSQL 15 side by side, on a TPC-C-like schema
# of W warehouses (10 districts each, O orders per district with 5-15 lines,
# 3,000 customers per district, 100,000 stock rows per warehouse, the last
# 30 % of orders in new_orders). pgbench, one client, S seconds per case,
# random keys; the cases interleaved round by round:
#
#   ol-by-3-keys   SELECT sum(ol_amount) FROM order_line
#                  WHERE ol_o_id = :o AND ol_d_id = :d AND ol_w_id = :w
#                  (3 of order_line's 4 key columns: order-status, delivery)
#   stock-level    count(DISTINCT s_i_id) over order_line of 20 orders joined
#                  to stock on (s_w_id, s_i_id)
#   new-order-cw   customer, warehouse joined on c_w_id = w_id AND w_id = :w
#   delivery-lock  BEGIN; SELECT no_o_id FROM new_orders WHERE no_d_id = :d
#                  AND no_w_id = :w ORDER BY no_o_id LIMIT 1 FOR UPDATE; ROLLBACK
#
# Before timing, each shape's answer is compared between the servers for a
# few keys. Prints the mean latency per case (medians over rounds) and the
# Walden / PostgreSQL ratio.
#
#   bash bench/tpcc-shapes.sh [--warehouses W] [--orders O] [--seconds S]
#                             [--rounds R] [WALDEN_BINARY]
#
# Needs pgbench, psql, initdb/pg_ctl (postgresql-15) and python3 (bench/lib.sh).
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "$0")/lib.sh"
warehouses=2 orders=3000
args=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --warehouses) warehouses=$2; shift 2 ;;
    --orders) orders=$2; shift 2 ;;
    *) args+=("$1"); shift ;;
  esac
done
bench_args "${args[@]}"
bench_start tpcc-shapes

W_=$warehouses O_=$orders
first_new=$((O_ * 7 / 10 + 1))
load="CREATE TABLE warehouse (w_id int PRIMARY KEY, w_name varchar(10), w_tax numeric(4,4), w_ytd numeric(12,2));
INSERT INTO warehouse SELECT w, 'w' || w, (w % 10) / 100.0, 300000 FROM generate_series(1, $W_) w;
CREATE TABLE customer (c_w_id int, c_d_id int, c_id int, c_last varchar(16), c_credit char(2),
  c_discount numeric(4,4), c_balance numeric(12,2), c_data varchar(200), PRIMARY KEY (c_w_id, c_d_id, c_id));
INSERT INTO customer SELECT w, d, c, 'LAST' || (c % 1000), CASE WHEN c % 10 = 0 THEN 'BC' ELSE 'GC' END,
  (c % 50) / 100.0, -10, repeat('x', 100)
  FROM generate_series(1, $W_) w, generate_series(1, 10) d, generate_series(1, 3000) c;
CREATE TABLE stock (s_w_id int, s_i_id int, s_quantity int, s_data varchar(50), PRIMARY KEY (s_w_id, s_i_id));
INSERT INTO stock SELECT w, i, 10 + (i * 7 + w) % 91, repeat('s', 40)
  FROM generate_series(1, $W_) w, generate_series(1, 100000) i;
CREATE TABLE order_line (ol_w_id int, ol_d_id int, ol_o_id int, ol_number int, ol_i_id int,
  ol_delivery_d timestamp, ol_amount numeric(6,2), ol_quantity int, ol_dist_info char(24),
  PRIMARY KEY (ol_w_id, ol_d_id, ol_o_id, ol_number));
INSERT INTO order_line SELECT w, d, o, n, 1 + (o * 7919 + n * 104729 + d * 31) % 100000, NULL,
  ((o * n) % 9999) / 100.0, 5, 'dist-info-xxxxxxxxxxxxxx'
  FROM generate_series(1, $W_) w, generate_series(1, 10) d, generate_series(1, $O_) o,
  generate_series(1, 15) n WHERE n <= 5 + (o * 13 + d) % 11;
CREATE TABLE new_orders (no_w_id int, no_d_id int, no_o_id int, PRIMARY KEY (no_w_id, no_d_id, no_o_id));
INSERT INTO new_orders SELECT w, d, o FROM generate_series(1, $W_) w, generate_series(1, 10) d,
  generate_series($first_new, $O_) o;"
bench_load "$load"

cat >"$scratch/ol-by-3-keys.sql" <<EOF
\\set w random(1, $W_)
\\set d random(1, 10)
\\set o random(1, $O_)
SELECT sum(ol_amount) FROM order_line WHERE ol_o_id = :o AND ol_d_id = :d AND ol_w_id = :w;
EOF
cat >"$scratch/stock-level.sql" <<EOF
\\set w random(1, $W_)
\\set d random(1, 10)
\\set o random(21, $O_)
\\set t random(10, 20)
SELECT count(DISTINCT s_i_id) FROM order_line, stock WHERE ol_w_id = :w AND ol_d_id = :d
  AND ol_o_id < :o AND ol_o_id >= :o - 20 AND s_w_id = :w AND s_i_id = ol_i_id AND s_quantity < :t;
EOF
cat >"$scratch/new-order-cw.sql" <<EOF
\\set w random(1, $W_)
\\set d random(1, 10)
\\set c random(1, 3000)
SELECT c_discount, c_last, c_credit, w_tax FROM customer, warehouse
  WHERE w_id = :w AND c_w_id = w_id AND c_d_id = :d AND c_id = :c;
EOF
cat >"$scratch/delivery-lock.sql" <<EOF
\\set w random(1, $W_)
\\set d random(1, 10)
BEGIN;
SELECT no_o_id FROM new_orders WHERE no_d_id = :d AND no_w_id = :w ORDER BY no_o_id ASC LIMIT 1 FOR UPDATE;
ROLLBACK;
EOF

# Both servers give the same answers (a few fixed keys per shape).
check=(
  "SELECT sum(ol_amount), count(*) FROM order_line WHERE ol_o_id = 17 AND ol_d_id = 3 AND ol_w_id = 1"
  "SELECT count(DISTINCT s_i_id) FROM order_line, stock WHERE ol_w_id = $W_ AND ol_d_id = 7 AND ol_o_id < 400 AND ol_o_id >= 380 AND s_w_id = $W_ AND s_i_id = ol_i_id AND s_quantity < 15"
  "SELECT c_discount, c_last, c_credit, w_tax FROM customer, warehouse WHERE w_id = 1 AND c_w_id = w_id AND c_d_id = 5 AND c_id = 1234"
  "SELECT no_o_id FROM new_orders WHERE no_d_id = 4 AND no_w_id = $W_ ORDER BY no_o_id ASC LIMIT 1 FOR UPDATE"
)
for q in "${check[@]}"; do
  want=$(psql "${P[@]}" -qAtc "$q" walden)
  got=$(psql "${W[@]}" -qAtc "$q" walden)
  [ "$got" = "$want" ] || { echo "answers differ for: $q"$'\n'"walden: $got"$'\n'"postgres: $want" >&2; exit 1; }
done

: >"$scratch/results"
for round in $(seq 1 "$rounds"); do
  for q in ol-by-3-keys stock-level new-order-cw delivery-lock; do
    for side in walden postgres; do
      if [ "$side" = walden ]; then conn=("${W[@]}"); else conn=("${P[@]}"); fi
      figures=$(bench_case "$scratch/$q.sql" "${conn[@]}")
      read -r _ lat <<<"$figures"
      echo "$round|$side|$q|$lat" | tee -a "$scratch/results"
    done
  done
done
python3 - "$scratch/results" "$W_" "$O_" <<'EOF'
import statistics, sys
lat = {}
for line in open(sys.argv[1]):
    _, side, q, ms = line.strip().split("|")
    lat.setdefault((side, q), []).append(float(ms))
print(f"\n{sys.argv[2]} warehouses, {sys.argv[3]} orders per district; mean latency, ms (median over rounds)")
print(f"  {'statement':15} {'walden':>10} {'postgres':>10} {'ratio':>8}")
for q in ["ol-by-3-keys", "stock-level", "new-order-cw", "delivery-lock"]:
    w = statistics.median(lat[("walden", q)])
    p = statistics.median(lat[("postgres", q)])
    print(f"  {q:15} {w:10.3f} {p:10.3f} {w / p:8.2f}")
EOF
