#!/usr/bin/env bash
# pgbench at scale (issue 12): Walden vs PostgreSQL 15 on the same load, one run.
#
# For each server (Walden first, then a scratch PostgreSQL 15; bench/servers.sh):
#  1. `pgbench -i -s N` (default steps dtgvp: client-side COPY, then the primary
#     keys): wall time; the server's peak resident memory during the load (Walden:
#     VmHWM; PostgreSQL: the largest sum of Pss over its processes, sampled every
#     0.2 s) and its steady memory after the load, a CHECKPOINT and 5 s idle;
#     bytes on disk per pgbench_accounts row, after the CHECKPOINT: the database's
#     store (Walden: <db>/data, the base store; PostgreSQL: pg_database_size) and the
#     whole data directory (with Walden's preallocated log segments, PostgreSQL's WAL).
#  2. Restart: clean stop (Walden SIGTERM, PostgreSQL pg_ctl -m fast) and start
#     until a query is answered, each timed.
#  3. TPC-B: `pgbench -c C -j 2 -T S -P 1 -l` (default 8 clients, 60 s; durable
#     commits: Walden DELAYED_DURABILITY = DISABLED, PostgreSQL synchronous_commit=on,
#     fsync=on). Reports the median of the per-second tps, the minimum second, the
#     seconds below half the median, and the longest transaction (from the
#     per-transaction log). At least one checkpoint falls inside the run: the
#     counters (Walden's checkpoints_total on /metrics; PostgreSQL's
#     pg_stat_bgwriter) are read before and after, and when none has started by
#     the middle of the run a CHECKPOINT is issued then (and timed). Each transaction
#     over 50 ms and each second below half the median is matched against the
#     checkpoints in the server's log (and Walden's slow log syncs, the disk's): the
#     issue's targets are about waits on a checkpoint.
#  4. The same restart and run with the cache at a quarter of the data: Walden
#     `[storage] cache_size_mb` = a quarter of its base store, PostgreSQL
#     shared_buffers = a quarter of its database. (Phase 1 uses Walden's default
#     cache, 128 MiB, and PostgreSQL's default shared_buffers, 128MB.)
# A watchdog kills Walden (SIGKILL) if its resident memory passes --rss-limit-mb
# (default 8192). If the load fails so (or otherwise), the run records what it measured,
# loads the same rows into a fresh Walden in --batches transactions (default 10; 0:
# skip) and goes on with the phases after the load; then PostgreSQL.
#
# Usage: bench/pgbench-scale.sh [options]
#   --scale N          default 100
#   --seconds N        TPC-B run length, default 60
#   --clients N        default 8
#   --init-steps S     pgbench -I, default dtgvp (pgbench's default)
#   --rss-limit-mb N   Walden's memory guard, default 8192 (0: none)
#   --batches N        transactions of the fallback load, default 10 (0: none)
#   --txn-limit-mb N   Walden's transaction_memory_limit_mb (default: walden.toml's
#                      default, 2048), e.g. so that pgbench -i's one transaction fits
#   --walden-load L    pgbench (default: pgbench -i first) or batched (only the
#                      batched load, e.g. when the one-transaction load is known to fail)
#   --only SERVER      walden or pg
#   --json FILE        every figure as JSON
#   --dir DIR          scratch parent (default ./target: the disk being measured)
#   --walden BIN       default ./target/release/walden
#   --keep             keep the scratch directory
# Environment: PG_BIN, BENCH_USER as in bench/pgbench-compare.sh.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
py="$here/pgbench_scale.py"

scale=100 seconds=60 clients=8 init_steps=dtgvp rss_limit=8192 only="" json="" keep=0 batches=10
txn_limit=""
walden_load=pgbench
base_dir="$repo/target"
walden_bin="$repo/target/release/walden"
pg_bin="${PG_BIN:-/usr/lib/postgresql/15/bin}"
bench_user="${BENCH_USER:-walden-bench}"
orig_cmd="bench/pgbench-scale.sh${*:+ $*}"

usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d' | sed 's/^# \{0,1\}//'; }
while [[ $# -gt 0 ]]; do
    case "$1" in
        --scale) scale="$2"; shift 2 ;;
        --seconds) seconds="$2"; shift 2 ;;
        --clients) clients="$2"; shift 2 ;;
        --init-steps) init_steps="$2"; shift 2 ;;
        --rss-limit-mb) rss_limit="$2"; shift 2 ;;
        --batches) batches="$2"; shift 2 ;;
        --txn-limit-mb) txn_limit="$2"; shift 2 ;;
        --walden-load) walden_load="$2"; shift 2 ;;
        --only) only="$2"; shift 2 ;;
        --json) json="$2"; shift 2 ;;
        --dir) base_dir="$2"; shift 2 ;;
        --walden) walden_bin="$2"; shift 2 ;;
        --keep) keep=1; shift ;;
        -h|--help) usage; exit 0 ;;
        *) echo "unknown argument: $1 (see --help)" >&2; exit 2 ;;
    esac
done
for v in "$scale" "$seconds" "$clients" "$rss_limit" "$batches" "${txn_limit:-0}"; do
    [[ "$v" =~ ^[0-9]+$ ]] || { echo "--scale, --seconds, --clients, --rss-limit-mb, --batches and --txn-limit-mb take integers" >&2; exit 2; }
done
case "$only" in ""|walden|pg) ;; *) echo "--only: walden or pg" >&2; exit 2 ;; esac
case "$walden_load" in pgbench|batched) ;; *) echo "--walden-load: pgbench or batched" >&2; exit 2 ;; esac

# shellcheck source=bench/servers.sh
source "$here/servers.sh"
srv_require pgbench dd
log() { srv_log "$@"; }
die() { echo "pgbench-scale: $*" >&2; exit 1; }

mkdir -p "$base_dir"
scratch="$(mktemp -d "$base_dir/pgbench-scale.XXXXXX")"
chmod 755 "$scratch"
sampler=""
stop_sampler() {
    [[ -n "$sampler" ]] || return 0
    kill -TERM "$sampler" 2>/dev/null
    wait "$sampler" 2>/dev/null || true
    sampler=""
}
cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    stop_sampler
    srv_cleanup
    if [[ $keep -eq 1 ]]; then echo "scratch kept in $scratch" >&2; else rm -rf "$scratch"; fi
    exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

srv_init
m_port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
records="$scratch/records.jsonl"
: >"$records"
rows=$((scale * 100000))
disk_states=()
probe() { disk_states+=("$1 $(disk_probe "$scratch/ddprobe" 500)"); log "disk: ${disk_states[-1]} writes/s"; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }

# Walden's configuration: the metrics endpoint (for the checkpoint counter),
# --txn-limit-mb and, when given, the base store's cache in MiB.
walden_config() {
    local f="$scratch/walden-$1.toml"
    printf 'metrics_listen = "127.0.0.1:%s"\n' "$m_port" >"$f"
    [[ -n "$txn_limit" ]] && printf 'transaction_memory_limit_mb = %s\n' "$txn_limit" >>"$f"
    [[ -n "${2:-}" ]] && printf '\n[storage]\ncache_size_mb = %s\n' "$2" >>"$f"
    echo "$f"
}

