# shellcheck shell=bash disable=SC2154
# Scratch PostgreSQL 15 and Walden servers for the bench scripts (sourced, not run).
#
# The caller sets, before `srv_init`:
#   scratch      a scratch directory (chmod 755; PostgreSQL's files live under it)
#   walden_bin   the Walden binary
#   pg_bin       the directory of initdb, pg_ctl and postgres
#   bench_user   the unprivileged user for initdb when run as root
# and gets:
#   pg_port w_port pg_user   ports and PostgreSQL's user name
#   pg_psql ARGS / w_psql ARGS   psql against the scratch database `walden`
#   pg_start / pg_stop, walden_start [CONFIG] / walden_stop   (pm_pid, walden_pid)
#   srv_cleanup              stops whatever is running (call from an EXIT trap)
# Both servers are reached over TCP on 127.0.0.1.

pg_dir="" w_dir="" pg_port="" w_port="" pg_user="" pm_pid="" walden_pid="" pg_running=0

as_pg() {
    if [[ $(id -u) -eq 0 ]]; then runuser -u "$bench_user" -- "$@"; else "$@"; fi
}

srv_log() { echo "[$(date +%H:%M:%S)] $*" >&2; }

srv_require() {
    local missing=() b
    for b in initdb pg_ctl postgres; do [[ -x "$pg_bin/$b" ]] || missing+=("$pg_bin/$b"); done
    for b in psql python3 "$@"; do command -v "$b" >/dev/null || missing+=("$b"); done
    if [[ ${#missing[@]} -gt 0 ]]; then
        echo "missing: ${missing[*]}" >&2
        echo "PostgreSQL 15: apt-get install -y postgresql-15 postgresql-client-15 (or set PG_BIN)" >&2
        exit 3
    fi
    [[ -x "$walden_bin" ]] || { echo "no Walden binary at $walden_bin; build it with: cargo build --release -p walden" >&2; exit 1; }
}

srv_init() {
    pg_dir="$scratch/pg" w_dir="$scratch/walden"
    mkdir -p "$pg_dir" "$w_dir"
    read -r pg_port w_port < <(python3 -c '
import socket
ss = [socket.socket() for _ in range(2)]
for s in ss: s.bind(("127.0.0.1", 0))
print(*[s.getsockname()[1] for s in ss])')
    if [[ $(id -u) -eq 0 ]]; then
        id "$bench_user" >/dev/null 2>&1 || useradd -m "$bench_user"
        chown "$bench_user" "$pg_dir"
        pg_user="$bench_user"
    else
        pg_user="$(id -un)"
    fi
}

# pg_create EXTRA_CONF: initdb and the settings every run shares, then EXTRA_CONF.
pg_create() {
    as_pg "$pg_bin/initdb" -D "$pg_dir/data" -U "$pg_user" --auth=trust -E UTF8 --no-sync \
        >"$pg_dir/initdb.log" 2>&1 || { cat "$pg_dir/initdb.log" >&2; return 1; }
    mkdir -p "$pg_dir/sock" && chown "$pg_user" "$pg_dir/sock"
    cat >>"$pg_dir/data/postgresql.conf" <<EOF

# bench/servers.sh
listen_addresses = '127.0.0.1'
port = $pg_port
unix_socket_directories = '$pg_dir/sock'
fsync = on
synchronous_commit = on
full_page_writes = on
wal_sync_method = fdatasync
max_connections = 50
$1
EOF
    pg_start
    pg_psql -d postgres -c "CREATE DATABASE walden" >/dev/null
}

pg_start() {
    as_pg "$pg_bin/pg_ctl" -D "$pg_dir/data" -l "$pg_dir/server.log" -w -t 600 start >/dev/null \
        || { tail -20 "$pg_dir/server.log" >&2; return 1; }
    pg_running=1
    pm_pid="$(head -1 "$pg_dir/data/postmaster.pid")"
}

pg_stop() {
    as_pg "$pg_bin/pg_ctl" -D "$pg_dir/data" -m fast -w -t 600 stop >/dev/null
    pg_running=0 pm_pid=""
}

pg_psql() { PGOPTIONS="" psql -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$pg_port" -U "$pg_user" "$@"; }
w_psql() { PGOPTIONS="" psql -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$w_port" -U walden "$@"; }

# walden_start [CONFIG]: starts `walden serve` on $w_dir/data and waits until it
# answers a query (600 s at most; redo after a crash can take a while).
walden_start() {
    local cfg_args=()
    [[ -n "${1:-}" ]] && cfg_args=(--config "$1")
    "$walden_bin" serve "${cfg_args[@]}" --data-dir "$w_dir/data" --listen "127.0.0.1:$w_port" \
        >>"$w_dir/stdout.log" 2>>"$w_dir/stderr.log" &
    walden_pid=$!
    local i
    for ((i = 0; i < 12000; i++)); do
        w_psql -d walden -At -c 'SELECT 1' >/dev/null 2>&1 && return 0
        kill -0 "$walden_pid" 2>/dev/null || { tail -5 "$w_dir/stderr.log" >&2; walden_pid=""; return 1; }
        sleep 0.05
    done
    echo "walden serve did not answer in 600 s" >&2
    return 1
}

walden_stop() {
    [[ -n "$walden_pid" ]] || return 0
    # The server may be gone already (killed by a guard): none of this may fail.
    kill -TERM "$walden_pid" 2>/dev/null || true
    local i
    for ((i = 0; i < 600; i++)); do kill -0 "$walden_pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$walden_pid" 2>/dev/null; then kill -KILL "$walden_pid" 2>/dev/null || true; fi
    wait "$walden_pid" 2>/dev/null || true
    walden_pid=""
}

srv_cleanup() {
    set +e
    [[ -n "$walden_pid" ]] && walden_stop
    if [[ $pg_running -eq 1 ]]; then
        as_pg "$pg_bin/pg_ctl" -D "$pg_dir/data" -m immediate -w -t 30 stop >/dev/null 2>&1 \
            || { [[ -n "$pm_pid" ]] && kill -KILL "$pm_pid" 2>/dev/null; }
        pg_running=0
    fi
}

# Walden's HEAD and binary, for the record.
walden_identity() {
    local repo="$1" c
    c="$(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo unknown)"
    [[ -n "$(git -C "$repo" status --porcelain --untracked-files=no -- crates Cargo.toml Cargo.lock 2>/dev/null)" ]] && c="$c+dirty"
    echo "HEAD $c; binary built $(stat -c '%y' "$walden_bin" | cut -d. -f1), sha256 $(sha256sum "$walden_bin" | cut -c1-12)"
}

# disk_probe FILE N: N 4 KB O_DSYNC appends; prints writes per second.
disk_probe() {
    local o secs
    o="$(dd if=/dev/zero of="$1" bs=4k count="$2" oflag=dsync 2>&1 | tail -1)"
    rm -f "$1"
    secs="$(awk -F', ' '{split($3, a, " "); print a[1]}' <<<"$o")"
    awk -v n="$2" -v s="$secs" 'BEGIN { if (s > 0) printf "%.0f", n / s; else print "nan" }'
}
