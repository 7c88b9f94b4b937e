#!/usr/bin/env python3
"""Helper for bench/pgbench-scale.sh.

Subcommands:
  sample KIND PID OUT LIMIT_MB
        every 0.2 s until killed or PID exits: resident memory of the server. KIND
        walden: VmRSS and VmHWM of PID; KIND pg: the sum of Pss (shared pages split
        between the processes sharing them) over the postmaster PID and its children.
        Rewrites OUT with "peak_kb last_kb aborted" after each sample. With
        LIMIT_MB > 0, a server whose resident memory passes it gets SIGKILL and
        OUT says aborted=1 (a guard for a shared machine).
  status PID            print "VmRSS_kb VmHWM_kb" of PID
  pgsum PID             print the summed Pss (kB) of PID and its children
  metric URL NAME       print the sum of a Prometheus counter's samples
  run DIR [KIND LOG]    the TPC-B run's figures from DIR/progress.log (pgbench -P 1)
                        and DIR/log/pgbench_log.* (pgbench -l), as JSON on stdout. With
                        the server's log (KIND walden or pg), each transaction over 50 ms
                        and each second below half the median is matched against the
                        checkpoints the log records (Walden's "checkpoint written" with
                        its total_ms; PostgreSQL's "checkpoint starting"/"complete",
                        log_checkpoints being on by default in 15) and, for Walden, its
                        "slow log flush" lines (a log sync of 40 ms or more: the disk's).
  summarize FILE [--json OUT]   the table from the JSON records in FILE
"""
import glob
import json
import os
import re
import signal
import statistics
import sys
import time
import urllib.request
from datetime import datetime, timezone


def status(pid):
    rss = hwm = 0
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1])
            elif line.startswith("VmHWM:"):
                hwm = int(line.split()[1])
    return rss, hwm


def children(pid):
    kids = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                data = f.read()
        except OSError:
            continue
        if int(data[data.rindex(")") + 2:].split()[1]) == pid:
            kids.append(int(name))
    return kids


def pss(pid):
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def pg_sum(pid):
    return pss(pid) + sum(pss(c) for c in children(pid))


def cmd_sample(kind, pid, out, limit_mb):
    pid, limit_kb = int(pid), int(limit_mb) * 1024
    peak = last = 0
    aborted = 0
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    while not stop:
        try:
            if kind == "walden":
                last, hwm = status(pid)
                peak = max(peak, hwm, last)
            else:
                last = pg_sum(pid)
                peak = max(peak, last)
        except OSError:
            break
        if limit_kb and last > limit_kb:
            os.kill(pid, signal.SIGKILL)
            aborted = 1
        tmp = out + ".tmp"
        with open(tmp, "w") as f:
            f.write(f"{peak} {last} {aborted}\n")
        os.replace(tmp, out)
        if aborted:
            break
        time.sleep(0.2)


def cmd_metric(url, name):
    total = 0.0
    with urllib.request.urlopen(url, timeout=10) as r:
        for line in r.read().decode().splitlines():
            if line.startswith(name + "{") or line.startswith(name + " "):
                total += float(line.rsplit(" ", 1)[1])
    print(int(total))


def _epoch(stamp):
    """Seconds since the epoch of a UTC log stamp (ISO 8601 with Z, or PostgreSQL's '%m ... UTC')."""
    stamp = stamp.replace("T", " ").rstrip("Z")
    fmt = "%Y-%m-%d %H:%M:%S.%f" if "." in stamp else "%Y-%m-%d %H:%M:%S"
    return datetime.strptime(stamp, fmt).replace(tzinfo=timezone.utc).timestamp()


def server_windows(kind, path):
    """(start, end, what) of the checkpoints (and Walden's slow log syncs) in a server log."""
    out = []
    if not path or not os.path.exists(path):
        return out
    ansi = re.compile(r"\x1b\[[0-9;]*m")
    started = None
    with open(path, errors="replace") as f:
        for line in f:
            line = ansi.sub("", line)
            if kind == "walden":
                m = re.match(r"(\S+Z) .*(checkpoint written|slow log flush).* total_ms=([\d.e-]+)", line)
                if m:
                    end = _epoch(m.group(1))
                    what = "checkpoint" if m.group(2) == "checkpoint written" else "slow log flush"
                    out.append((end - float(m.group(3)) / 1000, end, what))
            else:
                m = re.match(r"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?) UTC .*checkpoint (starting|complete)", line)
                if m and m.group(2) == "starting":
                    started = _epoch(m.group(1))
                elif m and started is not None:
                    out.append((started, _epoch(m.group(1)), "checkpoint"))
                    started = None
    return out


def overlaps(a0, a1, windows, what):
    return any(w0 < a1 and a0 < w1 for w0, w1, w in windows if w == what)


