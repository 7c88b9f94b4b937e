#!/usr/bin/env bash
# How much a checkpoint stalls commits: TPC-B (pgbench, durable commits) against
# Walden while a CHECKPOINT runs every few seconds; prints, per binary and round,
# the transactions per second, the worst one-second interval, the longest
# transaction and how long each CHECKPOINT took. Interleaves the binaries given
# (e.g. a build before and after a change) round by round.
#
#   bash bench/checkpoint-stall.sh [--scale N] [--clients N] [--seconds N]
#        [--rounds N] [--every N] BINARY [BINARY...]
#
# Needs pgbench and psql (postgresql-client-15) and python3.
set -euo pipefail
scale=20 clients=8 seconds=30 rounds=2 every=8
bins=()
while [ $# -gt 0 ]; do
  case "$1" in
    --scale) scale=$2; shift 2 ;;
    --clients) clients=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --every) every=$2; shift 2 ;;
    -h|--help) sed -n 2,12p "$0"; exit 0 ;;
    *) bins+=("$1"); shift ;;
  esac
done
[ ${#bins[@]} -gt 0 ] || { echo "give at least one walden binary" >&2; exit 2; }
for t in pgbench psql python3; do
  command -v "$t" >/dev/null || { echo "$t is required" >&2; exit 3; }
done
scratch=$(mktemp -d "${TMPDIR:-/tmp}/ckpt-stall.XXXXXX")
server=""
cleanup() { [ -n "$server" ] && kill "$server" 2>/dev/null; wait 2>/dev/null; rm -rf "$scratch"; }
trap cleanup EXIT INT TERM
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
conn=(-h 127.0.0.1 -p "$port" -U walden)

for round in $(seq 1 "$rounds"); do
  for bin in "${bins[@]}"; do
    data="$scratch/data"; rm -rf "$data"
    "$bin" serve --data-dir "$data" --listen "127.0.0.1:$port" >"$scratch/server.log" 2>&1 &
    server=$!
    for _ in $(seq 100); do psql "${conn[@]}" -qAtc 'select 1' walden >/dev/null 2>&1 && break; sleep 0.1; done
    pgbench "${conn[@]}" -i -q -s "$scale" -I dtGvp walden >"$scratch/init.log" 2>&1
    psql "${conn[@]}" -qAtc "ALTER DATABASE walden SET DELAYED_DURABILITY = DISABLED" walden >/dev/null
    psql "${conn[@]}" -qAtc "CHECKPOINT" walden >/dev/null
    logs="$scratch/logs"; rm -rf "$logs"; mkdir -p "$logs"
    ( cd "$logs" && pgbench "${conn[@]}" -n -c "$clients" -j 2 -T "$seconds" -P 1 -l walden \
        >"$scratch/run.out" 2>"$scratch/progress.log" ) &
    bench=$!
    : >"$scratch/ckpt.log"
    sleep "$every"
    while kill -0 "$bench" 2>/dev/null; do
      t0=$(date +%s.%N)
      psql "${conn[@]}" -qAtc "CHECKPOINT" walden >/dev/null 2>&1 || true
      t1=$(date +%s.%N)
      echo "$t0 $t1" >>"$scratch/ckpt.log"
      sleep "$every"
    done
    wait "$bench"
    kill "$server"; wait "$server" 2>/dev/null || true; server=""
    python3 - "$bin" "$round" "$scratch" <<'EOF'
import glob, re, sys
binary, rnd, d = sys.argv[1], sys.argv[2], sys.argv[3]
tps = [float(m.group(1)) for m in re.finditer(r"progress: [\d.]+ s, ([\d.]+) tps", open(d + "/progress.log").read())]
lat = []
for f in glob.glob(d + "/logs/pgbench_log.*"):
    for line in open(f):
        p = line.split()
        if len(p) >= 3:
            lat.append(int(p[2]))
ck = [float(b) - float(a) for a, b in (l.split() for l in open(d + "/ckpt.log") if l.strip())]
mean = sum(tps[1:-1]) / max(1, len(tps) - 2)
print(f"{binary} round {rnd}: {mean:8.0f} tps, worst second {min(tps[1:-1] or [0]):7.0f} tps, "
      f"longest transaction {max(lat) / 1000:7.1f} ms, checkpoints {len(ck)} taking "
      + ", ".join(f"{c * 1000:.0f}" for c in ck) + " ms")
EOF
  done
done
