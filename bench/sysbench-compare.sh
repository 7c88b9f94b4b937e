#!/usr/bin/env bash
# Walden vs PostgreSQL 15 under sysbench's OLTP scripts, interleaved in one run.
#
# Starts a scratch PostgreSQL 15 and a scratch Walden (bench/servers.sh), prepares
# sysbench's schema on both (sbtest1..N: id SERIAL PRIMARY KEY, k INTEGER with the
# secondary index k_1, c CHAR(120), pad CHAR(60); `sysbench oltp_common prepare`),
# then runs oltp_point_select, oltp_read_only and oltp_write_only at 1 and 16
# threads against each, Walden then PostgreSQL cell by cell (PostgreSQL first in
# even rounds), so the disk's fast and slow states fall on both. sysbench uses
# server-side prepared statements (its pgsql driver: Parse once, Bind/Execute per
# query) and explicit BEGIN/COMMIT around each transaction.
#
# Durability: "durable" is Walden with ALTER DATABASE ... SET DELAYED_DURABILITY =
# DISABLED (every commit flushed before it is acknowledged) against PostgreSQL with
# synchronous_commit=on, fsync=on, wal_sync_method=fdatasync. --delayed adds the
# relaxed pair: Walden FORCED against PostgreSQL synchronous_commit=off (PGOPTIONS).
# oltp_write_only's random updates and DELETE/INSERT pairs deadlock now and then at
# 16 threads; sysbench counts those (40P01) as "ignored errors" and retries. PostgreSQL
# finds a deadlock after deadlock_timeout (1 s, its default, kept), Walden at once.
#
# Usage: bench/sysbench-compare.sh [options]
#   --seconds N        length of each cell (sysbench --time), default 20
#   --rounds N         rounds of the whole set, default 2 (medians over rounds)
#   --quick            smoke run: 3 s cells, 1 round, 10,000 rows
#   --table-size N     rows per table, default 100000
#   --tables N         tables, default 1
#   --threads "L"      thread counts, default "1 16"
#   --tests "L"        default "oltp_point_select oltp_read_only oltp_write_only"
#   --delayed          also run the delayed-durability pair
#   --json FILE        write every figure as JSON
#   --dir DIR          scratch parent (default ./target: the disk being measured)
#   --walden BIN       default ./target/release/walden
#   --before BIN       a second Walden binary (e.g. main before a change), run in
#                      every pair too (Walden, before, PostgreSQL, rotated by round)
#   --keep             keep the scratch directory (server logs, sysbench outputs)
# Environment: PG_BIN (default /usr/lib/postgresql/15/bin), BENCH_USER (initdb's
# user when run as root, default walden-bench). Exit status 3: a tool is missing
# (sysbench: apt-get install -y sysbench).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"

seconds=20 rounds=2 table_size=100000 tables=1 json="" delayed=0 keep=0 before_bin=""
threads_list="1 16"
tests_list="oltp_point_select oltp_read_only oltp_write_only"
base_dir="$repo/target"
walden_bin="$repo/target/release/walden"
pg_bin="${PG_BIN:-/usr/lib/postgresql/15/bin}"
bench_user="${BENCH_USER:-walden-bench}"
orig_cmd="bench/sysbench-compare.sh${*:+ $*}"

usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d' | sed 's/^# \{0,1\}//'; }
while [[ $# -gt 0 ]]; do
    case "$1" in
        --seconds) seconds="$2"; shift 2 ;;
        --rounds) rounds="$2"; shift 2 ;;
        --quick) seconds=3; rounds=1; table_size=10000; shift ;;
        --table-size) table_size="$2"; shift 2 ;;
        --tables) tables="$2"; shift 2 ;;
        --threads) threads_list="$2"; shift 2 ;;
        --tests) tests_list="$2"; shift 2 ;;
        --delayed) delayed=1; shift ;;
        --json) json="$2"; shift 2 ;;
        --dir) base_dir="$2"; shift 2 ;;
        --walden) walden_bin="$2"; shift 2 ;;
        --before) before_bin="$2"; shift 2 ;;
        --keep) keep=1; shift ;;
        -h|--help) usage; exit 0 ;;
        *) echo "unknown argument: $1 (see --help)" >&2; exit 2 ;;
    esac
done
for v in "$seconds" "$rounds" "$table_size" "$tables"; do
    [[ "$v" =~ ^[0-9]+$ ]] || { echo "--seconds, --rounds, --table-size and --tables take integers" >&2; exit 2; }
done

# shellcheck source=bench/servers.sh
source "$here/servers.sh"
srv_require sysbench dd
log() { srv_log "$@"; }
die() { echo "sysbench-compare: $*" >&2; exit 1; }

