#!/usr/bin/env bash
# How much a checkpoint stalls commits: TPC-B (pgbench, durable commits) against
# Walden while a CHECKPOINT runs every few seconds; prints, per binary and round,
# the transactions per second, the worst one-second interval, the longest
# transaction and how long each CHECKPOINT took. Interleaves the binaries given
# (e.g. a build before and after a change) round by round. With --background
# no CHECKPOINT is sent: the server's own checkpointer runs every --every
# seconds (`[checkpoint] interval_s`), and its times come from its log.
#
#   bash bench/checkpoint-stall.sh [--scale N] [--clients N] [--seconds N]
#        [--rounds N] [--every N] [--background] [--keep DIR] BINARY [BINARY...]
#
# --keep DIR keeps each run's pgbench logs, server log and CHECKPOINT times.
# The word `postgres` in place of a binary runs PostgreSQL 15 (PG_BIN, default
# /usr/lib/postgresql/15/bin) on the same schedule, fsync and synchronous
# commit on (with --background: checkpoint_timeout = max(30 s, --every)).
# For Walden the count of "slow log flush" lines (a log sync of 40 ms or
# more) is printed too.
#
# Needs pgbench and psql (postgresql-client-15) and python3.
set -euo pipefail
scale=20 clients=8 seconds=30 rounds=2 every=8 background=0 keep=""
bins=()
while [ $# -gt 0 ]; do
  case "$1" in
    --scale) scale=$2; shift 2 ;;
    --clients) clients=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --every) every=$2; shift 2 ;;
    --background) background=1; shift ;;
    --keep) keep=$2; shift 2 ;;
    -h|--help) sed -n 2,14p "$0"; exit 0 ;;
    *) bins+=("$1"); shift ;;
  esac