def cmd_run(d, kind=None, server_log=None):
    tps = []
    with open(os.path.join(d, "progress.log"), errors="replace") as f:
        for m in re.finditer(r"progress: ([\d.]+) s, ([\d.]+) tps", f.read()):
            tps.append((float(m.group(1)), float(m.group(2))))
    lat_us = []
    per_sec = {}
    # (start, end) in epoch seconds of each transaction, and of those over 50 ms.
    spans = []
    slow = []
    first = None
    for path in glob.glob(os.path.join(d, "log", "pgbench_log.*")):
        with open(path) as f:
            for line in f:
                p = line.split()
                if len(p) >= 6:
                    lat = int(p[2])
                    lat_us.append(lat)
                    s = int(p[4])
                    per_sec[s] = max(per_sec.get(s, 0), lat)
                    end = s + int(p[5]) / 1e6
                    first = end - lat / 1e6 if first is None else min(first, end - lat / 1e6)
                    spans.append((end - lat / 1e6, end))
                    if lat > 50_000:
                        slow.append((end - lat / 1e6, end))
    vals = [v for _, v in tps]
    median = statistics.median(vals) if vals else None
    worst = None
    if lat_us:
        s0 = min(per_sec)
        worst_s = max(per_sec, key=per_sec.get)
        worst = {"second": worst_s - s0, "latency_ms": per_sec[worst_s] / 1000}
    lat_sorted = sorted(lat_us)

    def pct(q):
        return lat_sorted[min(len(lat_sorted) - 1, int(q * len(lat_sorted)))] / 1000 if lat_sorted else None

    res = {
        "seconds": len(vals),
        "tps_per_second": vals,
        "tps_median": median,
        "tps_min": min(vals) if vals else None,
        "tps_min_second": (vals.index(min(vals)) + 1) if vals else None,
        "seconds_below_half_median": sum(1 for v in vals if median and v < median / 2),
        "seconds_below_half_median_at": [i + 1 for i, v in enumerate(vals) if median and v < median / 2],
        "transactions": len(lat_us),
        "latency_max_ms": (max(lat_us) / 1000) if lat_us else None,
        "latency_p99_ms": pct(0.99),
        "latency_p999_ms": pct(0.999),
        "transactions_over_50ms": sum(1 for x in lat_us if x > 50_000),
        "worst_latency_second": worst,
    }
    windows = server_windows(kind, server_log)
    if kind and first is not None:
        # pgbench's progress seconds count from its start, about the first transaction's.
        half = [i + 1 for i, v in enumerate(vals) if median and v < median / 2]
        ckpts = sorted((w0, w1) for w0, w1, w in windows if w == "checkpoint")
        during = [(a, b) for a, b in slow if overlaps(a, b, windows, "checkpoint")]
        longest_in = 0.0
        for a, b in spans:
            if b - a > longest_in and any(w0 < b and a < w1 for w0, w1 in ckpts):
                longest_in = b - a
        res["attribution"] = {
            "checkpoints_in_run": [
                {"start_s": round(w0 - first, 2), "end_s": round(w1 - first, 2)}
                for w0, w1, w in windows if w == "checkpoint" and w1 > first and w0 < first + len(vals) + 1],
            "over_50ms_during_checkpoint": len(during),
            "longest_during_checkpoint_ms": round(longest_in * 1000, 1),
            "over_50ms_outside_checkpoint": len(slow) - len(during),
            "over_50ms_with_slow_log_sync": sum(1 for a, b in slow if overlaps(a, b, windows, "slow log flush")),
            "slow_log_syncs_in_run": sum(1 for w0, w1, w in windows
                                         if w == "slow log flush" and w1 > first and w0 < first + len(vals) + 1),
            "seconds_below_half_during_checkpoint": [
                i for i in half if overlaps(first + i - 1, first + i, windows, "checkpoint")],
        }
    print(json.dumps(res))


def fnum(x, nd=0):
    return "-" if x is None else f"{x:,.{nd}f}"


def mb(kb):
    return None if kb is None else kb / 1024