[[ -z "$before_bin" || -x "$before_bin" ]] || die "no Walden binary at $before_bin"
mkdir -p "$base_dir"
scratch="$(mktemp -d "$base_dir/sysbench-compare.XXXXXX")"
chmod 755 "$scratch"
cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    srv_cleanup
    if [[ -n "$before_pid" ]]; then
        kill -TERM "$before_pid" 2>/dev/null
        wait "$before_pid" 2>/dev/null
    fi
    if [[ $keep -eq 1 ]]; then echo "scratch kept in $scratch" >&2; else rm -rf "$scratch"; fi
    exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

srv_init
log "initdb ($pg_user) and start PostgreSQL on 127.0.0.1:$pg_port"
pg_create "shared_buffers = 256MB" || die "PostgreSQL did not start"
pg_version="$(pg_psql -d walden -At -c "SELECT current_setting('server_version')")"
walden_start "" || die "walden serve did not start"
walden_info="$(walden_identity "$repo")"
log "PostgreSQL $pg_version (pid $pm_pid); Walden $walden_info on 127.0.0.1:$w_port (pid $walden_pid)"

# The "before" binary: its own data directory and port.
before_pid="" b_port="" before_info=""
servers=(walden pg)
if [[ -n "$before_bin" ]]; then
    b_port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
    mkdir -p "$scratch/before"
    "$before_bin" serve --data-dir "$scratch/before/data" --listen "127.0.0.1:$b_port" \
        >"$scratch/before/stdout.log" 2>"$scratch/before/stderr.log" &
    before_pid=$!
    for ((i = 0; i < 600; i++)); do
        psql -X -h 127.0.0.1 -p "$b_port" -U walden -d walden -Atc 'SELECT 1' >/dev/null 2>&1 && break
        kill -0 "$before_pid" 2>/dev/null || die "the before binary exited: $(tail -3 "$scratch/before/stderr.log")"
        sleep 0.1
    done
    before_info="$before_bin, built $(stat -c '%y' "$before_bin" | cut -d. -f1), sha256 $(sha256sum "$before_bin" | cut -c1-12)"
    log "before: $before_info on 127.0.0.1:$b_port (pid $before_pid)"
    servers=(walden before pg)
