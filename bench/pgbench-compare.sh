#!/usr/bin/env bash
# Walden vs PostgreSQL 15 under pgbench, interleaved in one run.
#
# Starts a throwaway PostgreSQL 15 (initdb as an unprivileged user, loopback, fsync=on)
# and a throwaway Walden (release binary), each on a free port with its own scratch data
# directory, and runs the same pgbench workloads against both:
#   insert  one INSERT per auto-commit transaction (custom script, `-n -f`),
#           -M prepared by default
#   tpcb    pgbench's built-in TPC-B (scale 10, initialised once per server with
#           `-i -I dtGvp`), simple protocol by default
# at 1 and 16 clients (-j 2 for 16), durable (PG synchronous_commit=on, Walden
# DELAYED_DURABILITY=DISABLED) and delayed (PG synchronous_commit=off, Walden FORCED).
# Each pair of cells runs back to back (PG then Walden in odd rounds, Walden then PG in
# even rounds); rounds repeat the whole set; the table shows medians over rounds.
# Before each round (and after the last) a `dd oflag=dsync` probe records the disk
# state; a shorter probe runs before each pair.
#
# Usage: bench/pgbench-compare.sh [options]
#   --seconds N      length of each cell (pgbench -T), default 10
#   --rounds N       rounds of the whole set, default 3 (medians over rounds)
#   --quick          smoke run: 2 s cells, 1 round
#   --json FILE      write every figure (per round too) as JSON
#   --protocol P     pgbench -M for both workloads (simple|extended|prepared);
#                    default prepared for insert, simple for tpcb
#   --scale N        TPC-B scale, default 10
#   --clients "L"    client counts, default "1 16" (-j 2 whenever more than one client)
#   --dir DIR        scratch parent (default ./target: the disk being measured)
#   --walden BIN     Walden binary, default ./target/release/walden
#                    (build it first: cargo build --release -p walden)
#   --keep           keep the scratch directory (server logs, pgbench outputs)
# Environment: PG_BIN (default /usr/lib/postgresql/15/bin), BENCH_USER (the
# unprivileged user for initdb when run as root; created if missing, default walden-bench).
# Both servers are reached over TCP on 127.0.0.1. Exit status 3: PostgreSQL missing.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
helper="$here/pgbench_compare.py"

seconds=10
rounds=3
json=""
proto_insert=prepared
proto_tpcb=simple
scale=10
clients_list="1 16"
base_dir="$repo/target"
walden_bin="$repo/target/release/walden"
keep=0
pg_bin="${PG_BIN:-/usr/lib/postgresql/15/bin}"
bench_user="${BENCH_USER:-walden-bench}"
target_ratio=1.5
orig_cmd="bench/pgbench-compare.sh${*:+ $*}"

usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d' | sed 's/^# \{0,1\}//'; }

while [[ $# -gt 0 ]]; do
    case "$1" in
        --seconds) seconds="$2"; shift 2 ;;
        --rounds) rounds="$2"; shift 2 ;;
        --quick) seconds=2; rounds=1; shift ;;
        --json) json="$2"; shift 2 ;;
        --protocol) proto_insert="$2"; proto_tpcb="$2"; shift 2 ;;
        --scale) scale="$2"; shift 2 ;;
        --clients) clients_list="$2"; shift 2 ;;
        --dir) base_dir="$2"; shift 2 ;;
        --walden) walden_bin="$2"; shift 2 ;;
        --keep) keep=1; shift ;;
        -h|--help) usage; exit 0 ;;
        *) echo "unknown argument: $1 (see --help)" >&2; exit 2 ;;
    esac
done
case "$proto_insert" in simple|extended|prepared) ;; *) echo "--protocol: simple, extended or prepared" >&2; exit 2 ;; esac
[[ "$seconds" =~ ^[0-9]+$ && "$rounds" =~ ^[0-9]+$ && "$scale" =~ ^[0-9]+$ ]] \
    || { echo "--seconds, --rounds and --scale take integers" >&2; exit 2; }

log() { echo "[$(date +%H:%M:%S)] $*" >&2; }
die() { echo "pgbench-compare: $*" >&2; exit 1; }