# start_sampler KIND PID FILE LIMIT_MB
start_sampler() {
    python3 "$py" sample "$1" "$2" "$3" "$4" &
    sampler=$!
}
sampled() { # FILE FIELD(1 peak, 2 last, 3 aborted)
    awk -v f="$2" '{print $f}' "$1" 2>/dev/null || echo 0
}
rss_now() { # SERVER: kB
    if [[ $1 == walden ]]; then python3 "$py" status "$walden_pid" | cut -d' ' -f1
    else python3 "$py" pgsum "$pm_pid"; fi
}
checkpoints() { # SERVER
    if [[ $1 == walden ]]; then python3 "$py" metric "http://127.0.0.1:$m_port/metrics" walden_checkpoints_total
    else pg_psql -d walden -At -c "SELECT checkpoints_timed + checkpoints_req FROM pg_stat_bgwriter"; fi
}
sql() { # SERVER ARGS...
    local s="$1"; shift
    if [[ $s == walden ]]; then w_psql -d walden "$@"; else pg_psql -d walden "$@"; fi
}
pgb() { # SERVER ARGS...
    local s="$1"; shift
    if [[ $s == walden ]]; then pgbench -h 127.0.0.1 -p "$w_port" -U walden "$@"
    else pgbench -h 127.0.0.1 -p "$pg_port" -U "$pg_user" "$@"; fi
}
dir_bytes() { # SERVER: the whole data directory (log / WAL included)
    if [[ $1 == walden ]]; then du -sb "$w_dir/data" | cut -f1; else du -sb "$pg_dir/data" | cut -f1; fi
}
store_bytes() { # SERVER: the database's tables and indexes (Walden: its base store files)
    if [[ $1 == walden ]]; then du -sb "$w_dir/data/walden/data" | cut -f1
    else pg_psql -d walden -At -c "SELECT pg_database_size('walden')"; fi
}
# Walden's store file has unallocated ranges: the blocks it holds on disk.
store_alloc_bytes() { if [[ $1 == walden ]]; then du -s -B1 "$w_dir/data/walden/data" | cut -f1; else store_bytes pg; fi; }
server_pid() { if [[ $1 == walden ]]; then echo "$walden_pid"; else echo "$pm_pid"; fi; }
server_start() { # SERVER [CONFIG]
    if [[ $1 == walden ]]; then walden_start "${2:-}"; else pg_start; fi
}
server_stop() { if [[ $1 == walden ]]; then walden_stop; else pg_stop; fi; }
# account_rows SERVER: count(*) of pgbench_accounts, by slices of aid when one
# count(*) over the whole table is refused (Walden at scale 100 refused it with
# "out of memory: the statement's rows exceed statement_memory_limit").
account_rows() {
    local n lo total=0
    if n="$(sql "$1" -At -c "SELECT count(*) FROM pgbench_accounts" 2>"$scratch/count.err")"; then
        echo "$n"; return 0
    fi
    log "$1: count(*) of pgbench_accounts failed: $(head -1 "$scratch/count.err"); counting by slices of 1,000,000 aids"
    for ((lo = 1; lo <= rows; lo += 1000000)); do
        n="$(sql "$1" -At -c "SELECT count(*) FROM pgbench_accounts WHERE aid BETWEEN $lo AND $((lo + 999999))")" || return 1
        total=$((total + n))
    done
    echo "$total"
}
alive() { # SERVER
    if [[ $1 == walden ]]; then [[ -n "$walden_pid" ]] && kill -0 "$walden_pid" 2>/dev/null
    else [[ $pg_running -eq 1 ]]; fi
}

# ---- phase 1: load --------------------------------------------------------------------
init_server() { # SERVER
    local s="$1" t0 init_s rc=0 peak steady aborted dbytes sbytes salloc tbytes="" err=""
    log "$s: pgbench -i -s $scale -I $init_steps"
    start_sampler "$s" "$(server_pid "$s")" "$scratch/mem-$s-init" "$([[ $s == walden ]] && echo "$rss_limit" || echo 0)"
    t0="$(now)"
    pgb "$s" -i -s "$scale" -I "$init_steps" walden >"$scratch/init-$s.log" 2>&1 || rc=$?
    init_s="$(since "$t0")"
    aborted="$(sampled "$scratch/mem-$s-init" 3)"
    if [[ $rc -ne 0 || "$aborted" == 1 ]] || ! alive "$s"; then
        stop_sampler
        peak="$(sampled "$scratch/mem-$s-init" 1)"
        err="pgbench -i exited $rc after $init_s s"
        [[ "$aborted" == 1 ]] && err="$err; server killed: resident memory passed $rss_limit MB"
        err="$err; $(grep -iE 'error|fatal' "$scratch/init-$s.log" | head -1 || true)"
        log "$s: $err"
        python3 - "$s" "$init_s" "$peak" "$err" >>"$records" <<'EOF'
import json, sys
print(json.dumps({"kind": "init", "server": sys.argv[1], "init_s": float(sys.argv[2]),
                  "peak_kb": int(sys.argv[3] or 0), "aborted": sys.argv[4]}))
EOF
        return 1
    fi
    sql "$s" -c "CHECKPOINT"
    sleep 5
    stop_sampler
    peak="$(sampled "$scratch/mem-$s-init" 1)"
    steady="$(rss_now "$s")"
    dbytes="$(dir_bytes "$s")"
    sbytes="$(store_bytes "$s")"
    salloc="$(store_alloc_bytes "$s")"
    [[ $s == pg ]] && tbytes="$(pg_psql -d walden -At -c "SELECT pg_total_relation_size('pgbench_accounts')")"
    local n
    n="$(account_rows "$s")"
    log "$s: init ${init_s} s, $n rows, peak $((peak / 1024)) MB, steady $((steady / 1024)) MB, store $((sbytes / 1048576)) MB, directory $((dbytes / 1048576)) MB"
    python3 - "$s" "$init_s" "$n" "$peak" "$steady" "$dbytes" "$tbytes" "$sbytes" "$salloc" >>"$records" <<'EOF'
import json, sys
s, init_s, n, peak, steady, d, t, st, sa = sys.argv[1:]
n = int(n)
r = {"kind": "init", "server": s, "init_s": float(init_s), "rows": n, "peak_kb": int(peak),
     "steady_kb": int(steady), "disk_bytes": int(d), "bytes_per_row": int(d) / n,
     "store_bytes": int(st), "store_bytes_per_row": int(st) / n,
     "store_allocated_bytes_per_row": int(sa) / n}
if t:
    r["table_bytes"] = int(t)
    r["table_bytes_per_row"] = int(t) / n
print(json.dumps(r))
EOF
}

