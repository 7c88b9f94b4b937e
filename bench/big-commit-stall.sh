#!/usr/bin/env bash
# How long one large commit holds up everyone else's: a client updating one
# row in a loop (pgbench, 1 client, every transaction logged) while another
# session commits ROWS new rows in one transaction, three ways: into a table
# created in the same transaction, into an existing empty table, and into a
# table already holding ROWS rows. For each, the big COMMIT's own time and
# the longest transaction of the looping client that ended during it (or
# within 0.2 s after). Binaries are taken in turn ROUNDS times (the disk
# changes speed: interleave).
#
#   bash bench/big-commit-stall.sh [--rows N] [--rounds R] [--loop-seconds S] BINARY ...
#
# The looping client runs S seconds (default 75), which must outlast the
# three loads and commits.
#
# Needs pgbench, psql, python3 with psycopg.
set -euo pipefail
rows=1000000 rounds=1 bins=() loop_s=75
while [ $# -gt 0 ]; do
  case "$1" in
    --rows) rows=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --loop-seconds) loop_s=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 0 ;;
    *) bins+=("$1"); shift ;;
  esac
done
[ ${#bins[@]} -gt 0 ] || bins=(target/release/walden)
for t in pgbench psql python3 "${bins[@]}"; do
  command -v "$t" >/dev/null || [ -x "$t" ] || { echo "$t is required" >&2; exit 3; }
done
python3 -c 'import psycopg' || { echo "python3 with psycopg is required" >&2; exit 3; }
scratch=$(mktemp -d "${TMPDIR:-/tmp}/big-commit.XXXXXX")
server="" loop=""
cleanup() {
  [ -n "$loop" ] && kill "$loop" 2>/dev/null
  [ -n "$server" ] && kill "$server" 2>/dev/null
  wait 2>/dev/null; rm -rf "$scratch"
}
trap cleanup EXIT INT TERM
echo "update u set v = v + 1 where id = 1;" > "$scratch/upd.sql"
printf '%-8s %-28s %-36s %10s %14s\n' round binary case "commit ms" "others' max ms"
for r in $(seq "$rounds"); do
  for bin in "${bins[@]}"; do
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    rm -rf "$scratch/data" "$scratch"/pgbench_log.*
    "$bin" serve --data-dir "$scratch/data" --listen "127.0.0.1:$port" >"$scratch/log" 2>&1 &
    server=$!
    P=(-h 127.0.0.1 -p "$port" -U walden)
    for _ in $(seq 100); do psql "${P[@]}" -X -q -d walden -Atc 'select 1' >/dev/null 2>&1 && break; sleep 0.1; done
    psql "${P[@]}" -X -q -d walden -v ON_ERROR_STOP=1 \
      -c "CREATE TABLE u (id int PRIMARY KEY, v int)" -c "INSERT INTO u VALUES (1, 0)" \
      -c "CREATE TABLE empty_t (id int, v text)" -c "CREATE TABLE full_t (id int, v text)" \
      -c "INSERT INTO full_t SELECT g, repeat(md5(g::text), 3) FROM generate_series(1, $rows) g" \
      -c "CHECKPOINT"
    (cd "$scratch" && exec pgbench "${P[@]}" -n -c 1 -T "$loop_s" -f upd.sql -l walden >"$scratch/loop.out" 2>&1) &
    loop=$!
    sleep 2
    python3 - "$port" "$rows" >"$scratch/cases" <<'EOF'
import sys, time, psycopg
port, rows = sys.argv[1], int(sys.argv[2])
ins = "INSERT INTO {} SELECT g, repeat(md5(g::text), 3) FROM generate_series(%s, %s) g"
with psycopg.connect(f"host=127.0.0.1 port={port} user=walden dbname=walden") as c:
    for case, pre, table, lo in [
        ("new table in the transaction", "CREATE TABLE new_t (id int, v text)", "new_t", 1),
        ("existing empty table", None, "empty_t", 1),
        (f"table holding {rows:,} rows", None, "full_t", rows + 1),
    ]:
        if pre:
            c.execute(pre)
        c.execute(ins.format(table), (lo, lo + rows - 1))
        t0 = time.time()
        c.commit()
        t1 = time.time()
        print(f"{case}\t{t0}\t{t1}", flush=True)
        time.sleep(2)
EOF
    # pgbench writes its log only when it ends on its own.
    wait "$loop" 2>/dev/null || true; loop=""
    while IFS=$'\t' read -r name t0 t1; do
      worst=$(cat "$scratch"/pgbench_log.* | awk -v a="$t0" -v b="$t1" \
        '{e = $5 + $6 / 1e6} e >= a && e <= b + 0.2 && $3 > m {m = $3} END {printf "%.1f", m / 1000}')
      printf '%-8s %-28s %-36s %10.0f %14s\n' "$r" "$(basename "$bin")" "$name" \
        "$(python3 -c "print(($t1 - $t0) * 1000)")" "$worst"
    done <"$scratch/cases"
    kill "$server"; wait "$server" 2>/dev/null || true; server=""
  done
done
