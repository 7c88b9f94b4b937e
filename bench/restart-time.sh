#!/usr/bin/env bash
# How long a restart takes and how big the data files are: loads pgbench's
# tables (scale N) into Walden, checkpoints, runs TPC-B for a few seconds,
# then restarts the server twice: after a clean stop (SIGTERM) and after a
# SIGKILL (redo of the log since the last checkpoint). Prints, per binary
# and round, the seconds until the server answers again, the size of the
# data directory, and the server's resident memory (VmRSS) after the load
# and checkpoint, after the clean restart and after the TPC-B run that
# follows it. Interleaves the binaries given round by round. A "binary" may
# be a wrapper script that adds options (e.g. --config FILE). --index adds a
# secondary index on pgbench_accounts (bid) after the load (one entry per
# account), so the restart has index entries to load or not. --checkdb
# times `DBCC CHECKDB` (the data file read back at full speed) after the
# load. The TPC-B run after the clean restart overlaps the background check
# of the data file, unless the binary's config turns it off.
#
#   bash bench/restart-time.sh [--scale N] [--rounds N] [--index] [--checkdb] BINARY [BINARY...]
#
# Needs pgbench and psql (postgresql-client-15) and python3.
set -euo pipefail
scale=20 rounds=2 seconds=10 index=0 checkdb=0
bins=()
while [ $# -gt 0 ]; do
  case "$1" in
    --scale) scale=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --index) index=1; shift ;;
    --checkdb) checkdb=1; shift ;;
    -h|--help) sed -n 2,18p "$0"; exit 0 ;;
    *) bins+=("$1"); shift ;;
  esac
done
[ ${#bins[@]} -gt 0 ] || { echo "give at least one walden binary" >&2; exit 2; }
for t in pgbench psql python3; do
  command -v "$t" >/dev/null || { echo "$t is required" >&2; exit 3; }
done
scratch=$(mktemp -d "${TMPDIR:-/tmp}/restart.XXXXXX")
server=""
cleanup() { [ -n "$server" ] && kill -9 "$server" 2>/dev/null; wait 2>/dev/null; rm -rf "$scratch"; }
trap cleanup EXIT INT TERM
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
conn=(-h 127.0.0.1 -p "$port" -U walden)

rss() { # resident MB of the server (the walden process under a wrapper)
  local pid=$server c
  c=$(pgrep -P "$pid" walden 2>/dev/null | head -1 || true)
  [ -n "$c" ] && pid=$c
  awk '/VmRSS/ {printf "%d", $2/1024}' "/proc/$pid/status"
}

elapsed=""
start() { # binary; sets $server and $elapsed (seconds until it answers)
  local t0 t1
  t0=$(date +%s.%N)
  "$1" serve --data-dir "$data" --listen "127.0.0.1:$port" >>"$scratch/server.log" 2>&1 &
  server=$!
  for _ in $(seq 6000); do psql "${conn[@]}" -qAtc 'select 1' walden >/dev/null 2>&1 && break; sleep 0.05; done
  t1=$(date +%s.%N)
  elapsed=$(python3 -c "print(f'{$t1 - $t0:.2f}')")
}

for round in $(seq 1 "$rounds"); do
  for bin in "${bins[@]}"; do
    data="$scratch/data"; rm -rf "$data"
    start "$bin"
    pgbench "${conn[@]}" -i -q -s "$scale" -I dtGvp walden >"$scratch/init.log" 2>&1
    if [ "$index" = 1 ]; then
      psql "${conn[@]}" -qAtc "CREATE INDEX accounts_bid ON pgbench_accounts (bid)" walden >/dev/null
    fi
    psql "${conn[@]}" -qAtc "CHECKPOINT" walden >/dev/null
    rss_loaded=$(rss)
    check=""
    if [ "$checkdb" = 1 ]; then
      t0=$(date +%s.%N)
      if psql "${conn[@]}" -qAtc "DBCC CHECKDB WITH NO_INFOMSGS" walden >/dev/null 2>&1; then
        t1=$(date +%s.%N)
        check=$(python3 -c "print(f'; DBCC CHECKDB {$t1 - $t0:.2f} s')")
      else
        check="; DBCC CHECKDB failed or unknown to this build"
      fi
    fi
    pgbench "${conn[@]}" -n -c 4 -j 2 -T "$seconds" walden >/dev/null 2>&1
    kill "$server"; wait "$server" 2>/dev/null || true; server=""
    size=$(du -sm "$data" | cut -f1)
    start "$bin"; clean=$elapsed
    rss_open=$(rss)
    pgbench "${conn[@]}" -n -c 4 -j 2 -T "$seconds" walden >"$scratch/run.log" 2>&1
    rss_run=$(rss)
    tps=$(sed -n 's/^tps = \([0-9.]*\).*/\1/p' "$scratch/run.log" | head -1)
    kill -9 "$server"; wait "$server" 2>/dev/null || true; server=""
    start "$bin"; crashed=$elapsed
    rows=$(psql "${conn[@]}" -qAtc "select count(*) from pgbench_accounts" walden)
    kill "$server"; wait "$server" 2>/dev/null || true; server=""
    echo "$bin round $round: restart after a clean stop ${clean} s, after SIGKILL ${crashed} s; data directory ${size} MB; ${rows} accounts; RSS loaded ${rss_loaded} MB, reopened ${rss_open} MB, after TPC-B ${rss_run} MB (${tps} tps)${check}"
  done
done
