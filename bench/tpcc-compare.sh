#!/usr/bin/env bash
# TPC-C on Walden and on PostgreSQL 15 side by side: Percona-Lab's
# sysbench-tpcc scripts (not in this repository: clone
# https://github.com/Percona-Lab/sysbench-tpcc, the issue's figures used
# commit 585e2b8, unmodified) run by sysbench's pgsql driver against a
# scratch Walden and a scratch PostgreSQL holding the same load:
# `--tables=1 --use_fk=1`, prepared by sysbench on each server.
#
# Cells: each scale x durability mode (durable: PostgreSQL
# synchronous_commit=on, Walden DELAYED_DURABILITY=DISABLED; delayed:
# synchronous_commit=off, FORCED) x isolation level (RR, RC, SER) x
# threads, for each round Walden then PostgreSQL (rounds alternate who goes
# first). Per run: new-orders committed per second (from district's
# d_next_o_id before and after), all transactions per second and the errors
# sysbench ignored per second (40001 / 40P01, rolled back and retried, and
# the 1 % of new-orders TPC-C rolls back on purpose, which the scripts count
# as errors too).
# Printed: the medians over rounds and Walden / PostgreSQL. After each
# scale's cells, sysbench-tpcc's consistency checks (tpcc_check.lua: the
# TPC-C consistency conditions as SQL) on both; a FAILED check fails the
# script.
#
#   bash bench/tpcc-compare.sh LUA_DIR [--scales "2 10"] [--threads "1 8"]
#        [--levels "RR RC"] [--modes "durable delayed"] [--seconds 60]
#        [--rounds 3] [--keep] [WALDEN_BINARY]
#
# Needs sysbench (apt-get install -y sysbench), psql, initdb/pg_ctl
# (postgresql-15) and python3. Environment: PG_BIN, BENCH_USER as in
# bench/pgbench-compare.sh. Loads are long: scale 10 is about 1 GB per server.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
scales="2" threads="1 8" levels="RR RC" modes="durable delayed" seconds=60 rounds=3 keep=0
walden_bin=target/release/walden lua_dir=""
pg_bin="${PG_BIN:-/usr/lib/postgresql/15/bin}"
bench_user="${BENCH_USER:-walden-bench}"
while [[ $# -gt 0 ]]; do
    case "$1" in
        --scales) scales=$2; shift 2 ;;
        --threads) threads=$2; shift 2 ;;
        --levels) levels=$2; shift 2 ;;
        --modes) modes=$2; shift 2 ;;
        --seconds) seconds=$2; shift 2 ;;
        --rounds) rounds=$2; shift 2 ;;
        --keep) keep=1; shift ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) if [[ -z "$lua_dir" ]]; then lua_dir=$1; else walden_bin=$1; fi; shift ;;
    esac
done
[[ -n "$lua_dir" && -f "$lua_dir/tpcc.lua" ]] || { echo "usage: $0 LUA_DIR (a sysbench-tpcc checkout) ..." >&2; exit 2; }
lua_dir="$(cd "$lua_dir" && pwd)"
# shellcheck source=bench/servers.sh
source "$here/servers.sh"
srv_require sysbench
scratch=$(mktemp -d "${TMPDIR:-/tmp}/tpcc-compare.XXXXXX")
chmod 755 "$scratch"
trap 'srv_cleanup; [[ $keep -eq 1 ]] || rm -rf "$scratch"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
srv_init
walden_start ""
pg_create ""

# sysbench against one server: tpcc_sb SERVER COMMAND [OPTIONS...]
tpcc_sb() {
    local server=$1 cmd=$2 port user
    shift 2
    if [[ $server == walden ]]; then port=$w_port user=walden; else port=$pg_port user=$pg_user; fi
    (cd "$lua_dir" && sysbench tpcc.lua --db-driver=pgsql --pgsql-host=127.0.0.1 \
        --pgsql-port="$port" --pgsql-user="$user" --pgsql-db=walden --tables=1 --use_fk=1 "$@" "$cmd")
}

on() { if [[ $1 == walden ]]; then shift; w_psql -d walden "$@"; else shift; pg_psql -d walden "$@"; fi; }