# init_walden_batched: when one-transaction `pgbench -i` could not finish on Walden, the
# same rows loaded in BATCHES transactions (pgbench -I dtp creates the tables and
# their primary keys, then pgbench's own server-side generation, step G, one slice
# of aid at a time), so the phases after the load still run at this scale.
init_walden_batched() {
    local t0 init_s rc=0 peak steady dbytes sbytes salloc n lo hi b
    rm -rf "$w_dir/data"
    walden_start "$(walden_config default)" || return 1
    log "walden: batched load, $batches transactions for pgbench_accounts"
    start_sampler walden "$walden_pid" "$scratch/mem-walden-batched" "$rss_limit"
    t0="$(now)"
    pgb walden -i -s "$scale" -I dtp walden >"$scratch/init-walden-batched.log" 2>&1 || rc=$?
    if [[ $rc -eq 0 ]]; then
        w_psql -d walden -c "INSERT INTO pgbench_branches(bid, bbalance) SELECT bid, 0 FROM generate_series(1, $scale) AS bid" \
            -c "INSERT INTO pgbench_tellers(tid, bid, tbalance) SELECT tid, (tid - 1) / 10 + 1, 0 FROM generate_series(1, $((scale * 10))) AS tid" \
            >>"$scratch/init-walden-batched.log" 2>&1 || rc=$?
    fi
    for ((b = 0; b < batches && rc == 0; b++)); do
        lo=$((rows * b / batches + 1)) hi=$((rows * (b + 1) / batches))
        w_psql -d walden -c "INSERT INTO pgbench_accounts(aid, bid, abalance, filler) SELECT aid, (aid - 1) / 100000 + 1, 0, '' FROM generate_series($lo, $hi) AS aid" \
            >>"$scratch/init-walden-batched.log" 2>&1 || rc=$?
    done
    init_s="$(since "$t0")"
    if [[ $rc -ne 0 || "$(sampled "$scratch/mem-walden-batched" 3)" == 1 ]] || ! alive walden; then
        stop_sampler
        log "walden: batched load failed after $init_s s (rc $rc): $(grep -iE 'error|fatal' "$scratch/init-walden-batched.log" | head -1 || true)"
        return 1
    fi
    w_psql -d walden -c "CHECKPOINT"
    sleep 5
    stop_sampler
    peak="$(sampled "$scratch/mem-walden-batched" 1)"
    steady="$(rss_now walden)"
    dbytes="$(dir_bytes walden)"
    sbytes="$(store_bytes walden)"
    salloc="$(store_alloc_bytes walden)"
    n="$(account_rows walden)"
    log "walden: batched load ${init_s} s, $n rows, peak $((peak / 1024)) MB, steady $((steady / 1024)) MB, store $((sbytes / 1048576)) MB"
    python3 - "$init_s" "$n" "$peak" "$steady" "$dbytes" "$sbytes" "$batches" "$salloc" >>"$records" <<'EOF'
import json, sys
init_s, n, peak, steady, d, st, b, sa = sys.argv[1:]
n = int(n)
print(json.dumps({"kind": "init", "server": "walden", "batched": int(b), "init_s": float(init_s), "rows": n,
                  "peak_kb": int(peak), "steady_kb": int(steady), "disk_bytes": int(d),
                  "bytes_per_row": int(d) / n, "store_bytes": int(st), "store_bytes_per_row": int(st) / n,
                  "store_allocated_bytes_per_row": int(sa) / n}))
EOF
}