fi
b_psql() { PGOPTIONS="" psql -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$b_port" -U walden "$@"; }

out="$scratch/out"
mkdir -p "$out"
sb_common=(--db-driver=pgsql --pgsql-host=127.0.0.1 --pgsql-db=walden
    --tables="$tables" --table-size="$table_size")
sb_conn() { # SERVER
    if [[ $1 == walden ]]; then echo "--pgsql-port=$w_port --pgsql-user=walden"
    elif [[ $1 == before ]]; then echo "--pgsql-port=$b_port --pgsql-user=walden"
    else echo "--pgsql-port=$pg_port --pgsql-user=$pg_user"; fi
}

# ---- prepare ---------------------------------------------------------------------------
declare -A prepare_s
for server in "${servers[@]}"; do
    read -r -a conn <<<"$(sb_conn "$server")"
    log "sysbench oltp_common prepare ($tables x $table_size rows) on $server"
    t0="$(date +%s.%N)"
    sysbench oltp_common "${sb_common[@]}" "${conn[@]}" prepare >"$out/prepare-$server.out" 2>&1 \
        || { cat "$out/prepare-$server.out" >&2; die "sysbench prepare failed on $server"; }
    prepare_s[$server]="$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')"
done
pg_psql -d walden -c "VACUUM ANALYZE" -c "CHECKPOINT"
w_psql -d walden -c "CHECKPOINT"
[[ -n "$before_bin" ]] && b_psql -d walden -c "CHECKPOINT"
log "prepare took: Walden ${prepare_s[walden]} s, PostgreSQL ${prepare_s[pg]} s${before_bin:+, before ${prepare_s[before]} s}"

# ---- measurement -----------------------------------------------------------------------
results="$out/results.tsv"
printf 'round\ttest\tthreads\tmode\tserver\ttps\tqps\tp95_ms\tavg_ms\tmax_ms\terrors\trc\tdisk_wps\terror\n' >"$results"

set_walden_mode() { # MODE PSQL_FUNCTION
    local v=DISABLED got
    [[ $1 == delayed ]] && v=FORCED
    "$2" -d walden -c "ALTER DATABASE walden SET DELAYED_DURABILITY = $v"
    got="$("$2" -d walden -At -c "SELECT delayed_durability_desc FROM sys.databases WHERE name = 'walden'")"
    [[ "$got" == "$v" ]] || die "Walden reports DELAYED_DURABILITY=$got after setting $v"
}

# run_cell ROUND TEST THREADS MODE SERVER DISK_WPS
run_cell() {
    local round="$1" test="$2" th="$3" mode="$4" server="$5" dwps="$6" pgopts="" conn rc=0
    local tag="$out/r$1-$2-t$3-$4-$5"
    read -r -a conn <<<"$(sb_conn "$server")"
    if [[ $server == pg ]]; then
        pgopts="-c synchronous_commit=on"
        [[ $mode == delayed ]] && pgopts="-c synchronous_commit=off"
        local sc
        sc="$(PGOPTIONS="$pgopts" psql -X -At -h 127.0.0.1 -p "$pg_port" -U "$pg_user" -d walden -c "SHOW synchronous_commit")"
        [[ ($mode == delayed && $sc == off) || ($mode == durable && $sc == on) ]] \
            || die "PostgreSQL synchronous_commit=$sc in $mode mode"
    else
        local f=w_psql
        [[ $server == before ]] && f=b_psql
        set_walden_mode "$mode" "$f"
    fi
    PGOPTIONS="$pgopts" sysbench "$test" "${sb_common[@]}" "${conn[@]}" --threads="$th" \
        --time="$seconds" --percentile=95 --report-interval=0 run >"$tag.out" 2>"$tag.err" || rc=$?
    local parsed err
    parsed="$(python3 "$here/sysbench_compare.py" parse "$tag.out")"
    err="$(grep -hE 'FATAL|ALERT' "$tag.out" "$tag.err" | head -1 | tr '\t' ' ' | cut -c1-300 || true)"
    [[ -z "$err" && $rc != 0 ]] && err="sysbench exited with $rc"
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$round" "$test" "$th" "$mode" "$server" \
        "$parsed" "$rc" "$dwps" "$err" >>"$results"
    local name=PostgreSQL
    [[ $server == walden ]] && name=Walden
    [[ $server == before ]] && name=before
    # shellcheck disable=SC2086
    log "  $(printf '%-18s x%-2s %-7s %-10s' "$test" "$th" "$mode" "$name") $(awk -F'\t' '{printf "%9.1f tps  p95 %8.2f ms  errors %s", $1, $3, $6}' <<<"$parsed") rc=$rc${err:+  ($err)}"
}

read -r -a tests <<<"$tests_list"
read -r -a threads <<<"$threads_list"
modes=(durable)
[[ $delayed -eq 1 ]] && modes+=(delayed)
start_date="$(date -u '+%Y-%m-%d %H:%M UTC')"
uptime_start="$(uptime)"
ncells=$(( ${#tests[@]} * ${#threads[@]} * ${#modes[@]} ))
log "$rounds round(s) of $ncells pairs of ${seconds} s cells (about $(( rounds * ncells * 2 * (seconds + 2) / 60 + 1 )) min)"
for ((r = 1; r <= rounds; r++)); do
    for test in "${tests[@]}"; do
        for mode in "${modes[@]}"; do
            for th in "${threads[@]}"; do
                pw="$(disk_probe "$scratch/ddprobe" 200)"
                # Rotate the order round by round so no server always goes first.
                order=()
                for ((k = 0; k < ${#servers[@]}; k++)); do
                    order+=("${servers[$(( (k + r - 1) % ${#servers[@]} ))]}")
                done
                for server in "${order[@]}"; do run_cell "$r" "$test" "$th" "$mode" "$server" "$pw"; done
            done
        done
    done
done
uptime_end="$(uptime)"
kill -0 "$walden_pid" 2>/dev/null || log "WARNING: walden serve is no longer running"
w_warn="$(grep -cE 'WARN|ERROR' "$w_dir/stderr.log" || true)"

cat >"$out/meta.txt" <<EOF
command=$orig_cmd
date=$start_date
host=$(hostname) ($(nproc) CPUs)
uptime_start=$uptime_start
uptime_end=$uptime_end
pg_version=PostgreSQL $pg_version
pg_settings=fsync=on, wal_sync_method=fdatasync, full_page_writes=on, shared_buffers=256MB; durable: synchronous_commit=on; delayed: synchronous_commit=off
walden=$walden_info
walden_settings=durable: DELAYED_DURABILITY = DISABLED; delayed: DELAYED_DURABILITY = FORCED; default walden.toml
sysbench=$(sysbench --version)
seconds=$seconds
rounds=$rounds
tables=$tables
table_size=$table_size
prepare_s_walden=${prepare_s[walden]}
prepare_s_pg=${prepare_s[pg]}
walden_log_warn_error_lines=$w_warn
before=$before_info
prepare_s_before=${prepare_s[before]:-}
EOF
echo
python3 "$here/sysbench_compare.py" summarize "$out" ${json:+--json "$json"}
if [[ "$w_warn" != 0 ]]; then
    echo
    echo "Walden logged $w_warn WARN/ERROR line(s); first ones:"
    grep -E 'WARN|ERROR' "$w_dir/stderr.log" | head -5
fi
