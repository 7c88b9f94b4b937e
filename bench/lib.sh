# shellcheck shell=bash disable=SC2154,SC2034
# Side-by-side latency benches (sourced by order-limit.sh and index-lookup.sh):
# their common options, a scratch Walden and a scratch PostgreSQL 15 (started
# through bench/servers.sh) holding the same rows, and one pgbench case.
#
#   bench_args "$@"   [--rows N] [--seconds S] [--rounds R] [WALDEN_BINARY] into
#                     rows seconds rounds walden_bin; --help prints the calling
#                     script's header comment
#   bench_start NAME  both servers in a scratch directory (removed at exit), and
#                     W / P: the psql and pgbench connection options of each
#   bench_load SQL    SQL in both; PostgreSQL then analyzes, Walden checkpoints
#   bench_case FILE CONN...   pgbench, one client, $seconds seconds, against the
#                     database walden: prints "TPS LATENCY_MS"
#
# Needs pgbench, psql, initdb/pg_ctl (postgresql-15) and python3. Environment:
# PG_BIN, BENCH_USER as in bench/pgbench-compare.sh.

bench_here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=bench/servers.sh
source "$bench_here/servers.sh"

rows=200000 seconds=10 rounds=2 walden_bin=target/release/walden
pg_bin="${PG_BIN:-/usr/lib/postgresql/15/bin}"
bench_user="${BENCH_USER:-walden-bench}"

bench_args() {
    while [[ $# -gt 0 ]]; do
        case "$1" in
            --rows) rows=$2; shift 2 ;;
            --seconds) seconds=$2; shift 2 ;;
            --rounds) rounds=$2; shift 2 ;;
            -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
            *) walden_bin=$1; shift ;;
        esac
    done
}

bench_start() {
    srv_require pgbench
    scratch=$(mktemp -d "${TMPDIR:-/tmp}/$1.XXXXXX")
    chmod 755 "$scratch"
    trap 'srv_cleanup; rm -rf "$scratch"' EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    srv_init
    walden_start ""
    pg_create ""
    W=(-h 127.0.0.1 -p "$w_port" -U walden)
    P=(-h 127.0.0.1 -p "$pg_port" -U "$pg_user")
}

bench_load() {
    w_psql -d walden -c "$1" >/dev/null
    pg_psql -d walden -c "$1; ANALYZE" >/dev/null
    w_psql -d walden -c "CHECKPOINT" >/dev/null
}

bench_case() {
    local file=$1 out tps lat
    shift
    out=$(pgbench "$@" -n -c 1 -T "$seconds" -f "$file" walden 2>&1) || { echo "$out" >&2; return 1; }
    tps=$(sed -n 's/^tps = \([0-9.]*\).*/\1/p' <<<"$out")
    lat=$(sed -n 's/^latency average = \([0-9.]*\) ms/\1/p' <<<"$out")
    echo "$tps $lat"
}