# ---- prerequisites --------------------------------------------------------------------
pgbench_bin="$(command -v pgbench || true)"
[[ -z "$pgbench_bin" && -x "$pg_bin/pgbench" ]] && pgbench_bin="$pg_bin/pgbench"
psql_bin="$(command -v psql || true)"
[[ -z "$psql_bin" && -x "$pg_bin/psql" ]] && psql_bin="$pg_bin/psql"
missing=()
for b in initdb pg_ctl postgres; do [[ -x "$pg_bin/$b" ]] || missing+=("$pg_bin/$b"); done
[[ -n "$pgbench_bin" ]] || missing+=(pgbench)
[[ -n "$psql_bin" ]] || missing+=(psql)
if [[ ${#missing[@]} -gt 0 ]]; then
    echo "pgbench-compare: PostgreSQL 15 is not installed (missing: ${missing[*]})." >&2
    echo "Install it with:  apt-get install -y postgresql-15 postgresql-client-15" >&2
    echo "(or set PG_BIN to the directory holding initdb, pg_ctl and postgres)" >&2
    exit 3
fi
command -v python3 >/dev/null || die "python3 is needed for the helper $helper"
command -v dd >/dev/null || die "dd is needed for the disk probe"
[[ -x "$walden_bin" ]] || die "no Walden binary at $walden_bin; build it with: cargo build --release -p walden"

# ---- scratch, processes and cleanup --------------------------------------------------
mkdir -p "$base_dir"
scratch="$(mktemp -d "$base_dir/pgbench-compare.XXXXXX")"
chmod 755 "$scratch"
pg_dir="$scratch/pg"
w_dir="$scratch/walden"
mkdir -p "$pg_dir" "$w_dir"
walden_pid=""
pg_started=0
pm_pid=""

as_pg() {
    if [[ $(id -u) -eq 0 ]]; then runuser -u "$bench_user" -- "$@"; else "$@"; fi
}

cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    set +e
    # A pgbench or probe still running (interrupted run).
    local j
    for j in $(jobs -p); do [[ "$j" != "$walden_pid" ]] && kill "$j" 2>/dev/null; done
    if [[ -n "$walden_pid" ]] && kill -0 "$walden_pid" 2>/dev/null; then
        kill -TERM "$walden_pid" 2>/dev/null
        for _ in $(seq 50); do kill -0 "$walden_pid" 2>/dev/null || break; sleep 0.2; done
        kill -0 "$walden_pid" 2>/dev/null && kill -KILL "$walden_pid" 2>/dev/null
        wait "$walden_pid" 2>/dev/null
    fi
    if [[ $pg_started -eq 1 ]]; then
        as_pg "$pg_bin/pg_ctl" -D "$pg_dir/data" -m immediate -w -t 30 stop >/dev/null 2>&1 \
            || { [[ -n "$pm_pid" ]] && kill -KILL "$pm_pid" 2>/dev/null; }
    fi
    if [[ $keep -eq 1 ]]; then
        echo "scratch kept in $scratch" >&2
    else
        rm -rf "$scratch"
    fi
    exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

read -r pg_port w_port < <(python3 "$helper" ports 2)

# ---- PostgreSQL ------------------------------------------------------------------------
if [[ $(id -u) -eq 0 ]]; then
    if ! id "$bench_user" >/dev/null 2>&1; then
        log "creating unprivileged user $bench_user for initdb"
        useradd -m "$bench_user"
    fi
    chown "$bench_user" "$pg_dir"
    pg_user="$bench_user"
else
    pg_user="$(id -un)"
fi
log "initdb ($pg_user) in $pg_dir/data"
as_pg "$pg_bin/initdb" -D "$pg_dir/data" -U "$pg_user" --auth=trust -E UTF8 --no-sync \
    >"$pg_dir/initdb.log" 2>&1 || { cat "$pg_dir/initdb.log" >&2; die "initdb failed"; }
mkdir -p "$pg_dir/sock" && chown "$pg_user" "$pg_dir/sock"
cat >>"$pg_dir/data/postgresql.conf" <<EOF

# pgbench-compare.sh
listen_addresses = '127.0.0.1'
port = $pg_port
unix_socket_directories = '$pg_dir/sock'
fsync = on
synchronous_commit = on
full_page_writes = on
wal_sync_method = fdatasync
shared_buffers = 256MB
max_connections = 50
EOF
as_pg "$pg_bin/pg_ctl" -D "$pg_dir/data" -l "$pg_dir/server.log" -w -t 60 start >/dev/null \
    || { cat "$pg_dir/server.log" >&2; die "PostgreSQL did not start"; }
pg_started=1
pm_pid="$(head -1 "$pg_dir/data/postmaster.pid")"

pg_psql() { PGOPTIONS="" "$psql_bin" -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$pg_port" -U "$pg_user" "$@"; }
pg_psql -d postgres -c "CREATE DATABASE walden" >/dev/null
pg_version="$(pg_psql -d walden -At -c "SELECT current_setting('server_version')")"
log "PostgreSQL $pg_version on 127.0.0.1:$pg_port (postmaster pid $pm_pid)"

# ---- Walden ----------------------------------------------------------------------------
"$walden_bin" serve --data-dir "$w_dir/data" --listen "127.0.0.1:$w_port" \
    >"$w_dir/stdout.log" 2>"$w_dir/stderr.log" &
walden_pid=$!
for _ in $(seq 150); do
    grep -q '^listening on' "$w_dir/stdout.log" 2>/dev/null && break
    kill -0 "$walden_pid" 2>/dev/null || { cat "$w_dir/stderr.log" >&2; die "walden serve exited"; }
    sleep 0.2
done
grep -q '^listening on' "$w_dir/stdout.log" || die "walden serve did not print 'listening on' in 30 s"
w_psql() { PGOPTIONS="" "$psql_bin" -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$w_port" -U walden "$@"; }
walden_commit="$(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo unknown)"
if [[ -n "$(git -C "$repo" status --porcelain --untracked-files=no -- crates Cargo.toml Cargo.lock 2>/dev/null)" ]]; then
    walden_commit="$walden_commit+dirty"
fi
# The binary need not match HEAD (it is whatever the last `cargo build` made): record it.
walden_binary_info="$(stat -c '%y' "$walden_bin" | cut -d. -f1) sha256 $(sha256sum "$walden_bin" | cut -c1-12)"
log "Walden (HEAD $walden_commit; binary built $walden_binary_info) on 127.0.0.1:$w_port (pid $walden_pid)"

# ---- schema and data ------------------------------------------------------------------
ins_script="$scratch/insert.sql"
cat >"$ins_script" <<'EOF'
\set id random(1, 1000000000)
INSERT INTO t1 (id, v) VALUES (:id, 1);
EOF
chmod 644 "$ins_script"
# No primary key: random ids in 1..1e9 would collide (~500 duplicates per million rows).
create_t1="CREATE TABLE t1 (id BIGINT NOT NULL, v INT NOT NULL)"
pg_psql -d walden -c "$create_t1"
w_psql -d walden -c "$create_t1"

init_args=(-i -s "$scale" -I dtGvp)
log "pgbench ${init_args[*]} on PostgreSQL"
"$pgbench_bin" -h 127.0.0.1 -p "$pg_port" -U "$pg_user" "${init_args[@]}" walden >"$pg_dir/init.log" 2>&1 \
    || { cat "$pg_dir/init.log" >&2; die "pgbench -i failed on PostgreSQL"; }
log "pgbench ${init_args[*]} on Walden"
"$pgbench_bin" -h 127.0.0.1 -p "$w_port" -U walden "${init_args[@]}" walden >"$w_dir/init.log" 2>&1 \
    || { cat "$w_dir/init.log" >&2; die "pgbench -i failed on Walden"; }
tail -1 "$pg_dir/init.log" | sed 's/^/  PostgreSQL: /' >&2
tail -1 "$w_dir/init.log" | sed 's/^/  Walden:     /' >&2
pg_psql -d walden -c "CHECKPOINT"
w_psql -d walden -c "CHECKPOINT"

# ---- measurement -----------------------------------------------------------------------
out="$scratch/out"
mkdir -p "$out"
results="$out/results.tsv"
probes="$out/probes.tsv"
: >"$probes"
printf 'round\tworkload\tclients\tmode\tserver\ttps\tlat_ms\tprocessed\tfailed\trc\tcpu_server_s\tcpu_pgbench_s\tcpu_busy_s\twall_s\tdisk_wps\terror\n' >"$results"

# dd probe: appends N 4 KB O_DSYNC writes to a new file; records label, N, seconds.
disk_probe() {
    local label="$1" n="$2" o secs
    o="$(dd if=/dev/zero of="$scratch/ddprobe" bs=4k count="$n" oflag=dsync 2>&1 | tail -1)"
    rm -f "$scratch/ddprobe"
    secs="$(awk -F', ' '{split($3, a, " "); print a[1]}' <<<"$o")"
    printf '%s\t%s\t%s\n' "$label" "$n" "$secs" >>"$probes"
    awk -v n="$n" -v s="$secs" 'BEGIN { if (s > 0) printf "%.0f", n / s; else print "nan" }'
}

# set_mode SERVER MODE: Walden through ALTER DATABASE; PostgreSQL through PGOPTIONS
# per pgbench connection (see run_cell).
set_mode() {
    local server="$1" mode="$2"
    if [[ $server == walden ]]; then
        local v=DISABLED
        [[ $mode == delayed ]] && v=FORCED
        w_psql -d walden -c "ALTER DATABASE walden SET DELAYED_DURABILITY = $v"
        local got
        got="$(w_psql -d walden -At -c "SELECT delayed_durability_desc FROM sys.databases WHERE name = 'walden'")"
        [[ "$got" == "$v" ]] || die "Walden reports DELAYED_DURABILITY=$got after setting $v"
    fi
}

secs_of_times() {  # "0m1.230s" -> 1.230
    awk '{ m = $0; sub(/m.*/, "", m); s = $0; sub(/^[0-9]+m/, "", s); sub(/s$/, "", s); printf "%.3f", m * 60 + s }' <<<"$1"
}

# run_cell ROUND WORKLOAD CLIENTS MODE SERVER DISK_WPS
run_cell() {
    local round="$1" wl="$2" cl="$3" mode="$4" server="$5" dwps="$6"
    local port user_args=() pgopts="" jobs=1 args=() tag="$out/r${1}-${2}-c${3}-${4}-${5}"
    [[ $cl -gt 1 ]] && jobs=2
    if [[ $server == pg ]]; then
        port=$pg_port; user_args=(-U "$pg_user")
        [[ $mode == delayed ]] && pgopts="-c synchronous_commit=off" || pgopts="-c synchronous_commit=on"
        local sc
        sc="$(PGOPTIONS="$pgopts" "$psql_bin" -X -At -h 127.0.0.1 -p "$port" -U "$pg_user" -d walden -c "SHOW synchronous_commit")"
        [[ ($mode == delayed && $sc == off) || ($mode == durable && $sc == on) ]] \
            || die "PostgreSQL synchronous_commit=$sc in $mode mode"
    else
        port=$w_port; user_args=(-U walden)
        set_mode walden "$mode"
    fi
    if [[ $wl == insert ]]; then
        if [[ $server == pg ]]; then pg_psql -d walden -c "TRUNCATE t1"; else w_psql -d walden -c "TRUNCATE t1"; fi
        args=(-n -f "$ins_script" -M "$proto_insert")
    else
        # Without -n pgbench vacuums the branches and tellers and truncates the history
        # table before the timed run, as in a stock TPC-B run.
        args=(-M "$proto_tpcb")
    fi
    args+=(-c "$cl" -j "$jobs" -T "$seconds" -h 127.0.0.1 -p "$port" "${user_args[@]}" walden)

    local c0 c1 t0 t1 rc=0 tm
    read -r -a c0 < <(python3 "$helper" cpu "$walden_pid" "$pm_pid")
    t0="$(date +%s.%N)"
    # `times` in the subshell reports the CPU of its reaped child, pgbench.
    tm="$( { PGOPTIONS="$pgopts" "$pgbench_bin" "${args[@]}" >"$tag.out" 2>"$tag.err" && echo "rc=0" || echo "rc=$?"; times; } 2>&1 )" || true
    t1="$(date +%s.%N)"
    sleep 0.3   # let the backends of the finished run exit and be reaped
    read -r -a c1 < <(python3 "$helper" cpu "$walden_pid" "$pm_pid")
    rc="$(sed -n 's/^rc=//p' <<<"$tm")"
    local ch; ch="$(tail -1 <<<"$tm")"   # children: user sys
    local pb_cpu
    pb_cpu="$(awk -v u="$(secs_of_times "${ch%% *}")" -v s="$(secs_of_times "${ch##* }")" 'BEGIN { printf "%.3f", u + s }')"
    local hz="${c0[3]}" cpu_srv cpu_busy wall
    if [[ $server == walden ]]; then
        cpu_srv="$(awk -v a="${c0[0]}" -v b="${c1[0]}" -v hz="$hz" 'BEGIN { printf "%.3f", (b - a) / hz }')"
    else
        cpu_srv="$(awk -v a="${c0[1]}" -v b="${c1[1]}" -v hz="$hz" 'BEGIN { printf "%.3f", (b - a) / hz }')"
    fi
    cpu_busy="$(awk -v a="${c0[2]}" -v b="${c1[2]}" -v hz="$hz" 'BEGIN { printf "%.3f", (b - a) / hz }')"
    wall="$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')"

    local tps lat processed failed err=""
    read -r tps lat processed failed < <(python3 "$helper" parse "$tag.out")
    # First distinct error line pgbench printed (server errors arrive on stderr).
    err="$(grep -iE 'error|fatal|abort|fail' "$tag.err" | grep -v '^pgbench: warning' | head -1 | tr '\t' ' ' | cut -c1-300 || true)"
    [[ -z "$err" && "$rc" != 0 ]] && err="pgbench exited with $rc"
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' \
        "$round" "$wl" "$cl" "$mode" "$server" "$tps" "$lat" "$processed" "$failed" "$rc" \
        "$cpu_srv" "$pb_cpu" "$cpu_busy" "$wall" "$dwps" "$err" >>"$results"
    local name=PostgreSQL; [[ $server == walden ]] && name=Walden
    log "  $(printf '%-6s x%-2s %-7s %-10s %8.0f tps %8.3f ms  rc=%s failed=%s  cpu: server %.2f pgbench %.2f busy %.2f of %.1f s%s' \
        "$wl" "$cl" "$mode" "$name" "$tps" "$lat" "$rc" "$failed" "$cpu_srv" "$pb_cpu" "$cpu_busy" "$wall" "${err:+  ($err)}")"
}

workloads=(insert tpcb)
modes=(durable delayed)
read -r -a clients <<<"$clients_list"
ncells=$(( ${#workloads[@]} * ${#modes[@]} * ${#clients[@]} ))
log "$rounds round(s) of $ncells pairs of ${seconds} s cells (about $(( rounds * ncells * 2 * (seconds + 2) / 60 + 1 )) min)"
log "protocols: insert -M $proto_insert, tpcb -M $proto_tpcb; scale $scale; clients ${clients[*]}"

start_date="$(date -u '+%Y-%m-%d %H:%M UTC')"
load_start="$(cut -d' ' -f1-3 /proc/loadavg)"
for ((r = 1; r <= rounds; r++)); do
    w="$(disk_probe "round $r" 2000)"
    log "round $r/$rounds: disk $w writes/s (dd 4 KB oflag=dsync, 2000 writes)"
    for wl in "${workloads[@]}"; do
        for mode in "${modes[@]}"; do
            for cl in "${clients[@]}"; do
                pw="$(disk_probe "pair r$r $wl x$cl $mode" 200)"
                if (( r % 2 == 1 )); then order=(pg walden); else order=(walden pg); fi
                for server in "${order[@]}"; do
                    run_cell "$r" "$wl" "$cl" "$mode" "$server" "$pw"
                done
            done
        done
    done
done
w="$(disk_probe "end" 2000)"
log "end: disk $w writes/s"
load_end="$(cut -d' ' -f1-3 /proc/loadavg)"

# Anything Walden logged at WARN/ERROR level during the run.
w_warn="$(grep -cE 'WARN|ERROR' "$w_dir/stderr.log" || true)"
kill -0 "$walden_pid" 2>/dev/null || log "WARNING: walden serve is no longer running"

cat >"$out/meta.txt" <<EOF
command=$orig_cmd
date=$start_date
host=$(hostname) ($(nproc) CPUs)
loadavg_start=$load_start
loadavg_end=$load_end
pg_version=PostgreSQL $pg_version
pg_settings=fsync=on, wal_sync_method=fdatasync, shared_buffers=256MB, full_page_writes=on; TCP loopback
walden_commit=$walden_commit
walden_binary=$walden_bin, built $walden_binary_info
pgbench=$("$pgbench_bin" --version)
seconds=$seconds
rounds=$rounds
scale=$scale
clients=${clients[*]}
protocol_insert=$proto_insert
protocol_tpcb=$proto_tpcb
init=pgbench ${init_args[*]}
insert_script=\\set id random(1, 1000000000); INSERT INTO t1 (id, v) VALUES (:id, 1); t1(id BIGINT NOT NULL, v INT NOT NULL), no primary key, truncated before each cell
walden_log_warn_error_lines=$w_warn
target_ratio=$target_ratio
EOF

echo
if [[ -n "$json" ]]; then
    python3 "$helper" summarize "$out" --json "$json"
else
    python3 "$helper" summarize "$out"
fi
if [[ "$w_warn" != 0 ]]; then
    echo
    echo "Walden logged $w_warn WARN/ERROR line(s); first ones:"
    grep -E 'WARN|ERROR' "$w_dir/stderr.log" | head -5
fi