done
[ ${#bins[@]} -gt 0 ] || { echo "give at least one walden binary" >&2; exit 2; }
for t in pgbench psql python3; do
  command -v "$t" >/dev/null || { echo "$t is required" >&2; exit 3; }
done
scratch=$(mktemp -d "${TMPDIR:-/tmp}/ckpt-stall.XXXXXX")
chmod 755 "$scratch"
server=""
# PostgreSQL, when asked for: bench/servers.sh's scratch cluster.
walden_bin=${bins[0]} pg_bin=${PG_BIN:-/usr/lib/postgresql/15/bin} bench_user=walden-bench
source "$(dirname "$0")/servers.sh"
srv_init
cleanup() {
  [ -n "$server" ] && kill "$server" 2>/dev/null
  [ "$pg_running" = 1 ] && pg_stop
  wait 2>/dev/null; rm -rf "$scratch"
}
trap cleanup EXIT INT TERM
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')

for round in $(seq 1 "$rounds"); do
  for bin in "${bins[@]}"; do
    data="$scratch/data"; rm -rf "$data"
    if [ "$bin" = postgres ]; then
      conn=(-h 127.0.0.1 -p "$pg_port" -U "$pg_user")
      rm -rf "$pg_dir/data"
      timeout=$(( every > 30 ? every : 30 ))
      pg_create "checkpoint_timeout = ${timeout}s
max_wal_size = 4GB"
      : >"$scratch/server.log"
    else
      conn=(-h 127.0.0.1 -p "$port" -U walden)
      cfg=()
      if [ "$background" = 1 ]; then
        printf '[checkpoint]\ninterval_s = %s\n' "$every" >"$scratch/walden.toml"
        cfg=(--config "$scratch/walden.toml")
      fi
      "$bin" serve --data-dir "$data" --listen "127.0.0.1:$port" "${cfg[@]}" >"$scratch/server.log" 2>&1 &
      server=$!
      for _ in $(seq 100); do psql "${conn[@]}" -qAtc 'select 1' walden >/dev/null 2>&1 && break; sleep 0.1; done
    fi
    pgbench "${conn[@]}" -i -q -s "$scale" -I dtGvp walden >"$scratch/init.log" 2>&1
    if [ "$bin" != postgres ]; then
      psql "${conn[@]}" -qAtc "ALTER DATABASE walden SET DELAYED_DURABILITY = DISABLED" walden >/dev/null
    fi
    psql "${conn[@]}" -qAtc "CHECKPOINT" walden >/dev/null
    logs="$scratch/logs"; rm -rf "$logs"; mkdir -p "$logs"
    ( cd "$logs" && pgbench "${conn[@]}" -n -c "$clients" -j 2 -T "$seconds" -P 1 -l walden \
        >"$scratch/run.out" 2>"$scratch/progress.log" ) &
    bench=$!
    : >"$scratch/ckpt.log"
    # From here on the server's log lines are this run's.
    start_line=$(wc -l <"$scratch/server.log")
    sleep "$every"
    while [ "$background" = 0 ] && kill -0 "$bench" 2>/dev/null; do
      t0=$(date +%s.%N)
      psql "${conn[@]}" -qAtc "CHECKPOINT" walden >/dev/null 2>&1 || true
      t1=$(date +%s.%N)
      echo "$t0 $t1" >>"$scratch/ckpt.log"
      sleep "$every"
    done
    wait "$bench"
    if [ "$bin" = postgres ]; then
      pg_stop
    else
      kill "$server"; wait "$server" 2>/dev/null || true; server=""
    fi
    if [ -n "$keep" ]; then
      mkdir -p "$keep/$round-$(basename "$bin")"
      cp -r "$scratch/logs" "$scratch/server.log" "$scratch/ckpt.log" "$scratch/progress.log" "$keep/$round-$(basename "$bin")/"
    fi
    python3 - "$bin" "$round" "$scratch" "$background" "$start_line" <<'EOF'
import glob, re, sys
binary, rnd, d, background, start = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] == "1", int(sys.argv[5])
tps = [float(m.group(1)) for m in re.finditer(r"progress: [\d.]+ s, ([\d.]+) tps", open(d + "/progress.log").read())]
# (end time in s since the epoch, latency in us) of every transaction.
lat = []
for f in glob.glob(d + "/logs/pgbench_log.*"):
    for line in open(f):
        p = line.split()
        if len(p) >= 6:
            lat.append((int(p[4]) + int(p[5]) / 1e6, int(p[2])))
from datetime import datetime
if background:
    # The background checkpointer's own account: each line's time stamp is
    # its end, total_ms its length.
    lines = open(d + "/server.log").read().splitlines()[start:]
    win = []
    for l in lines:
        m = re.search(r"total_ms=([\d.]+)", l)
        if "checkpoint written" in l and m:
            end = datetime.fromisoformat(l.split()[0].replace("Z", "+00:00")).timestamp()
            win.append((end - float(m.group(1)) / 1000, end))
else:
    win = [(float(a), float(b)) for a, b in (l.split() for l in open(d + "/ckpt.log") if l.strip())]
ck = [b - a for a, b in win]
def during(t, us):
    # A transaction that overlapped a checkpoint.
    return any(t - us / 1e6 < b and t > a for a, b in win)
slow = [(t, us) for t, us in lat if us > 50_000]
slow_in = sum(1 for t, us in slow if during(t, us))
us_sorted = sorted(us for _, us in lat) or [0]
p99 = us_sorted[int(len(us_sorted) * 0.99)]
mid = sorted(tps[1:-1]) or [0]
mean = sum(tps[1:-1]) / max(1, len(tps) - 2)
print(f"{binary} round {rnd}: {mean:8.0f} tps (median second {mid[len(mid) // 2]:.0f}), worst second {min(tps[1:-1] or [0]):7.0f} tps, "
      f"longest transaction {us_sorted[-1] / 1000:7.1f} ms, p99 {p99 / 1000:.1f} ms, "
      f"{len(slow)} over 50 ms ({slow_in} overlapping a checkpoint), "
      f"{'background ' if background else ''}checkpoints {len(ck)} taking "
      + ", ".join(f"{c * 1000:.0f}" for c in ck) + " ms")
flushes = [float(m.group(1)) for l in open(d + "/server.log").read().splitlines()[start:]
           if "slow log flush" in l for m in [re.search(r"total_ms=([\d.]+)", l)] if m]
if binary != "postgres":
    print(f"    slow log flushes (40 ms or more): {len(flushes)}"
          + (f", longest {max(flushes):.0f} ms" if flushes else ""))
# Where the slow transactions fell: each checkpoint's phases, rebuilt
# backwards from its log line's time stamp (its end) and durations.
phases = []
for l in open(d + "/server.log").read().splitlines()[start:]:
    if "checkpoint written" not in l:
        continue
    f = {k: float(v) for k, v in re.findall(r"(\w+)_ms=([\d.]+(?:e-?\d+)?)", l)}
    end = datetime.fromisoformat(l.split()[0].replace("Z", "+00:00")).timestamp()
    t = end
    for name in ("evict",):
        phases.append((name, t - f.get(name, 0) / 1000, t)); t -= f.get(name, 0) / 1000
    store = sum(f.get(k, 0) for k in ("write", "commit", "paused", "wait_log")) / 1000
    phases.append(("store", t - store, t)); t -= store
    phases.append(("prune", t - f.get("prune", 0) / 1000, t)); t -= f.get("prune", 0) / 1000
    phases.append(("cut", t - f.get("cut", 0) / 1000, t))
    print("    checkpoint phases (ms): " + ", ".join(
        f"{k} {f.get(k, 0):.0f}" for k in ("cut", "prune", "wait_log", "write", "commit", "paused", "evict")))
if phases:
    slow20 = [(t, us) for t, us in lat if us > 20_000]
    by = {}
    for t, us in slow20:
        hit = [n for n, a, b in phases if t - us / 1e6 < b and t > a] or ["none"]
        for n in set(hit):
            by[n] = by.get(n, 0) + 1
    print("    transactions over 20 ms by checkpoint phase they overlapped: "
          + ", ".join(f"{n} {c}" for n, c in sorted(by.items())) + f" (of {len(slow20)})")
EOF
  done
done