# ---- phases 2-4: restart and TPC-B ------------------------------------------------------
run_phase() { # SERVER PHASE [WALDEN_CONFIG]
    local s="$1" phase="$2" cfg="${3:-}" t0 stop_s start_s rss_open rss_after peak c0 c1 err=""
    local dir="$scratch/run-$s-$phase"
    mkdir -p "$dir/log"
    log "$s ($phase): restart"
    t0="$(now)"; server_stop "$s"; stop_s="$(since "$t0")"
    t0="$(now)"; server_start "$s" "$cfg" || { log "$s did not restart"; return 1; }; start_s="$(since "$t0")"
    rss_open="$(rss_now "$s")"
    if [[ $s == walden ]]; then sql walden -c "ALTER DATABASE walden SET DELAYED_DURABILITY = DISABLED"
    else sql pg -c "ALTER DATABASE walden SET synchronous_commit = on"; fi
    start_sampler "$s" "$(server_pid "$s")" "$dir/mem" "$([[ $s == walden ]] && echo "$rss_limit" || echo 0)"
    c0="$(checkpoints "$s")"
    log "$s ($phase): stop ${stop_s} s, start ${start_s} s, RSS $((rss_open / 1024)) MB; TPC-B ${clients} clients ${seconds} s (checkpoints so far: $c0)"
    ( cd "$dir/log" && pgb "$s" -c "$clients" -j 2 -T "$seconds" -P 1 -l walden >"$dir/run.out" 2>"$dir/progress.log" ) &
    local bench=$! half=$((seconds / 2)) forced_at="" forced_s=""
    for ((i = 0; i < half * 10; i++)); do kill -0 "$bench" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$bench" 2>/dev/null && [[ "$(checkpoints "$s")" == "$c0" ]]; then
        forced_at="$half"
        t0="$(now)"
        sql "$s" -c "CHECKPOINT" || true
        forced_s="$(since "$t0")"
        log "$s ($phase): no checkpoint by ${half} s; CHECKPOINT took ${forced_s} s"
    fi
    wait "$bench" || err="pgbench exited $? ($(grep -iE 'error|fatal|abort' "$dir/progress.log" "$dir/run.out" | head -1 || true))"
    c1="$(checkpoints "$s" || echo "$c0")"
    rss_after="$(rss_now "$s" 2>/dev/null || echo 0)"
    stop_sampler
    peak="$(sampled "$dir/mem" 1)"
    [[ "$(sampled "$dir/mem" 3)" == 1 ]] && err="server killed: resident memory passed $rss_limit MB; $err"
    local slog="$w_dir/stderr.log"
    [[ $s == walden ]] || slog="$pg_dir/server.log"
    python3 "$py" run "$dir" "$s" "$slog" >"$dir/run.json"
    python3 - "$s" "$phase" "$stop_s" "$start_s" "$rss_open" "$rss_after" "$peak" "$c0" "$c1" \
        "$forced_at" "$forced_s" "$err" "$dir/run.json" "$cfg" >>"$records" <<'EOF'
import json, sys
(s, phase, stop_s, start_s, rss_open, rss_after, peak, c0, c1, fat, fs, err, run, cfg) = sys.argv[1:]
r = {"kind": "run", "server": s, "phase": phase, "stop_s": float(stop_s), "start_s": float(start_s),
     "rss_open_kb": int(rss_open or 0), "rss_after_kb": int(rss_after or 0), "peak_kb": int(peak or 0),
     "checkpoints": int(c1) - int(c0), "run": json.load(open(run))}
if fat:
    r["forced_checkpoint_at"] = int(fat)
    r["forced_checkpoint_s"] = float(fs)
    r["checkpoints"] += 0 if r["checkpoints"] else 1
if err:
    r["error"] = err
if cfg:
    r["walden_config"] = open(cfg).read()
print(json.dumps(r))
EOF
    python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print("  tps median %s, min %s, %s s below half, max latency %s ms" % (r["tps_median"], r["tps_min"], r["seconds_below_half_median"], r["latency_max_ms"]))' "$dir/run.json" >&2
}