def cmd_summarize(path, out_json=None):
    recs = [json.loads(line) for line in open(path) if line.strip()]
    meta = next((r for r in recs if r.get("kind") == "meta"), {})
    out = [f"pgbench scale {meta.get('scale')}: Walden ({meta.get('walden')}) vs {meta.get('pg_version')}",
           f"command: {meta.get('command')}",
           f"uptime at start: {meta.get('uptime_start')}",
           f"uptime at end:   {meta.get('uptime_end')}",
           f"disk (dd 4 KB oflag=dsync writes/s): {meta.get('disk')}",
           f"Walden: {meta.get('walden_settings')}",
           f"PostgreSQL: {meta.get('pg_settings')}",
           ""]
    for r in recs:
        if r.get("kind") == "init":
            name = r["server"] + (f" in {r['batched']} transactions" if r.get("batched") else "")
            out.append(f"init {name:<10} {fnum(r.get('init_s'), 1):>8} s  rows {fnum(r.get('rows'))}"
                       f"  peak RSS {fnum(mb(r.get('peak_kb')))} MB, steady {fnum(mb(r.get('steady_kb')))} MB"
                       f"  store {fnum(r.get('store_bytes', 0) / 2**20 if r.get('store_bytes') else None)} MB"
                       f" = {fnum(r.get('store_bytes_per_row'))} B/row"
                       + (f" ({fnum(r.get('store_allocated_bytes_per_row'))} allocated)"
                          if r.get("server") == "walden" and r.get("store_allocated_bytes_per_row") else "")
                       + (f" (pgbench_accounts with its index {fnum(r.get('table_bytes_per_row'))} B/row)" if r.get('table_bytes_per_row') else "")
                       + f"; directory {fnum(r.get('disk_bytes', 0) / 2**20 if r.get('disk_bytes') else None)} MB"
                       + (f"  ABORTED: {r['aborted']}" if r.get("aborted") else ""))
    out.append("")
    hdr = (f"{'phase':<22} {'server':<10} {'stop s':>7} {'start s':>8} {'RSS open':>9} {'RSS run':>8} {'peak':>7} "
           f"{'tps med':>8} {'min/s':>7} {'<half':>6} {'max lat ms':>10} {'>50ms':>6} {'ckpts':>6}")
    out.append(hdr)
    out.append("-" * len(hdr))
    for r in recs:
        if r.get("kind") != "run":
            continue
        run = r.get("run") or {}
        out.append(f"{r['phase']:<22} {r['server']:<10} {fnum(r.get('stop_s'), 2):>7} {fnum(r.get('start_s'), 2):>8} "
                   f"{fnum(mb(r.get('rss_open_kb'))):>9} {fnum(mb(r.get('rss_after_kb'))):>8} "
                   f"{fnum(mb(r.get('peak_kb'))):>7} {fnum(run.get('tps_median')):>8} {fnum(run.get('tps_min')):>7} "
                   f"{fnum(run.get('seconds_below_half_median')):>6} {fnum(run.get('latency_max_ms'), 1):>10} "
                   f"{fnum(run.get('transactions_over_50ms')):>6} {fnum(r.get('checkpoints')):>6}")
        notes = []
        if r.get("forced_checkpoint_s") is not None:
            notes.append(f"no checkpoint by mid-run: CHECKPOINT issued at {r['forced_checkpoint_at']} s, took {r['forced_checkpoint_s']:.2f} s")
        if run.get("seconds_below_half_median_at"):
            notes.append(f"seconds below half the median: {run['seconds_below_half_median_at']}")
        if run.get("worst_latency_second"):
            w = run["worst_latency_second"]
            notes.append(f"longest transaction in second {w['second']}; p99 {fnum(run.get('latency_p99_ms'), 1)} ms, "
                         f"p99.9 {fnum(run.get('latency_p999_ms'), 1)} ms")
        at = run.get("attribution")
        if at:
            spans = ", ".join(f"{c['start_s']:.1f}-{c['end_s']:.1f} s" for c in at["checkpoints_in_run"]) or "none logged"
            notes.append(f"checkpoints (server log): {spans}; over 50 ms during one: {at['over_50ms_during_checkpoint']}"
                         f" (longest {at['longest_during_checkpoint_ms']:.1f} ms), outside: {at['over_50ms_outside_checkpoint']}"
                         + (f"; with a slow log sync: {at['over_50ms_with_slow_log_sync']} ({at['slow_log_syncs_in_run']} slow syncs logged)"
                            if r["server"] == "walden" else "")
                         + f"; seconds below half during one: {at['seconds_below_half_during_checkpoint'] or 'none'}")
        if r.get("error"):
            notes.append(f"ERROR: {r['error']}")
        for n in notes:
            out.append(f"    {n}")
    print("\n".join(out))
    if out_json:
        with open(out_json, "w") as f:
            json.dump({"meta": meta, "records": recs, "table": "\n".join(out)}, f, indent=2)
        print(f"\nwrote {out_json}")


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    cmd, a = argv[1], argv[2:]
    if cmd == "sample":
        cmd_sample(*a[:4])
    elif cmd == "status":
        print(*status(int(a[0])))
    elif cmd == "pgsum":
        print(pg_sum(int(a[0])))
    elif cmd == "metric":
        cmd_metric(a[0], a[1])
    elif cmd == "run":
        cmd_run(*a[:3])
    elif cmd == "summarize":
        cmd_summarize(a[0], a[a.index("--json") + 1] if "--json" in a else None)
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
