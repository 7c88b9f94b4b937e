#!/usr/bin/env bash
# Server CPU time per committed TPC-C new-order, for one or more Walden
# binaries on the same warm database: a figure a loaded, shared machine
# changes far less than throughput (other processes take wall-clock time
# from the server, not CPU time from its work).
#
# Percona-Lab's sysbench-tpcc scripts (LUA_DIR, as bench/tpcc-compare.sh)
# load one scale-1 database with the first binary, checkpointed; each run
# then starts a binary on a fresh copy of it, runs the TPC-C mix for
# SECONDS at DELAYED_DURABILITY = FORCED (the disk's flushes out of the
# figure), and reads the server's user + system CPU time from /proc and
# the new-orders committed from district's d_next_o_id. Rounds interleave
# the binaries. Printed per run and as medians: CPU ms per new-order,
# new-orders per second.
#
#   bash bench/tpcc-cpu.sh LUA_DIR [--seconds 20] [--rounds 2] [--threads 1]
#        [--level RR] BINARY [BINARY...]
#
# Needs sysbench, psql and python3.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
seconds=20 rounds=2 threads=1 level=RR lua_dir="" bins=()
while [[ $# -gt 0 ]]; do
    case "$1" in
        --seconds) seconds=$2; shift 2 ;;
        --rounds) rounds=$2; shift 2 ;;
        --threads) threads=$2; shift 2 ;;
        --level) level=$2; shift 2 ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) if [[ -z "$lua_dir" ]]; then lua_dir=$1; else bins+=("$(realpath "$1")"); fi; shift ;;
    esac
done
[[ -n "$lua_dir" && -f "$lua_dir/tpcc.lua" && ${#bins[@]} -gt 0 ]] \
    || { echo "usage: $0 LUA_DIR BINARY [BINARY...]" >&2; exit 2; }
lua_dir="$(cd "$lua_dir" && pwd)"
command -v sysbench >/dev/null || { echo "missing: sysbench" >&2; exit 3; }
# shellcheck source=bench/servers.sh
source "$here/servers.sh"
scratch=$(mktemp -d "${TMPDIR:-/tmp}/tpcc-cpu.XXXXXX")
trap 'srv_cleanup; rm -rf "$scratch"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
w_dir="$scratch/w"
mkdir -p "$w_dir"
w_port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')

tpcc_sb() {
    local cmd=$1
    shift
    (cd "$lua_dir" && sysbench tpcc.lua --db-driver=pgsql --pgsql-host=127.0.0.1 \
        --pgsql-port="$w_port" --pgsql-user=walden --pgsql-db=walden --tables=1 --use_fk=1 \
        --scale=1 "$@" "$cmd")
}
cpu_ticks() { awk '{print $14 + $15}' "/proc/$walden_pid/stat"; }

walden_bin=${bins[0]}
srv_log "loading scale 1 with $walden_bin"
walden_start ""
tpcc_sb prepare --threads=2 >"$scratch/prepare.log" 2>&1 || { tail -20 "$scratch/prepare.log" >&2; exit 1; }
w_psql -d walden -c "CHECKPOINT" >/dev/null
walden_stop
mv "$w_dir/data" "$scratch/seed"

results="$scratch/results"
: >"$results"
hz=$(getconf CLK_TCK)
for round in $(seq 1 "$rounds"); do
    for b in "${bins[@]}"; do
        walden_bin=$b
        rm -rf "$w_dir/data"
        cp -a "$scratch/seed" "$w_dir/data"
        walden_start ""
        w_psql -d walden -c "ALTER DATABASE walden SET DELAYED_DURABILITY = FORCED" >/dev/null
        q="SELECT sum(d_next_o_id) FROM district1"
        before=$(w_psql -d walden -At -c "$q")
        c0=$(cpu_ticks)
        tpcc_sb run --threads="$threads" --time="$seconds" --trx_level="$level" \
            --report-interval=0 >"$scratch/run.log" 2>&1 || { tail -20 "$scratch/run.log" >&2; exit 1; }
        c1=$(cpu_ticks)
        after=$(w_psql -d walden -At -c "$q")
        walden_stop
        line=$(python3 -c "
no = $after - $before
print(f'{round(($c1 - $c0) * 1000 / $hz / max(no, 1), 3)}|{round(no / $seconds, 2)}')")
        echo "$round|$b|$line|$(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$results"
    done
done

python3 - "$results" <<'EOF'
import statistics, sys
by = {}
for line in open(sys.argv[1]):
    _, b, ms, no, _ = line.strip().split("|")
    by.setdefault(b, []).append((float(ms), float(no)))
print("\nmedians over rounds: server CPU ms per new-order, new-orders/s")
for b, runs in by.items():
    print(f"{statistics.median(r[0] for r in runs):8.3f} ms {statistics.median(r[1] for r in runs):8.2f}/s  {b}")
EOF