set_mode() {
    local server=$1 mode=$2
    if [[ $server == walden ]]; then
        local v=DISABLED
        [[ $mode == delayed ]] && v=FORCED
        w_psql -d walden -c "ALTER DATABASE walden SET DELAYED_DURABILITY = $v" >/dev/null
    else
        local v=on
        [[ $mode == delayed ]] && v=off
        pg_psql -d postgres -c "ALTER SYSTEM SET synchronous_commit = $v" -c "SELECT pg_reload_conf()" >/dev/null
    fi
}

results="$scratch/results"
: >"$results"
for scale in $scales; do
    for server in walden postgres; do
        srv_log "$server: loading scale $scale"
        tpcc_sb "$server" cleanup --scale="$scale" >/dev/null 2>&1 || true
        tpcc_sb "$server" prepare --scale="$scale" --threads=2 >"$scratch/prepare-$server-$scale.log" 2>&1 \
            || { tail -20 "$scratch/prepare-$server-$scale.log" >&2; exit 1; }
        # A loader thread's FATAL does not always reach sysbench's exit code.
        if grep -q FATAL "$scratch/prepare-$server-$scale.log"; then
            grep -m 3 FATAL "$scratch/prepare-$server-$scale.log" | cut -c1-300 >&2
            exit 1
        fi
    done
    on postgres -c "VACUUM ANALYZE" >/dev/null
    on walden -c "CHECKPOINT" >/dev/null
    for mode in $modes; do
        set_mode walden "$mode"
        set_mode postgres "$mode"
        for level in $levels; do
            for t in $threads; do
                for round in $(seq 1 "$rounds"); do
                    order=(walden postgres)
                    (( round % 2 == 0 )) && order=(postgres walden)
                    for server in "${order[@]}"; do
                        q="SELECT sum(d_next_o_id) FROM district1"
                        before=$(on "$server" -At -c "$q")
                        out="$scratch/run-$server-$scale-$mode-$level-$t-$round.log"
                        tpcc_sb "$server" run --scale="$scale" --threads="$t" --time="$seconds" \
                            --trx_level="$level" --report-interval=0 >"$out" 2>&1 \
                            || { tail -20 "$out" >&2; exit 1; }
                        after=$(on "$server" -At -c "$q")
                        tps=$(sed -n 's/^ *transactions: *[0-9]* *(\([0-9.]*\) per sec.)/\1/p' "$out")
                        errs=$(sed -n 's/^ *ignored errors: *[0-9]* *(\([0-9.]*\) per sec.)/\1/p' "$out")
                        no=$(python3 -c "print(round(($after - $before) / $seconds, 2))")
                        echo "$scale|$mode|$level|$t|$round|$server|$no|$tps|$errs" | tee -a "$results"
                    done
                done
            done
        done
    done
    for server in walden postgres; do
        tpcc_sb "$server" check --scale="$scale" >"$scratch/check-$server-$scale.log" 2>&1 || true
        passed=$(grep -c PASSED "$scratch/check-$server-$scale.log" || true)
        failed=$(grep -E "FAILED|FATAL|ERROR" "$scratch/check-$server-$scale.log" || true)
        echo "scale $scale, $server: $passed consistency checks passed" >&2
        [[ -z "$failed" ]] || { echo "$server: $failed" >&2; exit 1; }
    done
done

python3 - "$results" <<'EOF'
import statistics, sys
cells = {}
for line in open(sys.argv[1]):
    scale, mode, level, t, _, server, no, tps, errs = line.strip().split("|")
    cells.setdefault((scale, mode, level, t), {}).setdefault(server, []).append(
        (float(no), float(tps or 0), float(errs or 0)))
print("\nmedians over rounds; new-orders/s, transactions/s, ignored errors/s")
print(f"{'scale':>5} {'mode':8} {'level':5} {'thr':>3} | {'walden no/s':>11} {'tps':>8} {'err/s':>6} | "
      f"{'pg no/s':>8} {'tps':>8} {'err/s':>6} | {'no ratio':>8}")
for (scale, mode, level, t), by in cells.items():
    w = [statistics.median(x) for x in zip(*by["walden"])]
    p = [statistics.median(x) for x in zip(*by["postgres"])]
    ratio = w[0] / p[0] if p[0] else float("nan")
    print(f"{scale:>5} {mode:8} {level:5} {t:>3} | {w[0]:11.2f} {w[1]:8.2f} {w[2]:6.2f} | "
          f"{p[0]:8.2f} {p[1]:8.2f} {p[2]:6.2f} | {ratio:8.2f}")
EOF