quarter_mb() { # SERVER: a quarter of the data (the store), in MiB
    local b
    b="$(store_bytes "$1")"
    echo $(( (b / 4) >> 20 ))
}

uptime_start="$(uptime)"
start_date="$(date -u '+%Y-%m-%d %H:%M UTC')"
probe start
walden_info=""
pg_version=""
w_quarter="" pg_quarter=""

if [[ $only != pg ]]; then
    walden_start "$(walden_config default)" || die "walden serve did not start"
    walden_info="$(walden_identity "$repo")"
    log "Walden $walden_info on 127.0.0.1:$w_port (pid $walden_pid), metrics on $m_port"
    walden_loaded=0
    if [[ $walden_load == pgbench ]] && init_server walden; then
        walden_loaded=1
    elif [[ $batches -gt 0 ]]; then
        walden_stop
        init_walden_batched && walden_loaded=1
    fi
    if [[ $walden_loaded -eq 1 ]]; then
        run_phase walden "default cache" "$(walden_config default)"
        probe "after Walden default"
        w_quarter="$(quarter_mb walden)"
        run_phase walden "cache 1/4 of data" "$(walden_config quarter "$w_quarter")"
        probe "after Walden quarter"
    fi
    walden_stop
    # Free the disk before PostgreSQL loads (keep: the data stays for a look).
    [[ $keep -eq 1 ]] || rm -rf "$w_dir/data"
fi

if [[ $only != walden ]]; then
    log "initdb ($pg_user) and start PostgreSQL on 127.0.0.1:$pg_port"
    pg_create "shared_buffers = 128MB" || die "PostgreSQL did not start"
    pg_version="$(pg_psql -d walden -At -c "SELECT current_setting('server_version')")"
    if init_server pg; then
        run_phase pg "default cache"
        probe "after PostgreSQL default"
        pg_quarter="$(quarter_mb pg)"
        echo "shared_buffers = ${pg_quarter}MB" >>"$pg_dir/data/postgresql.conf"
        run_phase pg "cache 1/4 of data"
        probe "after PostgreSQL quarter"
    fi
fi

uptime_end="$(uptime)"
python3 - >>"$records" <<EOF
import json
print(json.dumps({"kind": "meta", "command": """$orig_cmd""", "date": "$start_date", "scale": $scale,
    "rows": $rows, "seconds": $seconds, "clients": $clients, "init_steps": "$init_steps",
    "host": "$(hostname) ($(nproc) CPUs, $(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo))",
    "uptime_start": "$uptime_start".strip(), "uptime_end": "$uptime_end".strip(),
    "disk": "$(IFS=';'; echo "${disk_states[*]}")",
    "walden": "$walden_info", "pg_version": "PostgreSQL $pg_version",
    "walden_settings": "DELAYED_DURABILITY = DISABLED; default walden.toml${txn_limit:+ with transaction_memory_limit_mb = $txn_limit}, then [storage] cache_size_mb = ${w_quarter:-?} (a quarter of the base store file); rss guard $rss_limit MB",
    "pg_settings": "synchronous_commit=on, fsync=on, wal_sync_method=fdatasync, full_page_writes=on; shared_buffers=128MB, then ${pg_quarter:-?}MB (a quarter of the database); max_wal_size and checkpoint_timeout default",
    "pgbench": "$(pgbench --version)",
    "tpcb": "pgbench -c $clients -j 2 -T $seconds -P 1 -l (simple protocol)"}))
EOF
echo
python3 "$py" summarize "$records" ${json:+--json "$json"}
